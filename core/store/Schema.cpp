#include "store/Schema.h"

#include "store/Database.h"

#include <QStringList>

namespace sy {

namespace {

// Version 1: accounts, their latest usage, settings (pin, strategy), the request log, continuation
// anchors, session affinity and the meta table holding change_counter. Unknown numbers stay NULL.
const QStringList &version1()
{
    static const QStringList statements = {
        QStringLiteral("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"),
        QStringLiteral("INSERT INTO meta (key, value) VALUES ('change_counter', '0')"),
        QStringLiteral(R"(CREATE TABLE accounts (
            id TEXT PRIMARY KEY,
            chatgpt_account_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            email TEXT,
            alias TEXT UNIQUE,
            plan TEXT,
            status TEXT NOT NULL DEFAULT 'active' CHECK (status IN
                ('active', 'rate_limited', 'quota_exceeded', 'paused', 'reauth_required', 'deactivated')),
            status_reason TEXT,
            cooldown_until_ms INTEGER,
            consecutive_failures INTEGER NOT NULL DEFAULT 0,
            created_at_ms INTEGER NOT NULL,
            updated_at_ms INTEGER NOT NULL,
            last_selected_ms INTEGER,
            token_expires_at_ms INTEGER,
            last_refresh_ms INTEGER,
            slot_count INTEGER CHECK (slot_count IS NULL OR slot_count >= 1),
            UNIQUE (chatgpt_account_id, user_id)))"),
        QStringLiteral(R"(CREATE TABLE account_usage (
            account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
            primary_used_percent REAL,
            primary_window_minutes INTEGER,
            primary_reset_at_ms INTEGER,
            secondary_used_percent REAL,
            secondary_window_minutes INTEGER,
            secondary_reset_at_ms INTEGER,
            credits_has INTEGER,
            credits_unlimited INTEGER,
            credits_balance REAL,
            observed_at_ms INTEGER NOT NULL))"),
        QStringLiteral("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)"),
        // No foreign key to accounts: the history outlives a removed account.
        QStringLiteral(R"(CREATE TABLE request_log (
            request_id TEXT PRIMARY KEY,
            started_at_ms INTEGER NOT NULL,
            route TEXT NOT NULL,
            model TEXT,
            session_key TEXT,
            account_id TEXT,
            account_alias TEXT,
            chatgpt_account_id TEXT,
            status TEXT NOT NULL,
            kill_stage TEXT,
            error_code TEXT,
            upstream_request_id TEXT,
            attempts_json TEXT NOT NULL DEFAULT '[]',
            blocked_by_json TEXT NOT NULL DEFAULT '[]',
            latency_queue_ms INTEGER,
            latency_connect_ms INTEGER,
            latency_first_event_ms INTEGER,
            latency_total_ms INTEGER,
            tokens_input INTEGER,
            tokens_cached INTEGER,
            tokens_output INTEGER,
            tokens_reasoning INTEGER,
            tokens_total INTEGER))"),
        QStringLiteral("CREATE INDEX request_log_started ON request_log (started_at_ms)"),
        QStringLiteral("CREATE INDEX request_log_account ON request_log (account_id, started_at_ms)"),
        QStringLiteral(R"(CREATE TABLE response_anchors (
            response_id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            created_at_ms INTEGER NOT NULL))"),
        QStringLiteral("CREATE INDEX response_anchors_created ON response_anchors (created_at_ms)"),
        QStringLiteral("CREATE INDEX response_anchors_account ON response_anchors (account_id)"),
        QStringLiteral(R"(CREATE TABLE session_affinity (
            session_key TEXT PRIMARY KEY,
            account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            updated_at_ms INTEGER NOT NULL))"),
        QStringLiteral("CREATE INDEX session_affinity_account ON session_affinity (account_id)"),
    };
    return statements;
}

// Version 2: account tokens for SWITCHYARD_SECRET_BACKEND=database, sealed with XChaCha20-Poly1305
// (DatabaseSecretStore). No foreign key to accounts: an import stores the secret before the account row
// exists, so removing an account removes its secret explicitly.
const QStringList &version2()
{
    static const QStringList statements = {
        QStringLiteral(R"(CREATE TABLE account_secrets (
            account_id TEXT PRIMARY KEY,
            format INTEGER NOT NULL,
            key_id TEXT NOT NULL,
            nonce BLOB NOT NULL,
            ciphertext BLOB NOT NULL,
            updated_at_ms INTEGER NOT NULL))"),
    };
    return statements;
}

