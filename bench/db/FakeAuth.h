#pragma once

#include <QString>

namespace sy::bench {

// Writes dir/auth-<i>.json for i in 1..count: Codex CLI auth.json files with unsigned JWTs that expire in
// ten days (no token refresh during a benchmark) and distinct ChatGPT account ids. Returns an error or empty.
QString writeFakeAuthFiles(const QString &dir, int count);

} // namespace sy::bench
