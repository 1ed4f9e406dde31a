#pragma once

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace sy::test {

// What the independent egress probe (tests/probe, SWITCHYARD_EGRESS_PROBE_BIN) is given.
struct ProbeFiles
{
    QString configPath;                    // Switchyard's config file, read by the probe itself
    QJsonArray requests;                   // `switchyard requests --json` (or the same shape)
    std::optional<QJsonArray> upstreamLog; // FakeUpstreamProcess::log()
    QList<QJsonObject> proxyRecords;       // FakeEgressProxy::record() of every fake proxy
    std::optional<QJsonArray> accounts;    // `switchyard accounts list --json`
    struct Health
    {
        QByteArray output; // `switchyard health --json` stdout
        int exitCode = -1;
    };
    std::optional<Health> health;
};

struct ProbeRun
{
    int exitCode = -1;
    QString output;
    QStringList mismatches() const; // the MISMATCH lines
};

// Writes the inputs into `dir` and runs the probe program on them.
ProbeRun runEgressProbe(const QString &dir, const ProbeFiles &files);

class FakeEgressFleet;
class FakeUpstreamProcess;
class ProxyProcess;

// Everything a run left behind: the instance's config file, its request log and accounts list (through its
// CLI), the fake upstream's log, every fake proxy's record and, when asked, `health --json` and its exit code.
ProbeFiles collectProbeFiles(const ProxyProcess &proxy, FakeUpstreamProcess &upstream, const FakeEgressFleet &fleet,
                             bool withHealth);

} // namespace sy::test