// Version 3: durable single-flight claims for token refresh. Refresh tokens rotate and are single-use, so only
// the process holding an unexpired claim may refresh an account; the TTL frees a claim whose holder died.
const QStringList &version3()
{
    static const QStringList statements = {
        QStringLiteral(R"(CREATE TABLE refresh_claims (
            account_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at_ms INTEGER NOT NULL))"),
    };
    return statements;
}


// Version 4: the ownership protocol (DESIGN.md "Accounts, slots and replicas"; spec/CoreOwnership.pml).
// owner_slots holds one row per (account, slot): its owner epoch only ever grows, and a claim is a
// compare-and-set on it. slot_claims is the ledger of every claim a turn made, with the durable facts the
// claim saw (account status and version, anchor owner) and how it ended; a request's claims carry exactly one
// settlement between them. replicas numbers each start of a replica (incarnation) and keeps its drain time and
// gate books. accounts.version grows with every durable change of an account row (the snapshot version a claim
// re-checks).
const QStringList &version4()
{
    static const QStringList statements = {
        QStringLiteral("ALTER TABLE accounts ADD COLUMN version INTEGER NOT NULL DEFAULT 0"),
        QStringLiteral(R"(CREATE TABLE replicas (
            replica_id TEXT PRIMARY KEY,
            incarnation INTEGER NOT NULL,
            started_at_ms INTEGER NOT NULL,
            heartbeat_ms INTEGER NOT NULL,
            draining_since_ms INTEGER,
            stopped_at_ms INTEGER,
            gate_admitted INTEGER NOT NULL DEFAULT 0,
            gate_left INTEGER NOT NULL DEFAULT 0,
            gate_queued INTEGER NOT NULL DEFAULT 0,
            gate_overloaded INTEGER NOT NULL DEFAULT 0,
            cas_conflicts INTEGER NOT NULL DEFAULT 0,
            lease_reclaims INTEGER NOT NULL DEFAULT 0))"),
        QStringLiteral(R"(CREATE TABLE owner_slots (
            account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
            slot_index INTEGER NOT NULL,
            owner_epoch INTEGER NOT NULL DEFAULT 0,
            owner_replica TEXT,
            owner_incarnation INTEGER,
            owner_request_id TEXT,
            lease_expires_ms INTEGER,
            PRIMARY KEY (account_id, slot_index)))"),
        // No foreign keys: the ledger outlives removed accounts, like the request log.
        QStringLiteral(R"(CREATE TABLE slot_claims (
            request_id TEXT NOT NULL,
            account_id TEXT NOT NULL,
            slot_index INTEGER NOT NULL,
            owner_epoch INTEGER NOT NULL,
            replica_id TEXT NOT NULL,
            incarnation INTEGER NOT NULL,
            route TEXT NOT NULL,
            started_at_ms INTEGER NOT NULL,
            claimed_at_ms INTEGER NOT NULL,
            durable_status TEXT,
            durable_cooldown_until_ms INTEGER,
            account_version INTEGER,
            previous_response_id TEXT,
            anchor_account_id TEXT,
            released_at_ms INTEGER,
            release_kind TEXT,
            settlements INTEGER NOT NULL DEFAULT 0,
            response_id TEXT))"),
        QStringLiteral("CREATE INDEX slot_claims_request ON slot_claims (request_id)"),
        QStringLiteral("CREATE INDEX slot_claims_slot ON slot_claims (account_id, slot_index, owner_epoch)"),
        QStringLiteral("CREATE INDEX slot_claims_open ON slot_claims (released_at_ms)"),
        // Anchors carry their conversation lineage (the first response of the chain), the session that made
        // them, the slot epoch that served them and their provenance ('served': produced by this proxy).
        QStringLiteral("ALTER TABLE response_anchors ADD COLUMN lineage TEXT"),
        QStringLiteral("ALTER TABLE response_anchors ADD COLUMN session_key TEXT"),
        QStringLiteral("ALTER TABLE response_anchors ADD COLUMN slot_index INTEGER"),
        QStringLiteral("ALTER TABLE response_anchors ADD COLUMN owner_epoch INTEGER"),
        QStringLiteral("ALTER TABLE response_anchors ADD COLUMN provenance TEXT NOT NULL DEFAULT 'served'"),
    };
    return statements;
}

