#include "CliSupport.h"
#include "Commands.h"
#include "accounts/SecretStore.h"
#include "accounts/SecretStoreFactory.h"
#include "health/HealthCheck.h"
#include "store/Database.h"
#include "store/DatabaseLocation.h"

#include <QEventLoop>
#include <QFileInfo>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <memory>

namespace sy::app {

namespace {

// A full disk or a read-only file still reads fine, so the read-only check below cannot see it: the running
// instance (if any) says whether its store takes writes. Empty when none answers or its store is writable.
QString runningInstanceStoreProblem(const Config &config)
{
    QNetworkAccessManager nam;
    QNetworkRequest request{QUrl(localApiBase(config) + QStringLiteral("/api/status"))};
    request.setTransferTimeout(3000);
    QNetworkReply *reply = nam.get(request);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    loop.exec();
    reply->deleteLater();
    if (reply->error() != QNetworkReply::NoError)
        return {};
    const QJsonObject status = QJsonDocument::fromJson(reply->readAll()).object();
    if (!status.contains(QLatin1String("store_writable")) || status.value(QLatin1String("store_writable")).toBool())
        return {};
    const QString problem = status.value(QLatin1String("store_problem")).toString();
    return problem.isEmpty() ? QStringLiteral("not writable") : problem;
}

} // namespace

// `switchyard health [--json]`: exit 0 when every criterion holds, 2 when one fails or a fact is
// unavailable (an invalid configuration never gets here: main() exits 3 first).
int runHealth(const Config &config, const CommandLine &cl)
{
    if (cl.words.size() > 1)
        return fail(QStringLiteral("health takes no arguments (use --json)"));
    std::unique_ptr<Database> db;
    QString storeProblem;
    // A PostgreSQL database is always asked; a SQLite file only when it exists (never created by a check).
    if (config.usesPostgres() || QFileInfo::exists(config.databaseLocation())) {
        db = std::make_unique<Database>();
        if (!db->open(config.databaseLocation(), &storeProblem, Database::OpenMode::ReadOnly))
            db.reset();
    } else {
        storeProblem = QStringLiteral("no database at %1 yet").arg(redactDatabaseLocation(config.databaseLocation()));
    }
    // The keychain is asked only when a proxy's credentials live there.
    std::unique_ptr<SecretStore> secrets;
    for (const EgressProxySpec &p : config.egress.proxies) {
        if (p.hasCredentials && !secrets) {
            QString error;
            secrets.reset(makeSecretStore(config, &error));
        }
    }
    const HealthReport report =
        runHealthCheck(config, db.get(), storeProblem, secrets.get(), runningInstanceStoreProblem(config));
    if (cl.json)
        printJson(QJsonDocument(report.toJson()));
    else
        out(report.toText());
    return report.exitCode();
}

} // namespace sy::app
