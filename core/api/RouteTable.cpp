#include "api/RouteTable.h"

namespace sy {

namespace {

struct Entry
{
    const char *path;
    const char *method;
    Route route;
    const char *name;
};

const Entry kRoutes[] = {
    {"/health/live", "GET", Route::HealthLive, "/health/live"},
    {"/backend-api/codex/responses", "POST", Route::CodexResponses, "/backend-api/codex/responses"},
    {"/backend-api/codex/responses/compact", "POST", Route::CodexResponsesCompact,
     "/backend-api/codex/responses/compact"},
    {"/backend-api/codex/models", "GET", Route::CodexModels, "/backend-api/codex/models"},
    {"/v1/responses", "POST", Route::V1Responses, "/v1/responses"},
    {"/v1/chat/completions", "POST", Route::V1ChatCompletions, "/v1/chat/completions"},
    {"/v1/models", "GET", Route::V1Models, "/v1/models"},
    {"/api/status", "GET", Route::ApiStatus, "/api/status"},
    {"/api/requests", "GET", Route::ApiRequests, "/api/requests"},
    {"/api/reload", "POST", Route::ApiReload, "/api/reload"},
};

QByteArray canonicalPath(QByteArray path)
{
    while (path.size() > 1 && path.endsWith('/'))
        path.chop(1);
    // Some clients append /v1 to a Codex base URL: /backend-api/codex/v1/x is /backend-api/codex/x.
    static const QByteArray codexV1("/backend-api/codex/v1/");
    if (path.startsWith(codexV1))
        path = QByteArray("/backend-api/codex/").append(path.mid(codexV1.size()));
    return path;
}

} // namespace

RouteMatch matchRoute(const QByteArray &method, const QByteArray &rawPath, const QByteArray &upgradeHeader)
{
    RouteMatch m;
    const QByteArray path = canonicalPath(rawPath);
    for (const Entry &e : kRoutes) {
        if (path != e.path)
            continue;
        m.name = e.name;
        if (!upgradeHeader.isEmpty() && upgradeHeader.toLower().contains("websocket") &&
            (e.route == Route::CodexResponses || e.route == Route::V1Responses)) {
            m.route = e.route;
            m.websocketUpgrade = true;
            return m;
        }
        if (method != e.method) {
            m.methodAllowed = false;
            return m;
        }
        m.route = e.route;
        return m;
    }
    return m;
}

} // namespace sy
