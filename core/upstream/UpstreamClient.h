#pragma once

#include "upstream/UpstreamCall.h"

#include <QElapsedTimer>
#include <QNetworkProxy>
#include <QObject>
#include <QTimer>
#include <vector>

class QNetworkAccessManager;

namespace sy {

// Starts upstream HTTP calls without Qt 6.4's per-host queueing.
//
// A QNetworkAccessManager opens at most 6 HTTP/1.1 connections per host and queues further requests
// internally (unconfigurable before Qt 6.5), which would make a 7th concurrent stream wait and be
// mis-measured as connect time. So the client keeps a pool of managers, gives each new call to the first
// manager with fewer than maxCallsPerManager() running calls and opens another manager when all are full.
// Extra managers left idle for idleManagerTimeoutMs() are dropped again; the first one is kept.
//
// All managers and calls live in the client's thread; use the client from that thread only. Redirects are
// not followed, cookies are neither stored nor sent (accounts must not share them), HTTP/2 is allowed for
// https. Deleting the client deletes its unfinished calls without emitting their finished().
class UpstreamClient : public QObject
{
    Q_OBJECT

public:
    // Qt's fixed per-host connection count for HTTP/1.1.
    static constexpr int qtConnectionsPerHost = 6;

    explicit UpstreamClient(QObject *parent = nullptr);
    ~UpstreamClient() override;

    // Never returns null. Header values (Authorization included) are never logged.
    UpstreamCall *start(const UpstreamRequest &request);

    // Applies to every manager, current and future (e.g. one client per egress proxy).
    void setProxy(const QNetworkProxy &proxy);

    int activeCalls() const;
    int managerCount() const { return int(m_pool.size()); }

    int maxCallsPerManager() const { return m_maxCallsPerManager; }
    // Only for tests that demonstrate Qt's cap: more than 6 turns the pool into plain Qt queueing.
    void setMaxCallsPerManager(int calls) { m_maxCallsPerManager = calls; }
    int idleManagerTimeoutMs() const { return m_idleTimeoutMs; }
    void setIdleManagerTimeoutMs(int ms);

private:
    struct PoolEntry
    {
        QNetworkAccessManager *manager = nullptr;
        int active = 0;
        QElapsedTimer idleSince;
    };

    std::size_t pickManager();
    QNetworkAccessManager *createManager();
    void callFinished(QNetworkAccessManager *manager);
    void pruneIdleManagers();

    std::vector<PoolEntry> m_pool;
    QList<QPointer<UpstreamCall>> m_calls;
    QNetworkProxy m_proxy{QNetworkProxy::DefaultProxy};
    QTimer m_pruneTimer;
    int m_maxCallsPerManager = qtConnectionsPerHost;
    int m_idleTimeoutMs = 60 * 1000;
};

} // namespace sy
