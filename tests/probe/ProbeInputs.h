#pragma once

// The independent egress probe's own view of what happened. It shares no code with Switchyard: it reads
// the configuration file itself, the fake upstream's and the fake egress proxies' own records of what they
// carried, the request log (`switchyard requests --json`), optionally the accounts list and the health
// command's output, and recomputes what each request should have done.

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

namespace probe {

struct ProxyConf
{
    QString name;
    QString scheme; // http, socks5, socks5h
    QString host;
    int port = 0;
    bool credentials = false;
};

struct PoolConf
{
    QString name;
    QString strategy;
    QStringList proxies;
    int budgetMs = 0;
    int maxAttempts = 0;
};

// The configuration as the probe reads it: leniently for expectations, strictly for the verdict "valid".
struct ConfigView
{
    QStringList problems; // strict reading: every reason the file is not a valid configuration
    QHash<QString, ProxyConf> proxies;
    QList<PoolConf> pools;
    QString defaultPool;
    QHash<QString, QString> bindings; // account alias or id -> pool

    bool valid() const { return problems.isEmpty(); }
    const PoolConf *pool(const QString &name) const;
};

struct FakeConnection
{
    int id = 0;
    qint64 acceptedAtMs = 0;
    qint64 establishedAtMs = -1;
    QString mode;
    QString outcome;
    QStringList requests; // x-request-id of every request it carried, in order
};

struct FakeProxy
{
    QString name;
    int port = 0;
    bool requiresCredentials = false;
    QList<QPair<qint64, QString>> modes; // (since epoch ms, mode) in order
    QHash<qint64, int> delays;           // since -> delay_ms
    QList<FakeConnection> connections;

    QString modeAt(qint64 ms) const;
    int delayAt(qint64 ms) const;
};

struct UpstreamEntry
{
    int seq = 0;
    QString requestId;
    QString chatgptAccountId;
    int status = 0;
    QString action;
};

struct Attempt
{
    QString accountId;
    QString proxy; // empty: direct (null)
    QString outcome;
    qint64 elapsedMs = -1;
};

struct Row
{
    QString id;
    qint64 startedAtMs = 0;
    qint64 totalMs = -1;
    QString status;
    QString killStage;
    QString accountId;
    QString accountAlias;
    QString chatgptAccountId;
    QList<Attempt> attempts;
    QStringList blockedBy;
};

struct Account
{
    QString id;
    QString alias;
    QString chatgptAccountId;
    QString status;
};

struct HealthOutput
{
    bool present = false;
    int exitCode = -1;
    QJsonObject json;
};

struct Inputs
{
    ConfigView config;
    QList<FakeProxy> proxies;
    bool haveUpstream = false;
    QList<UpstreamEntry> upstream;
    QList<Row> rows;
    QHash<QString, Account> accounts; // by id
    HealthOutput health;

    // The fake proxy listening where the configured proxy points (matched by port), or null.
    const FakeProxy *fakeFor(const QString &configuredName) const;
};

struct InputFiles
{
    QString config;
    QString requests;
    QString upstreamLog;
    QStringList proxyLogs;
    QString accounts;
    QString health;
    int healthExit = -1;
};

// Reads every file; returns what could not be read (each one makes the probe red).
QStringList loadInputs(const InputFiles &files, Inputs *out);
ConfigView readConfig(const QJsonObject &root);

} // namespace probe
