#include "CliSupport.h"
#include "Commands.h"
#include "ProxyHost.h"

#include "config/ClientConfigFiles.h"
#include "config/ClientConfigText.h"
#include "store/AccountRepository.h"
#include "store/RequestLogRepository.h"
#include "store/UsageTotals.h"
#include "util/Ids.h"

#include <QDateTime>
#include <QEventLoop>
#include <QFile>
#include <QJsonDocument>
#include <QJsonArray>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QTimer>

namespace sy::app {

namespace {

QString numberText(const QJsonValue &v)
{
    return v.isNull() || v.isUndefined() ? QStringLiteral("-") : QString::number(v.toDouble(), 'f', 0);
}


} // namespace

QString localApiBase(const Config &config)
{
    // The running instance says where it listens (it may have been started with --listen).
    QFile instance(ProxyHost::instanceFilePath(config));
    if (instance.open(QIODevice::ReadOnly)) {
        const QString api = QJsonDocument::fromJson(instance.readAll()).object().value(QLatin1String("api")).toString();
        if (api.startsWith(QLatin1String("http://")))
            return api;
    }
    return localBaseUrl(config.listenAddress, config.listenPort);
}

int runRequests(const Config &config, const CommandLine &cl)
{
    if (cl.words.size() > 1)
        return fail(QStringLiteral("requests takes no arguments (use --limit N, --json)"));
    auto db = openDatabase(config, false);
    if (!db)
        return ExitFailure;
    QString error;
    const QList<RequestLogRecord> rows = RequestLogRepository(*db).recent(cl.limit, &error);
    if (!error.isEmpty())
        return fail(error);
    const QJsonArray json = RequestLogRepository::toJson(rows);
    if (cl.json) {
        printJson(QJsonDocument(json));
        return ExitOk;
    }
    out(padded(QStringLiteral("STARTED"), 24) + padded(QStringLiteral("REQUEST"), 28) + padded(QStringLiteral("ROUTE"), 30) +
        padded(QStringLiteral("ACCOUNT"), 16) + padded(QStringLiteral("STATUS"), 22) + padded(QStringLiteral("MS"), 7) +
        QStringLiteral("TOKENS"));
    for (const QJsonValue &v : json) {
        const QJsonObject o = v.toObject();
        QString status = o.value(QLatin1String("status")).toString();
        if (!o.value(QLatin1String("kill_stage")).isNull())
            status += QLatin1Char('/') + o.value(QLatin1String("kill_stage")).toString();
        else if (!o.value(QLatin1String("error_code")).isNull())
            status += QLatin1Char('/') + o.value(QLatin1String("error_code")).toString();
        const QString account = o.value(QLatin1String("account_alias")).isString()
                                    ? o.value(QLatin1String("account_alias")).toString()
                                    : (o.value(QLatin1String("account_id")).isString()
                                           ? o.value(QLatin1String("account_id")).toString()
                                           : QStringLiteral("-"));
        out(padded(o.value(QLatin1String("started_at")).toString(), 24) +
            padded(o.value(QLatin1String("request_id")).toString(), 28) +
            padded(o.value(QLatin1String("route")).toString(), 30) + padded(account, 16) + padded(status, 22) +
            padded(numberText(o.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("total"))), 7) +
            numberText(o.value(QLatin1String("tokens")).toObject().value(QLatin1String("total"))));
    }
    return ExitOk;
}

