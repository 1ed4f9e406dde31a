#pragma once

#include <QString>

namespace sy {

// A fresh, unique id for one proxied request ("req_" + 24 hex chars). The proxy never reuses the
// client's x-client-request-id, which Codex keeps constant for a whole session.
QString newRequestId();

// ISO 8601 UTC with milliseconds: 2026-11-30T04:00:00.123Z
QString isoUtc(qint64 epochMs);

} // namespace sy
