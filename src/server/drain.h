// Draining a server for a rolling update (SIGTERM): /health and every new request answer 503 (with
// Retry-After) at once, so the load balancer takes the replica out of rotation, while the requests already
// accepted (running or queued) go on to their end.
#pragma once
#include <functional>

#include "server/engine.h"
#include "server/http_server.h"

namespace lctx::server {

// Starts the drain (HttpServer::drain) and waits until the engine holds no request, at most timeout_ms, or
// until interrupted() says to stop waiting (asked every few milliseconds; a second signal). Returns true when
// every request ended in time; else the caller stops the engine, which aborts the rest (503).
bool drain(HttpServer &http, const Engine &engine, int timeout_ms,
           const std::function<bool()> &interrupted = nullptr);

}  // namespace lctx::server
