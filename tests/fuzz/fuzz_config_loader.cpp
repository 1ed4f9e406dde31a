// The configuration loader (config/Config), from bytes. The input is split at NUL bytes into: the JSON
// configuration file, SWITCHYARD_DATABASE_URL, the --listen override, SWITCHYARD_UPSTREAM_URL and the contents
// of a database secret key file (present: SWITCHYARD_SECRET_BACKEND=database). A seed without NULs is just a file.
// Invariants: a refused configuration says why; an accepted one keeps every setting inside its documented
// range; no message and no redacted location ever shows the database password or the key.
#include "FuzzSupport.h"
#include "config/Config.h"
#include "store/DatabaseLocation.h"

#include <QFile>
#include <QTemporaryDir>
#include <QUrl>
#include <QUrlQuery>

#include <cstdio>

namespace sy::fuzz {

namespace {

constexpr const char *kTarget = "config_loader";

QString writeFile(const QString &path, const QByteArray &contents)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        checkFailed(kTarget, "cannot write the scratch file", __FILE__, __LINE__);
    file.write(contents);
    file.close();
    file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    return path;
}

QString withoutQuotes(QString s)
{
    return s.remove(QLatin1Char('"'));
}

// `secret` must not show in `text`, unless the input also put it somewhere that may be shown (a parameter name,
// the user or host of the URL, ...): then seeing it proves nothing. Quotes are ignored, since messages add them
// around what they name.
void checkNoSecret(const QString &text, const QString &rawSecret, const QStringList &shownElsewhere)
{
    const QString secret = withoutQuotes(rawSecret);
    if (secret.size() < 6)
        return;
    for (const QString &s : shownElsewhere) {
        if (withoutQuotes(s).contains(secret))
            return;
    }
    const bool shows = withoutQuotes(text).contains(secret);
    if (shows)
        std::fprintf(stderr, "message: %s\nsecret: %s\n", qPrintable(text), qPrintable(secret));
    SY_FUZZ_CHECK(kTarget, !shows, "a message shows a secret");
}

} // namespace

int configLoader(const uint8_t *data, size_t size)
{
    static QTemporaryDir scratch;
    SY_FUZZ_CHECK(kTarget, scratch.isValid(), "no scratch directory");

    const QList<QByteArray> parts = QByteArray(reinterpret_cast<const char *>(data), qsizetype(size)).split('\0');
    auto part = [&](qsizetype i) { return i < parts.size() ? parts.at(i) : QByteArray(); };
    const QString databaseUrl = QString::fromUtf8(part(1));

    QHash<QString, QString> env;
    env.insert(QStringLiteral("HOME"), scratch.path());
    if (!databaseUrl.isEmpty())
        env.insert(QStringLiteral("SWITCHYARD_DATABASE_URL"), databaseUrl);
    if (!part(3).isEmpty())
        env.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"), QString::fromUtf8(part(3)));
    if (parts.size() > 4) {
        env.insert(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        env.insert(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"),
                   writeFile(scratch.filePath(QStringLiteral("key")), part(4)));
    }
    ConfigOverrides overrides;
    overrides.configFile = writeFile(scratch.filePath(QStringLiteral("config.json")), part(0));
    if (parts.size() > 2)
        overrides.listen = QString::fromUtf8(part(2));

    const ConfigResult r = loadConfig(overrides, env);
    const std::optional<DatabaseLocation> location = DatabaseLocation::parse(databaseUrl, nullptr);
    // An unparsable URL may still hold a password the error must not repeat.
    const QString password = location ? location->password : QUrl(databaseUrl).password();
    QStringList shown{QString::fromUtf8(part(0)), QString::fromUtf8(part(2)), QString::fromUtf8(part(3)),
                      scratch.path()};
    // Parameter names are shown in messages by design ("unknown parameter \"passfile\""), values never.
    for (const auto &item : QUrlQuery(QUrl(databaseUrl)).queryItems())
        shown << item.first;
    if (location) {
        shown << location->user << location->host << location->databaseName << location->sqlitePath;
        for (const auto &option : location->options)
            shown << option.first << option.second;
    }
    if (!r.ok()) {
        // Each message is held to the secret its source had: other messages quote other inputs ("--listen:
        // \"...\" has no valid port"), which may contain anything.
        if (r.error.startsWith(QLatin1String("SWITCHYARD_DATABASE_URL")))
            checkNoSecret(r.error, password, shown);
        if (r.error.startsWith(QLatin1String("SWITCHYARD_SECRET_KEY_FILE")))
            checkNoSecret(r.error, QString::fromUtf8(part(4).trimmed()), shown + QStringList{databaseUrl});
        return 0;
    }
    const Config &c = r.config;
    SY_FUZZ_CHECK(kTarget, c.slotsPerAccount >= 1 && c.slotsPerAccount <= 1024, "slots_per_account out of range");
    SY_FUZZ_CHECK(kTarget, c.leaseTtlS >= 2 * c.leaseRenewS, "lease_ttl_s below twice lease_renew_s");
    SY_FUZZ_CHECK(kTarget, c.maxBodyBytes >= 1024 * 1024 && c.maxBodyBytes <= 1024LL * 1024 * 1024,
                  "max_body_mb out of range");
    SY_FUZZ_CHECK(kTarget, c.upstreamUrl.isValid(), "accepted an invalid upstream URL");
    SY_FUZZ_CHECK(kTarget, c.budgets.validate().isEmpty(), "accepted budgets that do not validate");
    SY_FUZZ_CHECK(kTarget, !c.databaseLocation().isEmpty(), "no database location");
    checkNoSecret(redactDatabaseLocation(c.databaseLocation()), password, shown);
    return 0;
}

} // namespace sy::fuzz

SY_FUZZ_ENTRY(configLoader)
