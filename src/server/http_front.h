// The connection side of `lctx serve`: one event-loop thread accepts connections and reads each request's
// head and body under limits and deadlines; only a complete request reaches a worker thread, which runs
// cpp-httplib's request processing over the bytes already read (httplib parses, routes and writes the
// response; it never reads the socket). A client that sends slowly, or sends too much, therefore holds
// an open descriptor and a bounded buffer, never a thread: /health and the decode loop stay reachable.
#pragma once
#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace lctx::server {

struct FrontOptions {
    std::string host = "127.0.0.1";
    int port = 8080;               // 0: any free port
    size_t max_head = 16u << 10;   // request line and headers, bytes; beyond: 431
    int max_headers = 100;         // header lines; beyond: 431
    size_t max_body = 16u << 20;   // body bytes (chunked ones decoded); beyond: 413
    int head_timeout_ms = 10000;   // from a request's first byte to the end of its head; then 408
    int body_timeout_ms = 60000;   // from the end of the head to the end of the body; then 408
    int idle_timeout_ms = 5000;    // a kept-alive connection waiting for its next request
    int write_timeout_ms = 10000;  // one write of a response (a client that stops reading)
    int max_per_client = 64;       // connections of one client address at once
    int max_connections = 4096;    // connections at once, all clients together
    int keep_alive_max = 100;      // requests on one connection
    int workers = 256;             // threads that run complete requests (each stream holds one)
};

// A request head as the front saw it, for the checks made before the body is read.
struct RequestHead {
    std::string method;
    std::string path;  // the target without its query
    httplib::Headers headers;
};

// An answer the front sends itself (the connection closes after it).
struct EarlyAnswer {
    int status = 0;  // 0: none, go on
    std::string message, type;
};

// httplib's server, its request processing (a protected member) reachable for the front's workers.
struct HttpRunner : httplib::Server {
    using httplib::Server::process_request;
    // httplib ends a chunked response early when it believes its own listener closed: the front's listener
    // stands in for it.
    void set_listener(socket_t s) { svr_sock_ = s; }
};

class HttpFront {
  public:
    // `server` runs the complete requests; `check` is asked about each head before its body is read.
    HttpFront(const FrontOptions &opts, HttpRunner &server,
              std::function<EarlyAnswer(const RequestHead &)> check, bool log);
    ~HttpFront();
    HttpFront(const HttpFront &) = delete;
    HttpFront &operator=(const HttpFront &) = delete;

    // Binds and listens; returns the port, or -1 (the reason in error()).
    int bind();
    const std::string &error() const;
    // Runs the loop until stop(); returns once every worker has finished. False when never bound.
    bool run();
    // Ends run(): no new connection, waiting ones close, running requests finish.
    void stop();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The socket of the request the calling worker thread is running, or -1 (to see whether its client left).
int current_connection_fd();

}  // namespace lctx::server
