// egress_probe: the independent check of an egress run (issue 7 point 4). Reads the configuration file, the
// fake upstream's and fake egress proxies' own records, the request log and optionally the accounts list and
// the health command's output; prints every mismatch with what it expected; exits 1 on any (and when an
// input cannot be read), 0 otherwise.
#include "EgressProbe.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <cstdio>

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Recomputes what every request of an egress run should have done."));
    p.addHelpOption();
    const QCommandLineOption config(QStringLiteral("config"), QStringLiteral("Switchyard's config file."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption requests(QStringLiteral("requests"), QStringLiteral("`switchyard requests --json`."),
                                      QStringLiteral("FILE"));
    const QCommandLineOption upstream(QStringLiteral("upstream-log"), QStringLiteral("The fake upstream's log."),
                                      QStringLiteral("FILE"));
    const QCommandLineOption proxy(QStringLiteral("proxy-log"),
                                   QStringLiteral("A fake egress proxy's record (repeat)."), QStringLiteral("FILE"));
    const QCommandLineOption accounts(QStringLiteral("accounts"), QStringLiteral("`switchyard accounts list --json`."),
                                      QStringLiteral("FILE"));
    const QCommandLineOption health(QStringLiteral("health"), QStringLiteral("`switchyard health --json` output."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption healthExit(QStringLiteral("health-exit"), QStringLiteral("Its exit code."),
                                        QStringLiteral("N"));
    p.addOptions({config, requests, upstream, proxy, accounts, health, healthExit});
    p.process(app);
    if (!p.isSet(config) || !p.isSet(requests)) {
        std::fprintf(stderr, "egress_probe: --config and --requests are required\n");
        return 1;
    }
    probe::InputFiles files;
    files.config = p.value(config);
    files.requests = p.value(requests);
    files.upstreamLog = p.value(upstream);
    files.proxyLogs = p.values(proxy);
    files.accounts = p.value(accounts);
    files.health = p.value(health);
    files.healthExit = p.isSet(healthExit) ? p.value(healthExit).toInt() : -1;

    probe::Inputs in;
    const QStringList unreadable = probe::loadInputs(files, &in);
    probe::Verdict v;
    for (const QString &e : unreadable)
        v.mismatches << QStringLiteral("input: ") + e;
    probe::checkRequests(in, &v);
    probe::checkHealth(in, &v);
    for (const QString &m : std::as_const(v.mismatches))
        std::printf("MISMATCH %s\n", qPrintable(m));
    std::printf("egress_probe: %d requests, %d attempts, %d carried requests checked against %d proxy records; "
                "round_robin %s; %lld mismatch(es)\n",
                v.rowsChecked, v.attemptsChecked, v.carriedChecked, int(in.proxies.size()),
                v.sequenceChecked ? "in order" : "as counts", qint64(v.mismatches.size()));
    return v.mismatches.isEmpty() ? 0 : 1;
}
