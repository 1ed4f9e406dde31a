#pragma once

#include "api/AccountPool.h"
#include "api/ProxyServices.h"
#include "api/RouteTable.h"
#include "http/HttpRequest.h"

class QObject;

namespace sy {

class HttpResponse;
class StoreWorker;
class UpstreamClient;


// Requests that are not streamed turns: /responses/compact (JSON in, JSON out, on the session's account)
// and the model lists. They use an account's credentials like a turn, fail over on rate limits and upstream
// errors, and are booked in the request log.
void runPassthrough(const ProxyServices &services, Route route, HttpRequestPtr request,
                    HttpResponse *response, QObject *parent);

} // namespace sy