int runUsage(const Config &config, const CommandLine &cl)
{
    if (cl.words.size() > 1)
        return fail(QStringLiteral("usage takes no arguments"));
    auto db = openDatabase(config, false);
    if (!db)
        return ExitFailure;
    AccountRepository repo(*db);
    QString error;
    const QList<AccountRecord> accounts = repo.list(&error);
    if (!error.isEmpty())
        return fail(error);
    QHash<QString, UsageRecord> usage;
    for (const UsageRecord &u : repo.loadAllUsage())
        usage.insert(u.accountId, u);
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const auto day = tokenTotalsByAccount(*db, now - 24LL * 3600 * 1000, &error);
    const auto all = tokenTotalsByAccount(*db, 0, &error);
    if (!error.isEmpty())
        return fail(error);
    auto totalsJson = [](const TokenTotals &t) {
        return QJsonObject{{QStringLiteral("requests"), t.requests}, {QStringLiteral("input"), t.input},
                           {QStringLiteral("cached"), t.cached},     {QStringLiteral("output"), t.output},
                           {QStringLiteral("reasoning"), t.reasoning}, {QStringLiteral("total"), t.total}};
    };
    QJsonArray arr;
    for (const AccountRecord &a : accounts) {
        const UsageRecord u = usage.value(a.id);
        arr.append(QJsonObject{
            {QStringLiteral("account_id"), a.id},
            {QStringLiteral("account_alias"), a.alias ? QJsonValue(*a.alias) : QJsonValue()},
            {QStringLiteral("plan"), a.plan.isEmpty() ? QJsonValue() : QJsonValue(a.plan)},
            {QStringLiteral("status"), a.status},
            {QStringLiteral("primary_window"), usageWindowJson(u.primary)},
            {QStringLiteral("secondary_window"), usageWindowJson(u.secondary)},
            {QStringLiteral("observed_at"), u.observedAtMs > 0 ? QJsonValue(isoUtc(u.observedAtMs)) : QJsonValue()},
            {QStringLiteral("tokens_24h"), totalsJson(day.value(a.id))},
            {QStringLiteral("tokens_all_time"), totalsJson(all.value(a.id))},
        });
    }
    if (cl.json) {
        printJson(QJsonDocument(arr));
        return ExitOk;
    }
    out(padded(QStringLiteral("ACCOUNT"), 18) + padded(QStringLiteral("5H USED"), 8) + padded(QStringLiteral("5H RESET"), 25) +
        padded(QStringLiteral("WEEK USED"), 10) + padded(QStringLiteral("WEEK RESET"), 25) +
        padded(QStringLiteral("REQ 24H"), 8) + QStringLiteral("TOKENS 24H"));
    for (const AccountRecord &a : accounts) {
        const UsageRecord u = usage.value(a.id);
        out(padded(a.displayName(), 18) + padded(percentText(u.primary.usedPercent), 8) +
            padded(timeText(u.primary.resetAtMs), 25) + padded(percentText(u.secondary.usedPercent), 10) +
            padded(timeText(u.secondary.resetAtMs), 25) + padded(QString::number(day.value(a.id).requests), 8) +
            QString::number(day.value(a.id).total));
    }
    return ExitOk;
}

namespace {

// Where the proxy's own time went since the start (/api/status turn_stages, api/TurnStages.h): one line for
// streamed turns, and one for non-streaming turns once there are any (their answer waits for the settlement).
QStringList turnStagesLines(const QJsonObject &turnStages)
{
    const QJsonObject stages = turnStages.value(QLatin1String("stages")).toObject();
    const auto stage = [&](const char *name) { return stages.value(QLatin1String(name)).toObject(); };
    const auto ms = [](const QJsonObject &o, const char *key) {
        return QString::number(double(o.value(QLatin1String(key)).toInteger()) / 1000.0, 'f', 2);
    };
    QStringList lines;
    const QJsonObject added = stage("added_before_first_byte");
    const qint64 n = added.value(QLatin1String("count")).toInteger();
    if (n == 0)
        lines << QStringLiteral("proxy time before the first byte: no clean streamed turn yet");
    else
        lines << QStringLiteral("proxy time before the first byte over %1 clean streamed turn(s): p50 %2 ms, p99 %3 "
                                "ms (slot claim p50 %4 ms); upstream to its head p50 %5 ms")
                     .arg(n)
                     .arg(ms(added, "p50_us"), ms(added, "p99_us"), ms(stage("claim"), "p50_us"),
                          ms(stage("upstream_head"), "p50_us"));
    const QJsonObject answer = stage("added_before_answer");
    if (const qint64 m = answer.value(QLatin1String("count")).toInteger(); m > 0)
        lines << QStringLiteral("proxy time before a non-streaming answer over %1 clean turn(s): p50 %2 ms, p99 %3 ms "
                                "(settlement p50 %4 ms)")
                     .arg(m)
                     .arg(ms(answer, "p50_us"), ms(answer, "p99_us"), ms(stage("settle"), "p50_us"));
    return lines;
}

} // namespace

