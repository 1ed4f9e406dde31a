// `cmake --build <dir> --target screenshots`: fills a throwaway store with a plausible week of traffic, opens
// the dashboard offscreen and saves each page as PNG into the directory given as the only argument
// (docs/screenshots/ by the target). The live page is fed a status document like the running proxy's.
#include "DashboardWindow.h"
#include "apikeys/ApiKeyAdmin.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "models/RequestsModel.h"
#include "pages/LivePage.h"
#include "pages/RequestsPage.h"
#include "pages/UsagePage.h"
#include "store/AccountRepository.h"
#include "store/ApiKeyRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "store/SettingsRepository.h"
#include "tray/AccountOnboarding.h"

#include <QApplication>
#include <QDir>
#include <QJsonArray>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;
using namespace sy::ui;

namespace {

constexpr qint64 kHour = 3600 * 1000;

struct Demo
{
    QString id;
    QString alias;
    QString email;
    QString plan;
};

bool fill(Database &db, QList<Demo> &accounts, qint64 now)
{
    QString error;
    AccountRepository repo(db);
    for (Demo &d : accounts) {
        AccountRepository::Identity identity;
        identity.chatgptAccountId = QStringLiteral("cgpt-") + d.alias;
        identity.userId = QStringLiteral("user-") + d.alias;
        identity.email = d.email;
        identity.plan = d.plan;
        identity.alias = d.alias;
        identity.tokenExpiresAtMs = now + 9 * 24 * kHour;
        const auto r = repo.upsert(identity, &error);
        if (!r)
            return false;
        d.id = r->id;
    }
    QRandomGenerator rng(42);
    // Quota observations every 10 minutes over the last day, with a 5 h reset along the way.
    for (int a = 0; a < accounts.size(); ++a) {
        for (qint64 t = now - 24 * kHour; t <= now; t += 10 * 60000) {
            const qint64 windowStart = now - 24 * kHour + ((t - (now - 24 * kHour)) / (5 * kHour)) * 5 * kHour;
            UsageRecord u;
            u.accountId = accounts.at(a).id;
            u.primary = {qMin(100.0, (t - windowStart) / double(5 * kHour) * (40 + 25 * a)), 300,
                         windowStart + 5 * kHour};
            u.secondary = {15 + 20 * a + (t - (now - 24 * kHour)) / double(24 * kHour) * 10, 10080,
                           now + (3 + a) * 24 * kHour};
            u.observedAtMs = t;
            if (!repo.saveUsage(u, &error))
                return false;
        }
    }
    if (!repo.setStatus(accounts.at(2).id, QStringLiteral("rate_limited"), QStringLiteral("usage_limit_reached"),
                        &error) ||
        !SettingsRepository(db).setPin(accounts.at(0).id, false, &error))
        return false;
    RequestLogRepository log(db);
    Transaction tx(db);
    if (!tx.begin(&error))
        return false;
    int n = 0;
    QStringList recent; // the last requests, booked to the CI key below
    for (qint64 t = now - 30 * 24 * kHour; t < now; t += 20 * 60000 + qint64(rng.bounded(20 * 60000))) {
        const Demo &d = accounts.at(rng.bounded(int(accounts.size())));
        RequestLogRecord r;
        r.requestId = QStringLiteral("req_%1").arg(QString::number(rng.generate64(), 16).left(24));
        r.startedAtMs = t;
        r.route =
            rng.bounded(3) == 0 ? QStringLiteral("/v1/responses") : QStringLiteral("/backend-api/codex/responses");
        r.model = rng.bounded(4) == 0 ? QStringLiteral("gpt-5") : QStringLiteral("gpt-5-codex");
        r.accountId = d.id;
        r.accountAlias = d.alias;
        const bool failed = rng.bounded(25) == 0;
        r.status = failed ? QStringLiteral("failed") : QStringLiteral("completed");
        if (++n % 9 == 0) {
            r.attempts = {{accounts.at(2).id, std::nullopt, QStringLiteral("rate_limited"), 210},
                          {d.id, std::nullopt, r.status, 4200}};
            r.blockedBy = {accounts.at(1).id + QStringLiteral(":cooldown")};
        } else {
            r.attempts = {{d.id, std::nullopt, r.status, 3000 + qint64(rng.bounded(9000))}};
        }
        const qint64 input = 2000 + rng.bounded(30000);
        r.tokens = {input, input / 3 * 2, 300 + qint64(rng.bounded(3000)), qint64(rng.bounded(800)), 0};
        r.tokens.total = *r.tokens.input + *r.tokens.output;
        r.latency = {0, 40 + qint64(rng.bounded(60)), 600 + qint64(rng.bounded(2000)),
                     3000 + qint64(rng.bounded(20000))};
        if (!log.insert(r, &error))
            return false;
        if (t > now - 20 * kHour)
            recent << r.requestId;
    }
    // API keys: a laptop's, CI's with a daily token limit (it made the last requests), and a revoked one.
    const auto issue = [&](const ApiKeyRequest &request, qint64 at) {
        std::optional<IssuedApiKey> k = issueApiKey(db, request, at, &error);
        if (k)
            wipeSecret(k->secret);
        return k ? k->record.id : QString();
    };
    const QString laptop = issue({QStringLiteral("laptop"), {}, {}, {}}, now - 12 * 24 * kHour);
    const QString ci =
        issue({QStringLiteral("ci"), QStringLiteral("90"), QStringLiteral("2000000"), QStringLiteral("1d")},
              now - 5 * 24 * kHour);
    const QString old = issue({QStringLiteral("old-desktop"), {}, {}, {}}, now - 28 * 24 * kHour);
    if (laptop.isEmpty() || ci.isEmpty() || old.isEmpty() ||
        !ApiKeyRepository(db).revoke(old, now - 2 * kHour, &error) ||
        !ApiKeyRepository(db).recordUse(laptop, {}, now - 3 * kHour, &error))
        return false;
    for (const QString &id : std::as_const(recent))
        if (!ApiKeyRepository(db).recordUse(ci, id, now - 10 * 60000, &error))
            return false;
    return tx.commit(&error);
}

QJsonObject liveStatus(const QList<Demo> &accounts, qint64 now)
{
    const auto iso = [](qint64 ms) { return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC).toString(Qt::ISODateWithMs); };
    const QJsonArray turns{
        QJsonObject{{QStringLiteral("request_id"), QStringLiteral("req_5f0c2a9e11d4b07a3c8e6f21")},
                    {QStringLiteral("route"), QStringLiteral("/backend-api/codex/responses")},
                    {QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                    {QStringLiteral("stage"), QStringLiteral("streaming")},
                    {QStringLiteral("account_id"), accounts.at(0).id},
                    {QStringLiteral("account_alias"), accounts.at(0).alias},
                    {QStringLiteral("elapsed_ms"), 48200},
                    {QStringLiteral("next_deadline"), QStringLiteral("stream_idle")},
                    {QStringLiteral("remaining_ms"),
                     QJsonObject{{QStringLiteral("stream_idle"), 297400}, {QStringLiteral("stream_max"), 7151800}}},
                    {QStringLiteral("attempts"), 1}},
        QJsonObject{{QStringLiteral("request_id"), QStringLiteral("req_9a71e0c4d2b35f8e6a1c0d77")},
                    {QStringLiteral("route"), QStringLiteral("/v1/responses")},
                    {QStringLiteral("model"), QStringLiteral("gpt-5")},
                    {QStringLiteral("stage"), QStringLiteral("pre_response")},
                    {QStringLiteral("account_id"), accounts.at(1).id},
                    {QStringLiteral("account_alias"), accounts.at(1).alias},
                    {QStringLiteral("elapsed_ms"), 2300},
                    {QStringLiteral("next_deadline"), QStringLiteral("pre_response")},
                    {QStringLiteral("remaining_ms"),
                     QJsonObject{{QStringLiteral("pre_response"), 57900}, {QStringLiteral("request_total"), 597700}}},
                    {QStringLiteral("attempts"), 1}},
    };
    QJsonArray slotRows;
    for (int a = 0; a < 2; ++a) {
        for (int s = 0; s < 4; ++s) {
            const bool held = s == 0;
            slotRows.append(QJsonObject{
                {QStringLiteral("account_id"), accounts.at(a).id},
                {QStringLiteral("slot"), s},
                {QStringLiteral("epoch"), 40 + 7 * a + s},
                {QStringLiteral("owner_replica"), held ? QJsonValue(QStringLiteral("laptop-7f3a")) : QJsonValue()},
                {QStringLiteral("lease_expires_at"), held ? QJsonValue(iso(now + 41000)) : QJsonValue()},
                {QStringLiteral("state"), held ? QStringLiteral("held") : QStringLiteral("free")}});
        }
    }
    QJsonArray known;
    for (const Demo &d : accounts)
        known.append(QJsonObject{{QStringLiteral("account_id"), d.id}, {QStringLiteral("account_alias"), d.alias}});
    return {{QStringLiteral("listen"), QStringLiteral("127.0.0.1:2455")},
            {QStringLiteral("accounts"), known},
            {QStringLiteral("version"), QStringLiteral(SWITCHYARD_VERSION)},
            {QStringLiteral("store_writable"), true},
            {QStringLiteral("in_flight"), turns},
            {QStringLiteral("slots"), slotRows},
            {QStringLiteral("replica"), QJsonObject{{QStringLiteral("replica_id"), QStringLiteral("laptop-7f3a")},
                                                    {QStringLiteral("incarnation"), 3}}}};
}

} // namespace

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
        return 2;
    }
    const QString out = QString::fromLocal8Bit(argv[1]);
    QDir().mkpath(out);
    QTemporaryDir dir;
    const QString path = dir.path() + QStringLiteral("/switchyard.sqlite");
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    QList<Demo> accounts = {
        {{}, QStringLiteral("work"), QStringLiteral("dev@company.example"), QStringLiteral("pro")},
        {{}, QStringLiteral("personal"), QStringLiteral("me@mail.example"), QStringLiteral("plus")},
        {{}, QStringLiteral("team"), QStringLiteral("team@company.example"), QStringLiteral("team")}};
    {
        Database db;
        QString error;
        if (!db.open(path, &error) || !fill(db, accounts, now)) {
            fprintf(stderr, "cannot build the demo store: %s\n", qPrintable(error));
            return 1;
        }
    }
    StoreClient store(path);
    StatusPoller status; // never started: the live page gets a fixed document
    AccountOnboarding onboarding(&store, QUrl(QStringLiteral("http://127.0.0.1:9")));
    QHash<QString, QString> env{{QStringLiteral("HOME"), dir.path()}};
    DashboardWindow window(&store, &status, &onboarding, QString(), env);
    window.resize(1180, 760);
    window.show();
    QSignalSpy snapshots(&store, &StoreClient::snapshotChanged);
    store.start();
    if (!snapshots.wait(10000))
        return 1;
    window.pages().live->showStatus(liveStatus(accounts, now));

    QTabWidget *tabs = window.tabs();
    const QStringList names = {QStringLiteral("overview"), QStringLiteral("accounts"), QStringLiteral("live"),
                               QStringLiteral("usage"),    QStringLiteral("requests"), QStringLiteral("apikeys"),
                               QStringLiteral("settings")};
    for (int i = 0; i < tabs->count(); ++i) {
        tabs->setCurrentIndex(i);
        QWidget *page = tabs->widget(i);
        if (page == window.pages().usage) {
            QSignalSpy shown(window.pages().usage, &UsagePage::seriesShown);
            window.pages().usage->setRange(UsageRange::Week);
            if (!shown.wait(10000))
                fprintf(stderr, "the usage charts did not load\n");
        } else if (page == window.pages().requests) {
            RequestsModel *model = window.pages().requests->model();
            if (!QTest::qWaitFor([model] { return model->rowCount() > 0 && !model->isLoading(); }, 10000))
                fprintf(stderr, "the request log did not load\n");
            for (int row = 0; row < model->rowCount(); ++row) {
                if (model->record(row).attempts.size() > 1) {
                    window.pages().requests->view()->selectRow(row);
                    break;
                }
            }
        }
        QTest::qWait(200); // let the page lay itself out before grabbing
        const QString file = out + QStringLiteral("/%1.png").arg(names.value(i, QString::number(i)));
        if (!window.grab().save(file)) {
            fprintf(stderr, "cannot save %s\n", qPrintable(file));
            return 1;
        }
        printf("%s\n", qPrintable(file));
    }
    return 0;
}
