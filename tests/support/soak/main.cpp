// sy-soak: the soak run of issue 10 point 6 (driven by bench/soak.sh; nothing here asserts a time).
//
// Starts the fake upstream and `switchyard serve` (5 fake accounts x 64 slots, tokens sealed in the
// database), keeps `--streams` client turns open at once for `--minutes` (Codex and /v1/responses turns and
// continuations; a share of clients hang up at a random moment), plants upstream faults at `--fault-rate`
// (500 before the stream, drop_mid, stall_mid, 429), samples the serve process's RSS and open fds every
// `--sample-s` seconds, stops serve gracefully, and judges:
//  - errors: every request-log row that did not complete is explained by a planted fault on one of its
//    upstream requests or by its client's hang-up; anything else is an unplanted error;
//  - every client answer with an x-request-id, and every request that reached the upstream, has its row;
//  - the durable ownership state (DurableStateChecker): every claim settled exactly once, no slot left held;
//  - growth: mean RSS and fds of the last quarter of the samples against the first quarter (a leak shows
//    early), and RSS of the last quarter against the third (steady state: the bounded in-memory caches fill
//    during the first minutes, so growth after them is what "no growth" means); the slope of anonymous RSS
//    (the heap, without mapped files such as SQLite's -shm) over the second half is reported in KiB/min.
// Prints one JSON object (the numbers) on stdout; progress on stderr. Exit 0 when every check holds, 1 when
// one fails, 2 when the run could not be set up.
#include "lib/DurableStateChecker.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "lib/TestFiles.h"
#include "lib/TurnTraffic.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSet>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <cstdio>

using namespace sy;
using namespace sy::test;