int runStatus(const Config &config, const CommandLine &cl)
{
    if (cl.words.size() > 1)
        return fail(QStringLiteral("status takes no arguments"));
    const QString url = localApiBase(config) + QStringLiteral("/api/status");
    QNetworkAccessManager nam;
    QNetworkRequest request{QUrl(url)};
    request.setTransferTimeout(5000);
    QNetworkReply *reply = nam.get(request);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    loop.exec();
    reply->deleteLater();
    if (reply->error() != QNetworkReply::NoError)
        return fail(QStringLiteral("no running Switchyard answered at %1 (%2)").arg(url, reply->errorString()));
    const QJsonObject status = QJsonDocument::fromJson(reply->readAll()).object();
    if (cl.json) {
        printJson(QJsonDocument(status));
        return ExitOk;
    }
    out(QStringLiteral("Switchyard %1 on %2, strategy %3, pin %4%5")
            .arg(status.value(QLatin1String("version")).toString(), status.value(QLatin1String("listen")).toString(),
                 status.value(QLatin1String("strategy")).toString(),
                 status.value(QLatin1String("pinned_account_id")).toString(QStringLiteral("auto")),
                 status.value(QLatin1String("store_writable")).toBool()
                     ? QString()
                     : QStringLiteral("\nstore unavailable: %1 - new requests get 503 store_unavailable until it is "
                                      "writable again (checked every second)")
                           .arg(status.value(QLatin1String("store_problem")).toString())));
    if (const int pending = status.value(QLatin1String("store_pending_writes")).toInt())
        out(QStringLiteral("%1 request-log rows of finished turns wait in memory for the store").arg(pending));
    if (const qint64 lost = status.value(QLatin1String("store_lost_writes")).toInteger())
        out(QStringLiteral("%1 request-log rows were lost to the store outage (see the log)").arg(lost));
    // A configuration edit the instance could not use, or one that waits for a restart, must not go unnoticed.
    const QJsonObject configState = status.value(QLatin1String("config")).toObject();
    const QString configError = configState.value(QLatin1String("error")).toString();
    if (!configError.isEmpty())
        out(QStringLiteral("CONFIGURATION NOT APPLIED (the last good one stays in force): ") + configError);
    QStringList restartKeys;
    for (const QJsonValue &v : configState.value(QLatin1String("restart_required")).toArray())
        restartKeys << v.toString();
    if (!restartKeys.isEmpty())
        out(QStringLiteral("changed in the configuration file, applies after a restart: ") +
            restartKeys.join(QStringLiteral(", ")));
    for (const QJsonValue &v : status.value(QLatin1String("accounts")).toArray()) {
        const QJsonObject a = v.toObject();
        out(QStringLiteral("  %1 %2 slots %3/%4 5h %5 week %6 credentials %7")
                .arg(a.value(QLatin1String("account_alias")).toString(a.value(QLatin1String("account_id")).toString()),
                     a.value(QLatin1String("status")).toString())
                .arg(a.value(QLatin1String("in_flight")).toInt())
                .arg(a.value(QLatin1String("slots")).toInt())
                .arg(numberText(a.value(QLatin1String("primary_window")).toObject().value(QLatin1String("used_percent"))),
                     numberText(a.value(QLatin1String("secondary_window")).toObject().value(QLatin1String("used_percent"))),
                     a.value(QLatin1String("credentials")).toString()));
    }
    const QJsonObject replica = status.value(QLatin1String("replica")).toObject();
    const QJsonObject gate = status.value(QLatin1String("gate")).toObject();
    out(QStringLiteral("replica %1 incarnation %2; gate %3 waiting (max %4); %5 CAS conflicts, %6 lease reclaims")
            .arg(replica.value(QLatin1String("replica_id")).toString())
            .arg(replica.value(QLatin1String("incarnation")).toInteger())
            .arg(gate.value(QLatin1String("queued")).toInt())
            .arg(gate.value(QLatin1String("max_waiters")).toInt())
            .arg(status.value(QLatin1String("cas_conflicts")).toInteger())
            .arg(status.value(QLatin1String("lease_reclaims")).toInteger()));
    for (const QJsonValue &v : status.value(QLatin1String("slots")).toArray()) {
        const QJsonObject s = v.toObject();
        if (s.value(QLatin1String("state")).toString() == QLatin1String("free"))
            continue;
        out(QStringLiteral("  slot %1#%2 epoch %3 %4 by %5 (%6) until %7")
                .arg(s.value(QLatin1String("account_id")).toString())
                .arg(s.value(QLatin1String("slot")).toInt())
                .arg(s.value(QLatin1String("epoch")).toInteger())
                .arg(s.value(QLatin1String("state")).toString(), s.value(QLatin1String("owner_replica")).toString(),
                     s.value(QLatin1String("request_id")).toString(),
                     s.value(QLatin1String("lease_expires_at")).toString()));
    }
    if (status.contains(QLatin1String("turn_stages"))) // an older instance has none
        for (const QString &line : turnStagesLines(status.value(QLatin1String("turn_stages")).toObject()))
            out(line);
    const QJsonArray turns = status.value(QLatin1String("in_flight")).toArray();
    out(QStringLiteral("%1 turn(s) in flight").arg(turns.size()));
    for (const QJsonValue &v : turns) {
        const QJsonObject t = v.toObject();
        QStringList remaining;
        const QJsonObject left = t.value(QLatin1String("remaining_ms")).toObject();
        for (auto it = left.begin(); it != left.end(); ++it)
            remaining << QStringLiteral("%1 %2 s").arg(it.key()).arg(double(it.value().toInteger()) / 1000.0, 0, 'f', 1);
        out(QStringLiteral("  %1 %2 on %3: %4, next deadline %5 (left: %6)")
                .arg(t.value(QLatin1String("request_id")).toString(), t.value(QLatin1String("route")).toString(),
                     t.value(QLatin1String("account_alias")).toString(t.value(QLatin1String("account_id")).toString()),
                     t.value(QLatin1String("stage")).toString(), t.value(QLatin1String("next_deadline")).toString(),
                     remaining.join(QStringLiteral(", "))));
    }
    return ExitOk;
}

