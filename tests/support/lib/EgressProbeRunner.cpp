#include "lib/EgressProbeRunner.h"

#include "lib/FakeEgressProxy.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"

#include <QFile>
#include <QJsonDocument>
#include <QProcess>

namespace sy::test {

namespace {

QString write(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        f.write(bytes);
    return path;
}

} // namespace

QStringList ProbeRun::mismatches() const
{
    QStringList out;
    for (const QString &line : output.split(QLatin1Char('\n'))) {
        if (line.startsWith(QLatin1String("MISMATCH ")))
            out << line.mid(9);
    }
    return out;
}

ProbeRun runEgressProbe(const QString &dir, const ProbeFiles &files)
{
    QStringList args{QStringLiteral("--config"), files.configPath, QStringLiteral("--requests"),
                     write(dir + QStringLiteral("/probe-requests.json"), QJsonDocument(files.requests).toJson())};
    if (files.upstreamLog)
        args << QStringLiteral("--upstream-log")
             << write(dir + QStringLiteral("/probe-upstream.json"), QJsonDocument(*files.upstreamLog).toJson());
    for (const QJsonObject &record : files.proxyRecords)
        args << QStringLiteral("--proxy-log")
             << write(dir + QStringLiteral("/probe-proxy-%1.json").arg(record.value(QLatin1String("name")).toString()),
                      QJsonDocument(record).toJson());
    if (files.accounts)
        args << QStringLiteral("--accounts")
             << write(dir + QStringLiteral("/probe-accounts.json"), QJsonDocument(*files.accounts).toJson());
    if (files.health)
        args << QStringLiteral("--health") << write(dir + QStringLiteral("/probe-health.json"), files.health->output)
             << QStringLiteral("--health-exit") << QString::number(files.health->exitCode);
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral(SWITCHYARD_EGRESS_PROBE_BIN), args);
    ProbeRun run;
    if (!p.waitForFinished(120000)) {
        p.kill();
        p.waitForFinished();
        run.output = QStringLiteral("the probe did not finish");
        return run;
    }
    run.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    run.output = QString::fromUtf8(p.readAll());
    return run;
}

ProbeFiles collectProbeFiles(const ProxyProcess &proxy, FakeUpstreamProcess &upstream, const FakeEgressFleet &fleet,
                             bool withHealth)
{
    ProbeFiles f;
    f.configPath = proxy.configPath();
    f.requests = proxy
                     .cli({QStringLiteral("requests"), QStringLiteral("--json"), QStringLiteral("--limit"),
                           QStringLiteral("100000")})
                     .json()
                     .array();
    f.upstreamLog = upstream.log();
    for (const FakeEgressProxy *p : fleet.proxies())
        f.proxyRecords.append(p->record());
    f.accounts =
        proxy.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")}).json().array();
    if (withHealth) {
        const CliResult health = proxy.cli({QStringLiteral("health"), QStringLiteral("--json")});
        f.health = ProbeFiles::Health{health.out, health.exitCode};
    }
    return f;
}

} // namespace sy::test
