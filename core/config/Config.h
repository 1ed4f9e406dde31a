#pragma once

#include "upstream/StageBudget.h"
#include "upstream/egress/EgressConfig.h"

#include <QHostAddress>
#include <QString>
#include <QStringList>
#include <QUrl>

#include <optional>

namespace sy {

// Every setting Switchyard reads, typed, in one place. Sources in order of precedence: command-line
// options, environment, the JSON config file, documented defaults. A config file that exists but is
// broken is never replaced by defaults: loading fails and the program exits 3 naming the problem.
struct Config
{
    // Network
    QHostAddress listenAddress = QHostAddress::LocalHost;
    quint16 listenPort = 2455;
    QUrl upstreamUrl = QUrl(QStringLiteral("https://chatgpt.com/backend-api"));
    QUrl authUrl = QUrl(QStringLiteral("https://auth.openai.com"));
    qint64 maxBodyBytes = 32LL * 1024 * 1024;

    // Front door (docs/SECURITY.md). Host names (or host:port) accepted besides the listen address and the
    // loopback names; origins ("scheme://host[:port]") a browser request may come from. Empty by default.
    QStringList allowedHosts;
    QStringList allowedOrigins;
    // Proxy requests need a valid API key even on a loopback listen address (always on any other address).
    bool requireApiKey = false;
    int headerTimeoutS = 10;            // a request's head (and a new connection's first one) must arrive in time
    int maxHeaderKb = 32;               // request line + headers
    int maxHeaders = 100;               // header fields per request
    int maxConnectionsPerClient = 64;   // open connections per non-loopback client address

    // Storage
    QString dataDir;
    // SWITCHYARD_DATABASE_URL as given: empty = SQLite file in dataDir; else an absolute SQLite path,
    // sqlite:///path or postgresql://user[:password]@host[:port]/dbname[?sslmode=...] (validated by loadConfig).
    QString databaseUrl;
    QString secretBackend = QStringLiteral("keychain");
    QString secretKeyFile; // SWITCHYARD_SECRET_KEY_FILE: the key of the database secret backend
    QString configFile;   // the file that was read, empty when none
    bool configFileExplicit = false;

    // Routing
    QString strategy = QStringLiteral("capacity_weighted");
    int backoffMaxS = 300;
    int slotsPerAccount = 4;
    int usagePollIntervalS = 60; // GET /wham/usage per account, staggered; 0 turns background polling off

    // Per-stage budgets (DESIGN.md "Per-stage budgets")
    BudgetSettings budgets;

    // Egress proxies, pools and account bindings; empty means every upstream connection goes direct.
    EgressSettings egress;

    // Leases (DESIGN.md "Accounts, slots and replicas")
    int leaseTtlS = 60;
    int leaseRenewS = 20;

    // Admission gate (DESIGN.md "Per-stage budgets": gate_wait): turns waiting for a slot, in all and per
    // account; one more gets 503 proxy_overloaded with Retry-After.
    int gateMaxWaiters = 512;
    int gateMaxWaitersPerAccount = 128;
    // Shutdown drain: how long in-flight turns may finish after SIGTERM or Quit before they are cancelled.
    int drainS = 30;

    // What Database::open() takes: the SQLite file path (dataDir/switchyard.sqlite by default) or the
    // PostgreSQL URL. It may hold a password: show redactDatabaseLocation(databaseLocation()) instead.
    QString databaseLocation() const;
    bool usesPostgres() const;
};

struct ConfigOverrides
{
    std::optional<QString> listen;
    std::optional<QString> dataDir;
    std::optional<QString> configFile;
};

struct ConfigResult
{
    Config config;
    QString error; // non-empty: exit 3 with this message
    bool ok() const { return error.isEmpty(); }
};

// Loads the effective configuration. `env` is injectable for tests (defaults to the process environment).
ConfigResult loadConfig(const ConfigOverrides &overrides, const QHash<QString, QString> &env);
QHash<QString, QString> processEnvironment();

// The configuration file loadConfig reads (it need not exist); *isExplicit: named by --config or
// SWITCHYARD_CONFIG, so a missing file is an error rather than "use the defaults".
QString configFilePath(const ConfigOverrides &overrides, const QHash<QString, QString> &env,
                       bool *isExplicit = nullptr);

// Hot reload (docs: "Changing the configuration while running"). The file keys whose effective values
// differ between two configurations, in the file's spelling ("strategy", "request_total_s", "egress_pools").
QStringList differingFileKeys(const Config &a, const Config &b);
// Keys a running instance cannot apply: the listening socket and the egress pool (its credentials and probes).
bool isRestartOnlyKey(const QString &key);
// Copies into *next every setting a running instance keeps until it restarts (the restart-only keys and the
// environment's storage, database and upstream settings), so *next holds only what can be applied live.
void keepRestartOnlySettings(const Config &running, Config *next);

// Parses "HOST:PORT" ("[::1]:2455" for IPv6). Returns an error text or empty.
QString parseListen(const QString &text, QHostAddress *address, quint16 *port);

} // namespace sy
