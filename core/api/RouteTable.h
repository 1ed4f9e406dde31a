#pragma once

#include <QByteArray>

namespace sy {

// What a downstream request asks for, independent of which alias of the path it used.
enum class Route {
    NotFound,
    HealthLive,
    CodexResponses,        // POST /backend-api/codex/responses (SSE, codex.* events pass through)
    CodexResponsesCompact, // POST /backend-api/codex/responses/compact
    CodexModels,           // GET  /backend-api/codex/models
    V1Responses,           // POST /v1/responses
    V1ChatCompletions,     // POST /v1/chat/completions
    V1Models,              // GET  /v1/models
    ApiStatus,             // GET  /api/status
    ApiRequests,           // GET  /api/requests
    ApiReload,             // POST /api/reload
};

struct RouteMatch
{
    Route route = Route::NotFound;
    bool methodAllowed = true;   // false: the path exists but not with this method (405)
    bool websocketUpgrade = false; // a WebSocket upgrade on a responses path (answered 426)
    const char *name = "";       // the canonical route string used in the request log
};

// `upgradeHeader` is the request's Upgrade header (empty if none).
RouteMatch matchRoute(const QByteArray &method, const QByteArray &path, const QByteArray &upgradeHeader);

} // namespace sy