// Version 5: what the dashboard charts read instead of raw rows. usage_rollup_hourly holds one row per
// (hour, account) with request, error and token sums ('' = no account chosen), kept in the same transaction
// as each request-log insert and filled from the existing log here. usage_samples keeps the latest quota
// observation per account and 5-minute bucket, so "used % over time" survives the one-row account_usage.
// request_log_started_id gives the Requests page its keyset order (started_at_ms, request_id).
const QStringList &version5()
{
    static const QStringList statements = {
        QStringLiteral(R"(CREATE TABLE usage_rollup_hourly (
            hour_start_ms INTEGER NOT NULL,
            account_id TEXT NOT NULL,
            requests INTEGER NOT NULL DEFAULT 0,
            errors INTEGER NOT NULL DEFAULT 0,
            tokens_input INTEGER NOT NULL DEFAULT 0,
            tokens_cached INTEGER NOT NULL DEFAULT 0,
            tokens_output INTEGER NOT NULL DEFAULT 0,
            tokens_reasoning INTEGER NOT NULL DEFAULT 0,
            tokens_total INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (hour_start_ms, account_id)))"),
        QStringLiteral(R"(INSERT INTO usage_rollup_hourly (hour_start_ms, account_id, requests, errors, tokens_input,
                tokens_cached, tokens_output, tokens_reasoning, tokens_total)
            SELECT (started_at_ms / 3600000) * 3600000, coalesce(account_id, ''), count(*),
                sum(CASE WHEN status <> 'completed' THEN 1 ELSE 0 END), coalesce(sum(tokens_input), 0), coalesce(sum(tokens_cached), 0),
                coalesce(sum(tokens_output), 0), coalesce(sum(tokens_reasoning), 0), coalesce(sum(tokens_total), 0)
            FROM request_log GROUP BY 1, 2)"),
        QStringLiteral(R"(CREATE TABLE usage_samples (
            account_id TEXT NOT NULL,
            bucket_ms INTEGER NOT NULL,
            observed_at_ms INTEGER NOT NULL,
            primary_used_percent REAL,
            primary_reset_at_ms INTEGER,
            secondary_used_percent REAL,
            secondary_reset_at_ms INTEGER,
            PRIMARY KEY (account_id, bucket_ms)))"),
        QStringLiteral("CREATE INDEX usage_samples_bucket ON usage_samples (bucket_ms)"),
        QStringLiteral("CREATE INDEX request_log_started_id ON request_log (started_at_ms, request_id)"),
    };
    return statements;
}

// Version 6: API keys for the proxy (docs/SECURITY.md "API keys"). Only a hash of each key is stored: the key
// itself is shown once when it is created. api_key_requests books which key started which request, so the
// tokens a key used in its window are summed from the request log; its rows outlive the longest window only.
const QStringList &version6()
{
    static const QStringList statements = {
        QStringLiteral(R"(CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            name TEXT,
            key_hash TEXT NOT NULL UNIQUE,
            created_at_ms INTEGER NOT NULL,
            expires_at_ms INTEGER,
            revoked_at_ms INTEGER,
            last_used_ms INTEGER,
            limit_tokens INTEGER CHECK (limit_tokens IS NULL OR limit_tokens >= 1),
            limit_window_s INTEGER CHECK (limit_window_s IS NULL OR limit_window_s >= 1)))"),
        QStringLiteral(R"(CREATE TABLE api_key_requests (
            request_id TEXT PRIMARY KEY,
            key_id TEXT NOT NULL,
            started_at_ms INTEGER NOT NULL))"),
        QStringLiteral("CREATE INDEX api_key_requests_key ON api_key_requests (key_id, started_at_ms)"),
    };
    return statements;
}

// Version 7: two indexes that no statement needs, each a page in every turn's commits (bench/HISTORY.md, "Fewer
// pages per claim"). slot_claims_open indexed released_at_ms, but every query that reads open claims names the
// request or the slot, and the planner takes slot_claims_request or slot_claims_slot for it; the index still
// cost each claim an insert (into its NULL run) and each settlement a move of that entry. request_log_started
// (started_at_ms) is the first column of request_log_started_id (version 5), which serves every range and order
// on started_at_ms as well.
const QStringList &version7()
{
    static const QStringList statements = {QStringLiteral("DROP INDEX IF EXISTS slot_claims_open"),
                                           QStringLiteral("DROP INDEX IF EXISTS request_log_started")};
    return statements;
}