namespace {

constexpr int kAccounts = 5;
constexpr int kSlotsPerAccount = 64;

void progress(const QString &text)
{
    std::fprintf(stderr, "[%s] %s\n", qPrintable(QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss"))),
                 qPrintable(text));
    std::fflush(stderr);
}

struct Sample
{
    qint64 atMs = 0;
    qint64 rssKb = 0;
    qint64 rssAnonKb = 0;
    qint64 rssFileKb = 0;
    int fds = 0;
    int inFlight = 0;
};

// The request log's rows (request_id, status, error_code, kill_stage, account_alias, attempts), straight from
// the SQLite file serve wrote, after serve stopped.
QJsonArray readRequestLog(const QString &database, QString *error)
{
    QJsonArray rows;
    const QString name = QStringLiteral("soak-request-log");
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(database);
        db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY"));
        if (!db.open()) {
            *error = db.lastError().text();
            if (error->isEmpty())
                *error = QStringLiteral("cannot open ") + database;
        } else {
            QSqlQuery q(db);
            q.setForwardOnly(true);
            if (!q.exec(QStringLiteral("SELECT request_id, status, error_code, kill_stage, account_alias, "
                                       "attempts_json FROM request_log ORDER BY started_at_ms, request_id"))) {
                *error = q.lastError().text();
                if (error->isEmpty())
                    *error = QStringLiteral("cannot read request_log");
            } else {
                while (q.next())
                    rows.append(QJsonObject{
                        {QStringLiteral("request_id"), q.value(0).toString()},
                        {QStringLiteral("status"), q.value(1).toString()},
                        {QStringLiteral("error_code"), q.value(2).toString()},
                        {QStringLiteral("kill_stage"), q.value(3).toString()},
                        {QStringLiteral("account"), q.value(4).toString()},
                        {QStringLiteral("attempts"), QJsonDocument::fromJson(q.value(5).toByteArray()).array()}});
            }
        }
    }
    QSqlDatabase::removeDatabase(name);
    return rows;
}

Sample sampleOf(qint64 pid)
{
    Sample s;
    s.atMs = QDateTime::currentMSecsSinceEpoch();
    QFile status(QStringLiteral("/proc/%1/status").arg(pid));
    if (status.open(QIODevice::ReadOnly)) {
        for (const QByteArray &line : status.readAll().split('\n')) {
            const auto kb = [&](int prefix) { return line.mid(prefix).trimmed().split(' ').value(0).toLongLong(); };
            if (line.startsWith("VmRSS:"))
                s.rssKb = kb(6);
            else if (line.startsWith("RssAnon:"))
                s.rssAnonKb = kb(8);
            else if (line.startsWith("RssFile:"))
                s.rssFileKb = kb(8);
        }
    }
    s.fds = int(QDir(QStringLiteral("/proc/%1/fd").arg(pid)).entryList(QDir::NoDotAndDotDot | QDir::System).size());
    return s;
}

QJsonObject quarterGrowth(const QList<Sample> &samples)
{
    const int q = qMax(1, int(samples.size()) / 4);
    auto mean = [&](int from, int count, auto field) {
        double sum = 0;
        for (int i = from; i < from + count; ++i)
            sum += double(field(samples.at(i)));
        return count > 0 ? sum / count : 0.0;
    };
    const double rss1 = mean(0, q, [](const Sample &s) { return s.rssKb; });
    const double rss4 = mean(int(samples.size()) - q, q, [](const Sample &s) { return s.rssKb; });
    const double rss3 = mean(int(samples.size()) - 2 * q, q, [](const Sample &s) { return s.rssKb; });
    // Least-squares slope of anonymous RSS over the second half, per minute.
    double slope = 0;
    {
        const int from = int(samples.size()) / 2;
        const int n = int(samples.size()) - from;
        double mx = 0, my = 0;
        for (int i = from; i < int(samples.size()); ++i) {
            mx += double(samples.at(i).atMs) / n;
            my += double(samples.at(i).rssAnonKb) / n;
        }
        double sxy = 0, sxx = 0;
        for (int i = from; i < int(samples.size()); ++i) {
            const double dx = double(samples.at(i).atMs) - mx;
            sxy += dx * (double(samples.at(i).rssAnonKb) - my);
            sxx += dx * dx;
        }
        slope = sxx > 0 ? sxy / sxx * 60000.0 : 0.0;
    }
    const double fd1 = mean(0, q, [](const Sample &s) { return s.fds; });
    const double fd4 = mean(int(samples.size()) - q, q, [](const Sample &s) { return s.fds; });
    return QJsonObject{{QStringLiteral("samples"), int(samples.size())},
                       {QStringLiteral("rss_kb_first_quarter"), qRound64(rss1)},
                       {QStringLiteral("rss_kb_last_quarter"), qRound64(rss4)},
                       {QStringLiteral("rss_growth_percent"), rss1 > 0 ? (rss4 - rss1) * 100.0 / rss1 : 0.0},
                       {QStringLiteral("rss_kb_third_quarter"), qRound64(rss3)},
                       {QStringLiteral("rss_steady_growth_percent"), rss3 > 0 ? (rss4 - rss3) * 100.0 / rss3 : 0.0},
                       {QStringLiteral("rss_anon_slope_kb_per_min_second_half"), qRound64(slope)},
                       {QStringLiteral("rss_anon_kb_last"), samples.isEmpty() ? 0 : samples.last().rssAnonKb},
                       {QStringLiteral("rss_file_kb_last"), samples.isEmpty() ? 0 : samples.last().rssFileKb},
                       {QStringLiteral("fds_first_quarter"), fd1},
                       {QStringLiteral("fds_last_quarter"), fd4}};
}

bool isFault(const QString &action)
{
    return action != QLatin1String("ok") && !action.startsWith(QLatin1String("slow"));
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser cli;
    cli.setApplicationDescription(QStringLiteral("Switchyard soak run (bench/soak.sh)"));
    cli.addHelpOption();
    cli.addOption({QStringLiteral("minutes"), QStringLiteral("Duration of the load (default 10)."), QStringLiteral("n"),
                   QStringLiteral("10")});
    cli.addOption({QStringLiteral("streams"), QStringLiteral("Concurrent client turns (default 256)."),
                   QStringLiteral("n"), QStringLiteral("256")});
    cli.addOption({QStringLiteral("cancel-rate"), QStringLiteral("Share of turns the client abandons (0.05)."),
                   QStringLiteral("x"), QStringLiteral("0.05")});
    cli.addOption({QStringLiteral("fault-rate"), QStringLiteral("Share of upstream answers that are faults (0.04)."),
                   QStringLiteral("x"), QStringLiteral("0.04")});
    cli.addOption({QStringLiteral("sample-s"), QStringLiteral("RSS/fd sampling interval (10)."), QStringLiteral("s"),
                   QStringLiteral("10")});
    cli.addOption({QStringLiteral("seed"), QStringLiteral("Random seed (default: random)."), QStringLiteral("n")});
    cli.addOption({QStringLiteral("max-rss-growth"),
                   QStringLiteral("Allowed RSS growth, last vs first quarter, in percent (default 20)."),
                   QStringLiteral("p"), QStringLiteral("20")});
    cli.addOption({QStringLiteral("max-steady-rss-growth"),
                   QStringLiteral("Allowed RSS growth, last vs third quarter, in percent (default 5)."),
                   QStringLiteral("p"), QStringLiteral("5")});
    cli.addOption({QStringLiteral("max-fd-growth"),
                   QStringLiteral("Allowed growth of open fds, last vs first quarter (default 32)."),
                   QStringLiteral("n"), QStringLiteral("32")});
    cli.process(app);
    const double minutes = cli.value(QStringLiteral("minutes")).toDouble();
    const int streams = cli.value(QStringLiteral("streams")).toInt();
    const double cancelRate = cli.value(QStringLiteral("cancel-rate")).toDouble();
    const double faultRate = cli.value(QStringLiteral("fault-rate")).toDouble();
    const int sampleS = qMax(1, cli.value(QStringLiteral("sample-s")).toInt());
    const quint32 seed = cli.isSet(QStringLiteral("seed")) ? cli.value(QStringLiteral("seed")).toUInt()
                                                           : QRandomGenerator::global()->generate();
    if (minutes <= 0 || streams <= 0 || qEnvironmentVariableIsEmpty("SWITCHYARD_BIN") ||
        qEnvironmentVariableIsEmpty("SWITCHYARD_FAKE_UPSTREAM")) {
        std::fprintf(stderr,
                     "sy-soak: needs --minutes > 0, --streams > 0, SWITCHYARD_BIN and SWITCHYARD_FAKE_UPSTREAM\n");
        return 2;
    }

    QTemporaryDir tmp;
    FakeUpstreamProcess fake;
    if (!fake.start()) {
        progress(QStringLiteral("fake upstream: ") + fake.errorString());
        return 2;
    }
    const QString keyFile = tmp.filePath(QStringLiteral("secrets.key"));
    if (!writeSecretKeyFile(keyFile))
        return 2;
    const QString database = tmp.filePath(QStringLiteral("soak.sqlite"));
    ProxyProcess proxy;
    proxy.setConfig(QJsonObject{{QStringLiteral("slots_per_account"), kSlotsPerAccount},
                                {QStringLiteral("gate_wait_s"), 30},
                                {QStringLiteral("stream_idle_s"), 5},
                                {QStringLiteral("keepalive_interval_s"), 2},
                                {QStringLiteral("request_total_s"), 120},
                                {QStringLiteral("drain_s"), 30}});
    proxy.setEnv(QStringLiteral("SWITCHYARD_DATABASE_URL"), database);
    proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
    proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), keyFile);
    proxy.setEnv(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/bus"));
    proxy.setEnv(QStringLiteral("DISPLAY"), QString());
    if (!proxy.addAccounts(kAccounts) || !proxy.start(fake.baseUrl(), 60000)) {
        progress(QStringLiteral("switchyard serve: ") + proxy.errorString());
        return 2;
    }
    const qint64 pid = proxy.pid();
    progress(QStringLiteral("serve pid %1 on port %2; %3 streams for %4 min, cancel rate %5, fault rate %6, seed %7")
                 .arg(pid)
                 .arg(proxy.port())
                 .arg(streams)
                 .arg(minutes)
                 .arg(cancelRate)
                 .arg(faultRate)
                 .arg(seed));

    // Upstream script, topped up twice a second: mostly slow answers (~25 events 100 ms apart), faults at
    // faultRate split over the four kinds.
    QRandomGenerator chaos(seed ^ 0x50a4u);
    QTimer topUp;
    // Faults before the stream (429, 500) cool their account down (90 s, a few seconds), so only the last
    // account gets them (its turns fail over): the other four keep 256 slots for the 256 streams and take the
    // mid-stream faults, which end their turn without penalising the account.
    QObject::connect(&topUp, &QTimer::timeout, [&] {
        for (int i = 0; i < proxy.accounts().size(); ++i) {
            const bool limitable = i == proxy.accounts().size() - 1;
            QStringList actions;
            for (int k = 0; k < 64; ++k) {
                const double r = chaos.generateDouble();
                const double f = faultRate / 2;
                if (limitable)
                    actions << (r < f       ? QStringLiteral("429_rate")
                                : r < 2 * f ? QStringLiteral("500")
                                            : QStringLiteral("slow:100"));
                else
                    actions << (r < f       ? QStringLiteral("drop_mid+slow:100")
                                : r < 2 * f ? QStringLiteral("stall_mid+slow:100")
                                            : QStringLiteral("slow:100"));
            }
            fake.script(proxy.accounts().at(i).chatgptAccountId, actions);
        }
    });
    topUp.start(500);

    LoadMix mix;
    mix.seed = seed;
    mix.clients = streams;
    mix.cancelRate = cancelRate;
    mix.cancelMaxMs = 3000;
    mix.responsesRate = 0.15;
    mix.continuationRate = 0.05;
    mix.minWords = 10;
    mix.maxWords = 30;
    mix.turnTimeoutMs = 150000;
    LoadDriver load(mix, [&] { return QList<quint16>{proxy.port()}; });

    QList<Sample> samples;
    QTimer sampler;
    QObject::connect(&sampler, &QTimer::timeout, [&] {
        Sample s = sampleOf(pid);
        s.inFlight = load.inFlight();
        samples << s;
        progress(QStringLiteral("rss %1 KiB, %2 fds, %3 client turns open, %4 finished")
                     .arg(s.rssKb)
                     .arg(s.fds)
                     .arg(s.inFlight)
                     .arg(load.outcomes().size()));
    });
    const qint64 startedAt = QDateTime::currentMSecsSinceEpoch();
    load.start();
    sampler.start(sampleS * 1000);
    QTest::qWait(int(minutes * 60000));
    sampler.stop();
    load.stopIssuing();
    topUp.stop();
    progress(QStringLiteral("load stopped; waiting for the open turns"));
    const bool idle = load.waitIdle(180000);
    const int stopCode = proxy.stop(60000);
    const qint64 ranMs = QDateTime::currentMSecsSinceEpoch() - startedAt;
    progress(QStringLiteral("serve stopped (exit %1); judging").arg(stopCode));

    // What the upstream did to each request id (read in pages: an hour's soak is over 300,000 entries).
    const QJsonArray upstreamLog = fake.log(true);
    const QString upstreamLogError = upstreamLog.isEmpty() ? fake.errorString() : QString();
    QHash<QString, QStringList> actionsById;
    QHash<QString, int> planted;
    int upstreamTurns = 0;
    for (const QJsonValue &v : upstreamLog) {
        const QJsonObject o = v.toObject();
        if (!o.value(QLatin1String("path")).toString().endsWith(QLatin1String("/responses")))
            continue;
        ++upstreamTurns;
        const QString action = o.value(QLatin1String("action")).toString();
        actionsById[o.value(QLatin1String("x_request_id")).toString()] << action;
        if (isFault(action))
            ++planted[action];
    }

    QHash<QString, const TurnOutcome *> clientById;
    QSet<QString> cancelledIds;
    int clientCancels = 0; // with or without an answer head (a hang-up before it leaves no request id)
    for (const TurnOutcome &o : load.outcomes()) {
        clientCancels += o.cancelled ? 1 : 0;
        if (o.requestId.isEmpty())
            continue;
        clientById.insert(o.requestId, &o);
        if (o.cancelled)
            cancelledIds.insert(o.requestId);
    }

    // Every request-log row, read from the database file itself (`switchyard requests` shows at most 100,000).
    QString requestLogError;
    const QJsonArray rows = readRequestLog(database, &requestLogError);
    QSet<QString> logged;
    QHash<QString, int> statuses, unplanned;
    QStringList unplannedExamples;
    int explainedByFault = 0, explainedByCancel = 0, explainedByCooldown = 0;
    for (const QJsonValue &v : rows) {
        const QJsonObject r = v.toObject();
        const QString id = r.value(QLatin1String("request_id")).toString();
        const QString status = r.value(QLatin1String("status")).toString();
        const QString code = r.value(QLatin1String("error_code")).toString();
        logged.insert(id);
        ++statuses[status + (code.isEmpty() ? QString() : QLatin1Char('/') + code)];
        if (status == QLatin1String("completed"))
            continue;
        bool fault = false;
        for (const QString &a : actionsById.value(id))
            fault = fault || isFault(a);
        if (fault) {
            ++explainedByFault;
        } else if (status == QLatin1String("cancelled") && code == QLatin1String("client_disconnected") &&
                   (cancelledIds.contains(id) || explainedByCancel < clientCancels)) {
            ++explainedByCancel;
        } else if ((code == QLatin1String("rate_limit_exceeded") ||
                    code == QLatin1String("previous_response_not_found")) &&
                   planted.value(QStringLiteral("429_rate")) > 0 && clientById.contains(id) &&
                   clientById.value(id)->kind == "continuation") {
            // A planted 429 cools its account down; a continuation bound to that account is refused meanwhile
            // (and its client, refused at once, tries the next one right away: these come in numbers).
            ++explainedByCooldown;
        } else {
            ++unplanned[status + QLatin1Char('/') + code];
            if (unplannedExamples.size() < 10)
                unplannedExamples << QString::fromUtf8(QJsonDocument(r).toJson(QJsonDocument::Compact));
        }
    }
    int missingClientRows = 0, missingUpstreamRows = 0;
    for (auto it = clientById.cbegin(); it != clientById.cend(); ++it)
        missingClientRows += logged.contains(it.key()) ? 0 : 1;
    for (auto it = actionsById.cbegin(); it != actionsById.cend(); ++it)
        missingUpstreamRows += it.key().isEmpty() || logged.contains(it.key()) ? 0 : 1;
    int clientErrorsWithoutId = 0;
    for (const TurnOutcome &o : load.outcomes())
        clientErrorsWithoutId += o.requestId.isEmpty() && !o.cancelled ? 1 : 0;

    DurableStateChecker checker(database);
    checker.setQuiescent(true);
    checker.setLeaseTtlMs(60000);
    QString checkError;
    const bool checked = checker.run(&checkError);

    const QJsonObject growth = quarterGrowth(samples);
    auto toJson = [](const QHash<QString, int> &h) {
        QJsonObject o;
        for (auto it = h.cbegin(); it != h.cend(); ++it)
            o.insert(it.key(), it.value());
        return o;
    };
    QJsonArray sampleArray;
    for (const Sample &s : samples)
        sampleArray.append(QJsonArray{(s.atMs - startedAt) / 1000, s.rssKb, s.fds, s.inFlight, s.rssAnonKb});
    int unplannedTotal = 0;
    for (int n : unplanned)
        unplannedTotal += n;
    const double rssGrowth = growth.value(QLatin1String("rss_growth_percent")).toDouble();
    const double fdGrowth = growth.value(QLatin1String("fds_last_quarter")).toDouble() -
                            growth.value(QLatin1String("fds_first_quarter")).toDouble();
    QStringList failures;
    if (!idle)
        failures << QStringLiteral("client turns still open 180 s after the load stopped");
    if (stopCode != 0)
        failures << QStringLiteral("serve exited with %1 on SIGTERM").arg(stopCode);
    if (!requestLogError.isEmpty())
        failures << QStringLiteral("request log unreadable: ") + requestLogError;
    if (upstreamTurns == 0 && !load.outcomes().isEmpty())
        failures << QStringLiteral("the fake upstream's log has no turn: ") +
                        (upstreamLogError.isEmpty() ? QStringLiteral("empty") : upstreamLogError);
    if (unplannedTotal > 0)
        failures
            << QStringLiteral("%1 errors not explained by a planted fault or a client hang-up").arg(unplannedTotal);
    if (clientErrorsWithoutId > 0)
        failures << QStringLiteral("%1 client turns ended without an answer carrying x-request-id")
                        .arg(clientErrorsWithoutId);
    if (missingClientRows + missingUpstreamRows > 0)
        failures << QStringLiteral("request ids without a request-log row: %1 seen by clients, %2 seen upstream")
                        .arg(missingClientRows)
                        .arg(missingUpstreamRows);
    if (!checked)
        failures << QStringLiteral("durable state unreadable: ") + checkError;
    else if (!checker.violations().isEmpty())
        failures << QStringLiteral("durable state: ") + checker.violatedInvariants().join(QLatin1Char(','));
    if (samples.size() < 8)
        failures << QStringLiteral("too few RSS/fd samples (%1) to judge growth").arg(samples.size());
    else if (rssGrowth > cli.value(QStringLiteral("max-rss-growth")).toDouble())
        failures << QStringLiteral("RSS grew %1% (last vs first quarter)").arg(rssGrowth, 0, 'f', 1);
    const double steadyGrowth = growth.value(QLatin1String("rss_steady_growth_percent")).toDouble();
    if (samples.size() >= 8 && steadyGrowth > cli.value(QStringLiteral("max-steady-rss-growth")).toDouble())
        failures << QStringLiteral("RSS grew %1% in the steady state (last vs third quarter)").arg(steadyGrowth, 0, 'f', 1);
    if (samples.size() >= 8 && fdGrowth > cli.value(QStringLiteral("max-fd-growth")).toDouble())
        failures << QStringLiteral("open fds grew by %1 (last vs first quarter)").arg(fdGrowth, 0, 'f', 1);

    const CheckerStats &st = checker.stats();
    const QJsonObject result{
        {QStringLiteral("seed"), qint64(seed)},
        {QStringLiteral("minutes"), minutes},
        {QStringLiteral("streams"), streams},
        {QStringLiteral("ran_ms"), ranMs},
        {QStringLiteral("client_turns"), int(load.outcomes().size())},
        {QStringLiteral("client_cancels"), clientCancels},
        {QStringLiteral("upstream_requests"), upstreamTurns},
        {QStringLiteral("planted_faults"), toJson(planted)},
        {QStringLiteral("log_rows"), int(rows.size())},
        {QStringLiteral("log_statuses"), toJson(statuses)},
        {QStringLiteral("explained_by_fault"), explainedByFault},
        {QStringLiteral("explained_by_cancel"), explainedByCancel},
        {QStringLiteral("explained_by_cooldown"), explainedByCooldown},
        {QStringLiteral("unplanned_errors"), toJson(unplanned)},
        {QStringLiteral("unplanned_examples"), QJsonArray::fromStringList(unplannedExamples)},
        {QStringLiteral("missing_rows_client_ids"), missingClientRows},
        {QStringLiteral("missing_rows_upstream_ids"), missingUpstreamRows},
        {QStringLiteral("claims"), st.claims},
        {QStringLiteral("settlements"), st.settlements},
        {QStringLiteral("requests_with_claims"), st.requestsWithClaims},
        {QStringLiteral("failover_releases"), st.failoverReleases},
        {QStringLiteral("durable_report"), checked ? QJsonValue(checker.report(5)) : QJsonValue(checkError)},
        {QStringLiteral("growth"), growth},
        {QStringLiteral("samples_s_rsskb_fds_open_anonkb"), sampleArray},
        {QStringLiteral("failures"), QJsonArray::fromStringList(failures)},
        {QStringLiteral("ok"), failures.isEmpty()},
    };
    std::printf("%s\n", QJsonDocument(result).toJson(QJsonDocument::Indented).constData());
    progress(failures.isEmpty() ? QStringLiteral("soak passed")
                                : QStringLiteral("soak FAILED: ") + failures.join(QStringLiteral("; ")));
    return failures.isEmpty() ? 0 : 1;
}
