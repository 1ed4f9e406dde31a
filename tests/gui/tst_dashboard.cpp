#include "DashboardWindow.h"
#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"

#include <QApplication>
#include <QFile>
#include <QIcon>
#include <QLabel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTranslator>

using namespace sy;

// The first dashboard shows live data from the store: what another connection writes appears within the
// refresh interval, without restarting the window.
class TestDashboard : public QObject
{
    Q_OBJECT
private slots:
    void showsAccountsAndRequestsAsTheyAppear()
    {
        QTemporaryDir dir;
        const QString path = dir.path() + QStringLiteral("/switchyard.sqlite");
        Database writer;
        QString error;
        QVERIFY2(writer.open(path, &error), qPrintable(error));

        ui::DashboardWindow window(path);
        window.show();
        auto *accounts = window.findChild<QTableWidget *>(QStringLiteral("accountsTable"));
        auto *requests = window.findChild<QTableWidget *>(QStringLiteral("requestsTable"));
        QVERIFY(accounts && requests);
        QCOMPARE(accounts->rowCount(), 0);

        AccountRepository::Identity identity;
        identity.chatgptAccountId = QStringLiteral("cgpt-1");
        identity.userId = QStringLiteral("user-1");
        identity.email = QStringLiteral("one@example.test");
        identity.plan = QStringLiteral("pro");
        identity.alias = QStringLiteral("work");
        const auto upserted = AccountRepository(writer).upsert(identity, &error);
        QVERIFY2(upserted, qPrintable(error));
        QTRY_COMPARE_WITH_TIMEOUT(accounts->rowCount(), 1, 5000);
        QCOMPARE(accounts->item(0, 0)->text(), QStringLiteral("work"));
        QCOMPARE(accounts->item(0, 2)->text(), QStringLiteral("pro"));

        RequestLogRecord row;
        row.requestId = QStringLiteral("req_dashboardtest");
        row.startedAtMs = QDateTime::currentMSecsSinceEpoch();
        row.route = QStringLiteral("/v1/responses");
        row.status = QStringLiteral("completed");
        row.accountId = upserted->id;
        row.accountAlias = QStringLiteral("work");
        row.tokens.total = 42;
        QVERIFY2(RequestLogRepository(writer).insert(row, &error), qPrintable(error));
        QTRY_COMPARE_WITH_TIMEOUT(requests->rowCount(), 1, 5000);
        QCOMPARE(requests->item(0, 1)->text(), QStringLiteral("req_dashboardtest"));
        QCOMPARE(requests->item(0, 3)->text(), QStringLiteral("work"));
        QCOMPARE(requests->item(0, 6)->text(), QStringLiteral("42"));
    }

    void embeddedChineseTranslationApplies()
    {
        QTranslator translator;
        QVERIFY(translator.load(QStringLiteral(":/i18n/switchyard_zh_CN.qm")));
        QApplication::installTranslator(&translator);
        QTemporaryDir dir;
        ui::DashboardWindow window(dir.path() + QStringLiteral("/missing.sqlite"));
        auto *accounts = window.findChild<QTableWidget *>(QStringLiteral("accountsTable"));
        QVERIFY(accounts);
        QCOMPARE(accounts->horizontalHeaderItem(0)->text(), QStringLiteral("账户"));
        QApplication::removeTranslator(&translator);
    }

    void iconResourceIsEmbedded()
    {
        QVERIFY(QFile::exists(QStringLiteral(":/icons/switchyard.svg")));
        QVERIFY(!QIcon(QStringLiteral(":/icons/switchyard.svg")).pixmap(32, 32).isNull());
    }
};

QTEST_MAIN(TestDashboard)
#include "tst_dashboard.moc"
