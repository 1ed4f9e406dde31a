#pragma once

#include "util/Clock.h"

#include <QString>
#include <optional>

namespace sy {

class Database;

// A continuity anchor as the ownership protocol keeps it: the response id, the account that owns it, its
// conversation lineage (the first response of the chain), the session that produced it, the slot epoch that
// served it, and where it came from ("served": produced through this proxy).
struct AnchorRecord
{
    QString responseId;
    QString accountId;
    QString lineage;
    QString sessionKey;
    std::optional<int> slot;
    std::optional<qint64> epoch;
    QString provenance = QStringLiteral("served");
};

// Continuity: which account produced a response (previous_response_id must go back to it, never to another
// account). Rows go away with their account, and 30 days after they were made (ownership/LedgerRetention).
class AnchorRepository
{
public:
    explicit AnchorRepository(Database &db, const Clock &clock = SystemClock::instance());

    // The account must exist (foreign key). Remembering a response id again moves it to the new owner.
    bool remember(const QString &responseId, const QString &accountId, QString *error);
    // Remembers a served response with its lineage and the slot epoch that served it.
    bool rememberServed(const AnchorRecord &anchor, QString *error);
    // nullopt when unknown (or on error: then *error is set).
    std::optional<QString> ownerOf(const QString &responseId, QString *error = nullptr);
    std::optional<AnchorRecord> find(const QString &responseId, QString *error = nullptr);

private:
    Database &m_db;
    const Clock &m_clock;
};

// Session affinity: keeps a client session (Codex session-id / prompt_cache_key, OpenCode
// x-session-affinity) on one account while that account is eligible.
class AffinityRepository
{
public:
    explicit AffinityRepository(Database &db, const Clock &clock = SystemClock::instance());

    bool set(const QString &sessionKey, const QString &accountId, QString *error);
    std::optional<QString> accountFor(const QString &sessionKey, QString *error = nullptr);
    bool clear(const QString &sessionKey, QString *error);

private:
    Database &m_db;
    const Clock &m_clock;
};

} // namespace sy
