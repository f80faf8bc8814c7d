// The HTTP side of `lctx serve`: connections are read by the front (http_front.h: limits, deadlines, bounds
// per client), complete requests run through cpp-httplib's routing here: routes, API key, CORS, request
// log, and the handlers that turn requests into engine tasks and stream their results back. Handler
// threads never touch the context: they queue tasks and wait on their channels.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/engine.h"

namespace lctx::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;  // 0: any free port (bind() says which)
    std::string api_key;
    std::vector<std::string> api_keys;  // more keys (--api-key-file): any one of them, or api_key, is let in
    size_t max_body = 16u << 20;        // larger bodies get 413 before being read
    bool metrics = true;
    std::string slot_save_path;  // folder of /slots/{id}?action=save|restore files; "" refuses them
    bool log = true;             // one line per request on stderr
    int http_threads = 0;        // threads running complete requests; 0: 256
    // The front's bounds (http_front.h): a longer head or more header lines get 431; a head or body that
    // does not arrive in time 408; more connections from one address than max_per_client close the
    // oldest that is only waiting or sending.
    size_t max_head = 16u << 10;
    int max_headers = 100;
    int head_timeout_ms = 10000;
    int body_timeout_ms = 60000;
    int idle_timeout_ms = 5000;
    int write_timeout_ms = 10000;  // one write of a response to a client that stops reading
    int max_per_client = 64;
    // Origins a browser page may call from (Access-Control-Allow-Origin); empty: every origin, as
    // llama-server.
    std::vector<std::string> cors_origins;
    // Chat replies: where <think> reasoning goes (--reasoning-format: none, deepseek, auto) and
    // --reasoning-budget (-1: unlimited; 0: thinking off).
    std::string reasoning_format = "auto";
    int reasoning_budget = -1;
};

// llama-server's --timeout N (its read and write timeout, seconds): a body may take N seconds to arrive and a
// write may wait N seconds for a client that stops reading; a head gets at most N seconds too (never more
// than its own bound, which keeps slow clients from holding connections). N must be at least 1.
void apply_timeout(ServerOptions &opts, int seconds);

// The keys of an --api-key-file: one a line, surrounding blanks dropped, empty lines and lines starting with
// '#' skipped. Throws std::runtime_error naming the file when it cannot be read or holds no key.
std::vector<std::string> read_api_key_file(const std::string &path);

class HttpServer {
  public:
    explicit HttpServer(const ServerOptions &opts);
    ~HttpServer();
    HttpServer(const HttpServer &) = delete;
    HttpServer &operator=(const HttpServer &) = delete;

    // Null while the model loads: /health answers 503 and every other endpoint 503 too.
    void set_engine(Engine *engine);
    // Binds the listening socket; returns the port, or -1 with the reason in error().
    int bind();
    // Serves until stop(); returns false when the listener failed.
    bool listen();
    // Stops accepting; open streams end (the engine's requests must be ended first, Engine::stop).
    void stop();
    // True from stop() on: new requests get 503.
    bool stopping() const;
    // Starts a drain (server/drain.h): /health and every new request answer 503 with Retry-After, while
    // the requests already accepted go on and /metrics still answers. stop() ends it.
    void drain();
    bool draining() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lctx::server