int runClientConfig(const Config &config, const CommandLine &cl)
{
    const QString which = cl.words.value(1);
    const QString base = localApiBase(config);
    if (cl.write && cl.undo)
        return fail(QStringLiteral("client-config takes --write or --undo, not both"));
    if ((cl.write || cl.undo) && (which == QLatin1String("codex") || which == QLatin1String("opencode"))) {
        const bool codex = which == QLatin1String("codex");
        const QHash<QString, QString> env = processEnvironment();
        const QString path = codex ? codexConfigPath(env) : openCodeConfigPath(env);
        const ClientConfigEdit e = codex ? (cl.write ? writeCodexConfig(path, base) : undoCodexConfig(path))
                                         : (cl.write ? writeOpenCodeConfig(path, base) : undoOpenCodeConfig(path));
        if (!e.ok)
            return fail(e.error);
        if (!e.changed)
            out(QStringLiteral("%1: already %2").arg(e.path, cl.write ? QStringLiteral("set up for Switchyard")
                                                                       : QStringLiteral("without Switchyard")));
        else
            out(QStringLiteral("%1: %2 (backup: %3)")
                    .arg(e.path, cl.write ? QStringLiteral("now uses Switchyard at ") + base
                                          : QStringLiteral("Switchyard taken out"),
                         e.backupPath.isEmpty() ? QStringLiteral("none, the file is new") : e.backupPath));
        if (cl.write && codex)
            out(QStringLiteral("Codex reads the key from SWITCHYARD_API_KEY: export SWITCHYARD_API_KEY=local "
                               "(or an API key from `switchyard apikeys create`)"));
        return ExitOk;
    }
    if (which == QLatin1String("codex")) {
        out(codexClientConfig(base));
        return ExitOk;
    }
    if (which == QLatin1String("opencode")) {
        out(openCodeClientConfig(base));
        return ExitOk;
    }
    return fail(QStringLiteral("client-config needs codex or opencode"));
}

} // namespace sy::app
