#pragma once

#include "config/Config.h"

#include <QJsonArray>
#include <QList>
#include <QObject>
#include <QString>
#include <memory>

namespace sy {
class EgressSelector;
class UpstreamClient;
} // namespace sy

namespace sy::test {

struct HarnessAccount
{
    QString id;
    QString alias;
    QString chatgptAccountId;
    QString token;
};

// Drives requests through the egress layer the way a turn does, without the rest of the gateway: one
// EgressRequest per request, the same account tried again after an egress failure (next proxy), fail closed
// when its pool refuses, real sockets through the fake proxies to the fake upstream. It records what the
// request log would (`requests --json` shape, the proxy of each attempt taken from its call). For the
// negative tests that compile the egress sources with SWITCHYARD_FAULT_INJECTION into the test itself.
class EgressRunHarness : public QObject
{
public:
    EgressRunHarness(const Config &config, const QList<HarnessAccount> &accounts);
    ~EgressRunHarness() override;

    // Starts the selector (credentials, first probe round).
    bool start();
    // Runs `count` requests, `concurrency` at a time; request i uses account i % accounts. With
    // freshConnections every request gets its own upstream client (so every request pays its own set-up).
    // False when they did not all finish within two minutes.
    bool run(int count, int concurrency, bool freshConnections = false);

    QJsonArray requestLog() const { return m_rows; }
    QJsonArray accountsJson() const;
    EgressSelector &selector() { return *m_selector; }

private:
    struct Request;
    void startNext();
    void attempt(Request *r);
    void finish(Request *r, const QString &status, const QString &killStage);

    Config m_config;
    QList<HarnessAccount> m_accounts;
    std::unique_ptr<EgressSelector> m_selector;
    UpstreamClient *m_client = nullptr;
    QJsonArray m_rows;
    int m_next = 0;
    int m_count = 0;
    int m_running = 0;
    int m_concurrency = 1;
    bool m_fresh = false;
};

} // namespace sy::test
