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

// Version 4 belongs to the ownership protocol (owner_slots, replicas, slot_claims), which lands on its own
// branch. Until both are merged this branch applies it as an empty step so version 5 can follow it; the
// merge keeps the ownership statements and drops this list.
const QStringList &version4()
{
    static const QStringList statements;
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
                sum(status <> 'completed'), coalesce(sum(tokens_input), 0), coalesce(sum(tokens_cached), 0),
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

} // namespace

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
    default:
        if (error)
            *error = QStringLiteral("no migration to schema version %1").arg(version);
        return false;
    }
    for (const QString &sql : *statements) {
        QString stepError;
        if (!db.exec(sql, &stepError)) {
            if (error)
                *error = QStringLiteral("schema version %1: %2").arg(version).arg(stepError);
            return false;
        }
    }
    return true;
}

} // namespace sy
