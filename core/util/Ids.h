#pragma once

#include <QString>

namespace sy {

// A fresh, unique id for one proxied request: "req_" + 24 hex chars, the first 12 the request's start (Unix ms,
// low 48 bits), the other 12 random. The proxy never reuses the client's x-client-request-id, which Codex keeps
// constant for a whole session. Time first so that the indexes keyed by request id (request_log's primary key,
// slot_claims_request, api_key_requests) grow at their right edge: a group commit's rows share their last
// pages, and an insert into a large log reads no page from the middle of the index. Ids of one millisecond
// differ by 48 random bits. LedgerRetention finds old claims by this order (requestIdFloor).
QString newRequestId(qint64 epochMs);

// "req_" + the 12 hex chars of epochMs: every id newRequestId() makes for that millisecond or a later one sorts at
// or above it, every one of an earlier millisecond below it, in byte order (SQLite's; PostgreSQL's C collation),
// and under the collations of a PostgreSQL database made with a locale (tst_store_postgres_repos: libc en_US.UTF-8,
// ICU en-US and sv-SE; all the ids share "req_" at the same place and use lower-case hex digits only).
QString requestIdFloor(qint64 epochMs);

// 24 random hex chars, for ids that no index keeps (a chat completion's "chatcmpl-" id).
QString newOpaqueId();

// ISO 8601 UTC with milliseconds: 2026-11-30T04:00:00.123Z
QString isoUtc(qint64 epochMs);

} // namespace sy