// Version 8: what OwnerSlotRepository::settleAbandonedFailovers reads every lease tick. The partial index holds
// the claims closed by a failover, not settled and not yet found settled elsewhere (swept_at_ms): a request's
// few between a failover's release and its next claim or its settlement, until the next tick after that, so
// the search reads a handful of entries whatever the ledger's size. replicas.alive_until_ms is until when an
// incarnation vouches for itself (its heartbeat plus its own lease TTL).
const QStringList &version8()
{
    static const QStringList statements = {
        QStringLiteral("ALTER TABLE slot_claims ADD COLUMN swept_at_ms INTEGER"),
        QStringLiteral("ALTER TABLE replicas ADD COLUMN alive_until_ms INTEGER"),
        QStringLiteral("CREATE INDEX slot_claims_given_up ON slot_claims (request_id) WHERE release_kind = "
                       "'failover' AND settlements = 0 AND swept_at_ms IS NULL")};
    return statements;
}

// PostgreSQL has no implicit rowid. request_log's "newest first" order breaks ties between requests started in
// the same millisecond by insert order (RequestLogRepository::recent), so there the column is explicit.
QStringList postgresOnly(int version)
{
    if (version == 1)
        return {QStringLiteral("ALTER TABLE request_log ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY")};
    return {};
}

QString replacementFor(QStringView word)
{
    if (word.compare(QLatin1String("INTEGER"), Qt::CaseInsensitive) == 0 ||
        word.compare(QLatin1String("INT"), Qt::CaseInsensitive) == 0)
        return QStringLiteral("BIGINT");
    if (word.compare(QLatin1String("REAL"), Qt::CaseInsensitive) == 0)
        return QStringLiteral("DOUBLE PRECISION");
    if (word.compare(QLatin1String("BLOB"), Qt::CaseInsensitive) == 0)
        return QStringLiteral("BYTEA");
    return {};
}

bool isWordChar(QChar c)
{
    return c.isLetterOrNumber() || c == QLatin1Char('_') || c == QLatin1Char('$');
}

} // namespace

QString translateDdl(const QString &sql, SqlDialect dialect)
{
    if (dialect == SqlDialect::Sqlite)
        return sql;
    QString out;
    out.reserve(sql.size() + 32);
    const qsizetype n = sql.size();
    qsizetype i = 0;
    while (i < n) {
        const QChar c = sql.at(i);
        if (c == QLatin1Char('\'') || c == QLatin1Char('"')) {
            // A quoted literal or identifier, copied as is; a doubled quote stays inside it.
            qsizetype end = i + 1;
            while (end < n) {
                if (sql.at(end) == c) {
                    if (end + 1 < n && sql.at(end + 1) == c) {
                        end += 2;
                        continue;
                    }
                    break;
                }
                ++end;
            }
            end = qMin(end + 1, n);
            out += QStringView(sql).mid(i, end - i);
            i = end;
        } else if (c == QLatin1Char('-') && i + 1 < n && sql.at(i + 1) == QLatin1Char('-')) {
            qsizetype end = sql.indexOf(QLatin1Char('\n'), i);
            if (end < 0)
                end = n;
            out += QStringView(sql).mid(i, end - i);
            i = end;
        } else if (isWordChar(c)) {
            qsizetype end = i + 1;
            while (end < n && isWordChar(sql.at(end)))
                ++end;
            const QStringView word = QStringView(sql).mid(i, end - i);
            const QString replacement = replacementFor(word);
            if (replacement.isEmpty())
                out += word;
            else
                out += replacement;
            i = end;
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

bool applySchemaVersion(Database &db, int version, QString *error)
{
    const QStringList *statements = nullptr;
    switch (version) {
    case 1:
        statements = &version1();
        break;
    case 2:
        statements = &version2();
        break;
    case 3:
        statements = &version3();
        break;
    case 4:
        statements = &version4();
        break;
    case 5:
        statements = &version5();
        break;
    case 6:
        statements = &version6();
        break;
    case 7:
        statements = &version7();
        break;
    case 8:
        statements = &version8();
        break;
    default:
        if (error)
            *error = QStringLiteral("no migration to schema version %1").arg(version);
        return false;
    }
    QStringList all = *statements;
    if (db.dialect() == SqlDialect::Postgres)
        all += postgresOnly(version);
    for (const QString &sql : std::as_const(all)) {
        QString stepError;
        if (!db.exec(translateDdl(sql, db.dialect()), &stepError)) {
            if (error)
                *error = QStringLiteral("schema version %1: %2").arg(version).arg(stepError);
            return false;
        }
    }
    return true;
}

} // namespace sy
