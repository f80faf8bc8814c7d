#include "server/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "server/openai_json.h"

namespace lctx::server {

namespace {

using Clock = std::chrono::steady_clock;

thread_local int t_connection_fd = -1;

bool iequals(const std::string &a, const char *b) {
    const size_t n = std::strlen(b);
    if (a.size() != n) return false;
    for (size_t i = 0; i < n; ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

std::string trim(const std::string &s) {
    size_t b = 0, e = s.size();
    while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
    return s.substr(b, e - b);
}

std::string lower(std::string s) {
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

void address_of(const sockaddr_storage &a, std::string &ip, int &port) {
    char buf[INET6_ADDRSTRLEN] = {0};
    if (a.ss_family == AF_INET) {
        const auto *p = reinterpret_cast<const sockaddr_in *>(&a);
        inet_ntop(AF_INET, &p->sin_addr, buf, sizeof buf);
        port = ntohs(p->sin_port);
    } else if (a.ss_family == AF_INET6) {
        const auto *p = reinterpret_cast<const sockaddr_in6 *>(&a);
        inet_ntop(AF_INET6, &p->sin6_addr, buf, sizeof buf);
        port = ntohs(p->sin6_port);
    } else {
        port = -1;
    }
    ip = buf;
}

const char *reason(int status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 408:
            return "Request Timeout";
        case 413:
            return "Payload Too Large";
        case 431:
            return "Request Header Fields Too Large";
        case 501:
            return "Not Implemented";
        case 503:
            return "Service Unavailable";
        default:
            return "Error";
    }
}

// Writes all of `data` to a non-blocking socket, waiting up to timeout_ms for room each time.
ssize_t write_all(int fd, const char *data, size_t size, int timeout_ms) {
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::send(fd, data + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{fd, POLLOUT, 0};
            const int r = ::poll(&p, 1, timeout_ms);
            if (r <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return -1;
            continue;
        }
        return -1;
    }
    return static_cast<ssize_t>(size);
}

}  // namespace

int current_connection_fd() {
    return t_connection_fd;
}

// One client connection. The loop thread owns it, except while a worker runs its request (busy).
struct Conn {
    enum Phase { Head, Body, Busy, Draining } phase = Head;
    int fd = -1;
    std::string peer, local;
    int peer_port = -1, local_port = -1;
    Clock::time_point accepted, deadline;
    bool started = false;  // Head: a byte of this request has come (else the connection is idle)
    std::string in;        // bytes read and not used yet
    int served = 0;        // requests answered on this connection
    // The request being read.
    std::string head;  // as httplib will see it (no Transfer-Encoding, no Expect, a Content-Length)
    RequestHead info;
    bool chunked = false;
    uint64_t content_length = 0;
    std::string body;
    enum ChunkState { Size, Data, DataEnd, Trailer } chunk = Size;
    uint64_t chunk_left = 0;
    size_t trailer_bytes = 0;
    size_t drained = 0;
    bool keep = false;  // after its request: whether the connection stays open
    // For the worker: the whole request, and how much httplib has read of it.
    std::string request;
    size_t read_pos = 0;
};

namespace {

// What httplib reads and writes through: the request from memory, the response to the socket.
class ConnStream : public httplib::Stream {
  public:
    ConnStream(Conn &c, int write_timeout_ms) : c_(c), timeout_ms_(write_timeout_ms) {}
    bool is_readable() const override { return c_.read_pos < c_.request.size(); }
    bool is_writable() const override {
        pollfd p{c_.fd, POLLOUT, 0};
        return ::poll(&p, 1, timeout_ms_) > 0 && (p.revents & POLLOUT) &&
               !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
    }
    ssize_t read(char *ptr, size_t size) override {
        const size_t n = std::min(size, c_.request.size() - c_.read_pos);
        std::memcpy(ptr, c_.request.data() + c_.read_pos, n);
        c_.read_pos += n;
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char *ptr, size_t size) override { return write_all(c_.fd, ptr, size, timeout_ms_); }
    void get_remote_ip_and_port(std::string &ip, int &port) const override {
        ip = c_.peer;
        port = c_.peer_port;
    }
    void get_local_ip_and_port(std::string &ip, int &port) const override {
        ip = c_.local;
        port = c_.local_port;
    }
    socket_t socket() const override { return c_.fd; }

  private:
    Conn &c_;
    int timeout_ms_;
};

}  // namespace

struct HttpFront::Impl {
    FrontOptions opts;
    HttpRunner &server;
    std::function<EarlyAnswer(const RequestHead &)> check;
    bool log;
    std::string error;
    int listen_fd = -1;
    int epoll_fd = -1;
    int wake_fd = -1;
    std::atomic<bool> stopping{false};
    std::unordered_map<int, std::unique_ptr<Conn>> conns;  // loop thread only
    std::map<std::string, int> per_client;                 // loop thread only
    std::unique_ptr<httplib::ThreadPool> pool;
    // Connections the workers hand back, and whether the loop still takes them.
    std::mutex mu;
    std::vector<Conn *> returned;
    bool loop_open = false;

    Impl(const FrontOptions &o, HttpRunner &s, std::function<EarlyAnswer(const RequestHead &)> c, bool l)
        : opts(o), server(s), check(std::move(c)), log(l) {}

    void wake() {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
    }

    void watch(Conn &c) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = c.fd;
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c.fd, &ev);
    }

    void close_conn(int fd) {
        auto it = conns.find(fd);
        if (it == conns.end()) return;
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
        if (--per_client[it->second->peer] <= 0) per_client.erase(it->second->peer);
        ::close(fd);
        conns.erase(it);
    }

    // The front's own answer; the connection stops reading requests, is drained briefly (so the client
    // sees the answer rather than a reset) and closes.
    void answer_and_close(Conn &c, int status, const std::string &message, const std::string &type) {
        const std::string body = dump(error_json(status, message, type));
        std::string resp = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                           "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\nConnection: close\r\n";
        if (status == 503) resp += "Retry-After: 1\r\n";
        if (status == 401 || status == 503) resp += "Access-Control-Allow-Origin: *\r\n";
        resp += "\r\n" + body;
        if (log)
            std::fprintf(stderr, "lctx serve: %s %s %d 0 tokens 0 ms (%s)\n",
                         c.info.method.empty() ? "-" : c.info.method.c_str(),
                         c.info.path.empty() ? "-" : c.info.path.c_str(), status, message.c_str());
        (void)!::send(c.fd, resp.data(), resp.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::shutdown(c.fd, SHUT_WR);
        c.phase = Conn::Draining;
        c.in.clear();
        c.in.shrink_to_fit();
        c.body.clear();
        c.body.shrink_to_fit();
        c.deadline = Clock::now() + std::chrono::milliseconds(1000);
    }

    void accept_all() {
        for (;;) {
            sockaddr_storage peer{};
            socklen_t pl = sizeof peer;
            const int fd =
                ::accept4(listen_fd, reinterpret_cast<sockaddr *>(&peer), &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                return;  // EAGAIN, or out of descriptors (the next round tries again)
            }
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            auto c = std::make_unique<Conn>();
            c->fd = fd;
            address_of(peer, c->peer, c->peer_port);
            sockaddr_storage self{};
            socklen_t sl = sizeof self;
            getsockname(fd, reinterpret_cast<sockaddr *>(&self), &sl);
            address_of(self, c->local, c->local_port);
            c->accepted = Clock::now();
            c->deadline = c->accepted + std::chrono::milliseconds(opts.head_timeout_ms);
            Conn &ref = *c;
            conns.emplace(fd, std::move(c));
            per_client[ref.peer]++;
            watch(ref);
            // Over a bound, the oldest connection that is only waiting or sending (never one whose request
            // runs) makes room; when every one of them runs a request, the newcomer gets 503.
            if (per_client[ref.peer] > opts.max_per_client) make_room(ref, &ref.peer);
            if (static_cast<int>(conns.size()) > opts.max_connections) make_room(ref, nullptr);
        }
    }

    void make_room(Conn &newcomer, const std::string *peer) {
        Conn *oldest = nullptr;
        for (auto &[fd, c] : conns) {
            if (c.get() == &newcomer || c->phase == Conn::Busy) continue;
            if (peer && c->peer != *peer) continue;
            if (!oldest || c->accepted < oldest->accepted) oldest = c.get();
        }
        if (oldest) {
            close_conn(oldest->fd);
            return;
        }
        answer_and_close(newcomer, 503,
                         peer ? "too many connections from this address" : "too many connections",
                         "unavailable_error");
    }

    // Parses a complete head (`end`: its length with the blank line). False after answering.
    bool parse_head(Conn &c, size_t end) {
        std::vector<std::string> lines;
        size_t pos = 0;
        while (pos < end) {
            size_t nl = c.in.find('\n', pos);
            if (nl == std::string::npos || nl >= end) nl = end;
            std::string line = c.in.substr(pos, nl - pos);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            pos = nl + 1;
            if (line.empty() && lines.empty()) continue;  // blank lines before a request are allowed
            if (line.empty()) break;
            lines.push_back(std::move(line));
        }
        c.info = RequestHead{};
        if (lines.empty()) {
            answer_and_close(c, 400, "the request has no request line", "invalid_request_error");
            return false;
        }
        if (static_cast<int>(lines.size()) - 1 > opts.max_headers) {
            answer_and_close(c, 431, "more than " + std::to_string(opts.max_headers) + " header lines",
                             "invalid_request_error");
            return false;
        }
        const std::string &rl = lines[0];
        const size_t sp1 = rl.find(' '), sp2 = rl.rfind(' ');
        if (sp1 == std::string::npos || sp2 == sp1 || rl.compare(sp2 + 1, 5, "HTTP/") != 0) {
            answer_and_close(c, 400, "the request line is not 'METHOD TARGET HTTP/1.1'",
                             "invalid_request_error");
            return false;
        }
        c.info.method = rl.substr(0, sp1);
        const std::string target = rl.substr(sp1 + 1, sp2 - sp1 - 1);
        c.info.path = target.substr(0, target.find('?'));
        bool has_length = false, has_te = false, expect_continue = false;
        c.chunked = false;
        c.content_length = 0;
        std::string head = rl + "\r\n";
        for (size_t i = 1; i < lines.size(); ++i) {
            const std::string &l = lines[i];
            const size_t colon = l.find(':');
            if (colon == std::string::npos || colon == 0 || l[0] == ' ' || l[0] == '\t' ||
                l.find_first_of(" \t") < colon) {
                answer_and_close(c, 400, "a header line is not 'Name: value'", "invalid_request_error");
                return false;
            }
            const std::string name = l.substr(0, colon);
            std::string value = trim(l.substr(colon + 1));
            if (iequals(name, "Content-Length")) {
                if (value.empty() || value.size() > 18 ||
                    value.find_first_not_of("0123456789") != std::string::npos ||
                    (has_length && std::stoull(value) != c.content_length)) {
                    answer_and_close(c, 400, "Content-Length is not a number", "invalid_request_error");
                    return false;
                }
                has_length = true;
                c.content_length = std::stoull(value);
                continue;
            }
            if (iequals(name, "Transfer-Encoding")) {
                if (lower(value) != "chunked") {
                    answer_and_close(c, 501, "the only transfer coding accepted is chunked",
                                     "invalid_request_error");
                    return false;
                }
                has_te = c.chunked = true;
                continue;
            }
            if (iequals(name, "Expect")) {
                expect_continue = lower(value) == "100-continue";
                continue;
            }
            // A form type is what `curl --data` sends without -H: the body is JSON all the same, as for
            // llama-server (httplib would parse it as a form, and refuse one over 8 KB).
            if (iequals(name, "Content-Type") &&
                lower(value).rfind("application/x-www-form-urlencoded", 0) == 0)
                value = "application/json";
            c.info.headers.emplace(name, value);
            head += name + ": " + value + "\r\n";
        }
        if (has_length && has_te) {
            answer_and_close(c, 400, "a request may not carry both Content-Length and Transfer-Encoding",
                             "invalid_request_error");
            return false;
        }
        c.head = std::move(head);
        const EarlyAnswer early = check ? check(c.info) : EarlyAnswer{};
        if (early.status != 0) {
            answer_and_close(c, early.status, early.message, early.type);
            return false;
        }
        if (c.content_length > opts.max_body) {
            answer_and_close(c, 413,
                             "the request body is larger than " + std::to_string(opts.max_body) + " bytes",
                             "invalid_request_error");
            return false;
        }
        if (expect_continue && (c.chunked || c.content_length > 0)) {
            static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
            (void)!::send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        c.in.erase(0, end);
        c.body.clear();
        c.chunk = Conn::Size;
        c.chunk_left = 0;
        c.trailer_bytes = 0;
        c.phase = Conn::Body;
        c.deadline = Clock::now() + std::chrono::milliseconds(opts.body_timeout_ms);
        return true;
    }

    // Decodes what has come of a chunked body. 1: complete, 0: more to come, -1: answered.
    int decode_chunks(Conn &c) {
        size_t pos = 0;
        int state = 0;
        while (state == 0) {
            if (c.chunk == Conn::Size || c.chunk == Conn::DataEnd || c.chunk == Conn::Trailer) {
                const size_t nl = c.in.find('\n', pos);
                if (nl == std::string::npos) {
                    if (c.in.size() - pos > 4096) {
                        answer_and_close(c, 400, "a chunk line is too long", "invalid_request_error");
                        return -1;
                    }
                    break;
                }
                std::string line = c.in.substr(pos, nl - pos);
                if (!line.empty() && line.back() == '\r') line.pop_back();
                pos = nl + 1;
                if (c.chunk == Conn::DataEnd) {
                    if (!line.empty()) {
                        answer_and_close(c, 400, "a chunk does not end with CRLF", "invalid_request_error");
                        return -1;
                    }
                    c.chunk = Conn::Size;
                } else if (c.chunk == Conn::Trailer) {
                    c.trailer_bytes += line.size() + 2;
                    if (c.trailer_bytes > opts.max_head) {
                        answer_and_close(
                            c, 431, "the trailer is larger than " + std::to_string(opts.max_head) + " bytes",
                            "invalid_request_error");
                        return -1;
                    }
                    if (line.empty()) state = 1;
                } else {
                    const std::string size = trim(line.substr(0, line.find(';')));
                    if (size.empty() || size.size() > 15 ||
                        size.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
                        answer_and_close(c, 400, "a chunk size is not a hexadecimal number",
                                         "invalid_request_error");
                        return -1;
                    }
                    c.chunk_left = std::stoull(size, nullptr, 16);
                    if (c.body.size() + c.chunk_left > opts.max_body) {
                        answer_and_close(
                            c, 413,
                            "the request body is larger than " + std::to_string(opts.max_body) + " bytes",
                            "invalid_request_error");
                        return -1;
                    }
                    c.chunk = c.chunk_left == 0 ? Conn::Trailer : Conn::Data;
                }
            } else {  // Data
                const size_t n = std::min<uint64_t>(c.chunk_left, c.in.size() - pos);
                c.body.append(c.in, pos, n);
                pos += n;
                c.chunk_left -= n;
                if (c.chunk_left > 0) break;
                c.chunk = Conn::DataEnd;
            }
        }
        c.in.erase(0, pos);
        return state;
    }

    // Reads what the socket has and moves the connection on.
    void on_readable(Conn &c) {
        char buf[65536];
        for (;;) {
            size_t want = sizeof buf;
            // A head is read no further than one byte past its limit.
            if (c.phase == Conn::Head)
                want = std::min(want, opts.max_head + 1 - std::min(c.in.size(), opts.max_head));
            if (c.phase == Conn::Body && !c.chunked)
                want = std::min<uint64_t>(
                    want, std::max<uint64_t>(
                              1, c.content_length - std::min<uint64_t>(c.content_length, c.in.size())));
            const ssize_t n = ::recv(c.fd, buf, want, 0);
            if (n == 0) {
                close_conn(c.fd);  // the client closed (mid-request: nobody is left to answer)
                return;
            }
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) return;
                close_conn(c.fd);
                return;
            }
            if (c.phase == Conn::Draining) {
                c.drained += static_cast<size_t>(n);
                if (c.drained > (1u << 20)) {
                    close_conn(c.fd);
                    return;
                }
                continue;
            }
            c.in.append(buf, static_cast<size_t>(n));
            if (!advance(c)) return;
        }
    }

    // Moves a connection on with the bytes it has. False when it left the loop's hands (busy, closed) or
    // answered.
    bool advance(Conn &c) {
        for (;;) {
            if (c.phase == Conn::Head) {
                if (c.in.empty()) return true;
                if (!c.started) {
                    c.started = true;
                    c.deadline = Clock::now() + std::chrono::milliseconds(opts.head_timeout_ms);
                }
                size_t end = std::string::npos;
                size_t lines = 0;
                for (size_t i = 0; i < c.in.size(); ++i) {
                    if (c.in[i] != '\n') continue;
                    ++lines;
                    if (i + 1 < c.in.size() && c.in[i + 1] == '\n') {
                        end = i + 2;
                        break;
                    }
                    if (i + 2 < c.in.size() && c.in[i + 1] == '\r' && c.in[i + 2] == '\n') {
                        end = i + 3;
                        break;
                    }
                }
                if (end == std::string::npos) {
                    if (c.in.size() > opts.max_head) {
                        answer_and_close(
                            c, 431,
                            "the request head is larger than " + std::to_string(opts.max_head) + " bytes",
                            "invalid_request_error");
                        return false;
                    }
                    if (static_cast<int>(lines) > opts.max_headers + 1) {
                        answer_and_close(c, 431,
                                         "more than " + std::to_string(opts.max_headers) + " header lines",
                                         "invalid_request_error");
                        return false;
                    }
                    return true;
                }
                if (end > opts.max_head + 1) {
                    answer_and_close(
                        c, 431, "the request head is larger than " + std::to_string(opts.max_head) + " bytes",
                        "invalid_request_error");
                    return false;
                }
                if (!parse_head(c, end)) return false;
            }
            if (c.phase == Conn::Body) {
                if (c.chunked) {
                    const int st = decode_chunks(c);
                    if (st < 0) return false;
                    if (st == 0) return true;
                } else {
                    if (c.in.size() < c.content_length) return true;
                    c.body.assign(c.in, 0, c.content_length);
                    c.in.erase(0, c.content_length);
                }
                dispatch(c);
                return false;
            }
            return true;
        }
    }

    // Hands a complete request to a worker.
    void dispatch(Conn &c) {
        const bool has_body =
            !c.body.empty() || c.info.method == "POST" || c.info.method == "PUT" || c.info.method == "PATCH";
        c.request = std::move(c.head);
        if (has_body) c.request += "Content-Length: " + std::to_string(c.body.size()) + "\r\n";
        c.request += "\r\n";
        c.request += c.body;
        c.body.clear();
        c.body.shrink_to_fit();
        c.read_pos = 0;
        c.phase = Conn::Busy;
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
        Conn *cp = &c;
        pool->enqueue([this, cp] { run_request(*cp); });
    }

    // On a worker thread.
    void run_request(Conn &c) {
        t_connection_fd = c.fd;
        bool keep = false;
        try {
            ConnStream strm(c, opts.write_timeout_ms);
            bool closed = false;
            const bool last = ++c.served >= opts.keep_alive_max || stopping;
            const bool ok = server.process_request(strm, last, closed, nullptr);
            keep = ok && !closed && !last;
        } catch (...) {
            keep = false;
        }
        t_connection_fd = -1;
        c.request.clear();
        c.request.shrink_to_fit();
        std::lock_guard<std::mutex> lk(mu);
        c.keep = keep;
        returned.push_back(&c);
        if (loop_open) wake();
    }

    // Back from a worker: the next request (perhaps already read), or the end.
    void take_back(Conn &c) {
        char probe;
        if (stopping || !c.keep || ::recv(c.fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
            close_conn(c.fd);
            return;
        }
        c.phase = Conn::Head;
        c.started = false;
        c.info = RequestHead{};
        c.deadline = Clock::now() + std::chrono::milliseconds(opts.idle_timeout_ms);
        watch(c);
        if (advance(c)) on_readable(c);
    }

    void expire() {
        const Clock::time_point now = Clock::now();
        std::vector<int> late;
        for (auto &[fd, c] : conns)
            if (c->phase != Conn::Busy && now >= c->deadline) late.push_back(fd);
        for (int fd : late) {
            Conn &c = *conns[fd];
            if (c.phase == Conn::Head && c.started)
                answer_and_close(
                    c, 408,
                    "the request head did not arrive within " + std::to_string(opts.head_timeout_ms) + " ms",
                    "invalid_request_error");
            else if (c.phase == Conn::Body)
                answer_and_close(
                    c, 408,
                    "the request body did not arrive within " + std::to_string(opts.body_timeout_ms) + " ms",
                    "invalid_request_error");
            else
                close_conn(fd);  // idle, or drained long enough
        }
    }

    bool run() {
        if (listen_fd < 0) return false;
        {
            std::lock_guard<std::mutex> lk(mu);
            loop_open = true;
        }
        pool = std::make_unique<httplib::ThreadPool>(static_cast<size_t>(std::max(1, opts.workers)));
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = listen_fd;
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
        ev.data.fd = wake_fd;
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);
        Clock::time_point last_scan = Clock::now();
        std::vector<epoll_event> evs(256);
        while (!stopping) {
            const int n = epoll_wait(epoll_fd, evs.data(), static_cast<int>(evs.size()), 100);
            for (int i = 0; i < n; ++i) {
                const int fd = evs[static_cast<size_t>(i)].data.fd;
                if (fd == listen_fd) {
                    accept_all();
                } else if (fd == wake_fd) {
                    uint64_t v;
                    [[maybe_unused]] ssize_t r = ::read(wake_fd, &v, sizeof v);
                } else {
                    auto it = conns.find(fd);
                    if (it != conns.end() && it->second->phase != Conn::Busy) on_readable(*it->second);
                }
            }
            std::vector<Conn *> back;
            {
                std::lock_guard<std::mutex> lk(mu);
                back.swap(returned);
            }
            for (Conn *c : back) take_back(*c);
            if (Clock::now() - last_scan >= std::chrono::milliseconds(100)) {
                expire();
                last_scan = Clock::now();
            }
        }
        // Stopping: no new connection; those not running a request close; the workers finish theirs.
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
        ::close(listen_fd);
        listen_fd = -1;
        std::vector<int> idle;
        for (auto &[fd, c] : conns)
            if (c->phase != Conn::Busy) idle.push_back(fd);
        for (int fd : idle) close_conn(fd);
        pool->shutdown();  // joins the workers
        pool.reset();
        {
            std::lock_guard<std::mutex> lk(mu);
            loop_open = false;
            returned.clear();
        }
        std::vector<int> rest;
        for (auto &[fd, c] : conns) rest.push_back(fd);
        for (int fd : rest) close_conn(fd);
        return true;
    }
};

HttpFront::HttpFront(const FrontOptions &opts, HttpRunner &server,
                     std::function<EarlyAnswer(const RequestHead &)> check, bool log)
    : impl_(std::make_unique<Impl>(opts, server, std::move(check), log)) {
    impl_->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    impl_->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

HttpFront::~HttpFront() {
    stop();
    if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
    if (impl_->epoll_fd >= 0) ::close(impl_->epoll_fd);
    if (impl_->wake_fd >= 0) ::close(impl_->wake_fd);
}

int HttpFront::bind() {
    Impl &I = *impl_;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo *res = nullptr;
    const std::string port = std::to_string(I.opts.port);
    const int gai =
        getaddrinfo(I.opts.host.empty() ? nullptr : I.opts.host.c_str(), port.c_str(), &hints, &res);
    if (gai != 0) {
        I.error = std::string("cannot resolve ") + I.opts.host + ": " + gai_strerror(gai);
        return -1;
    }
    int fd = -1;
    for (addrinfo *a = res; a; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) break;
        I.error = std::string("cannot listen: ") + std::strerror(errno);
        ::close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) return -1;
    sockaddr_storage self{};
    socklen_t sl = sizeof self;
    getsockname(fd, reinterpret_cast<sockaddr *>(&self), &sl);
    std::string ip;
    int bound = -1;
    address_of(self, ip, bound);
    I.listen_fd = fd;
    I.server.set_listener(fd);
    // Every connection is a descriptor: raise the soft limit to the hard one, and keep the connection bound
    // below it (with room for the model's files and the workers' own).
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 128)
            I.opts.max_connections = static_cast<int>(
                std::min<rlim_t>(static_cast<rlim_t>(I.opts.max_connections), rl.rlim_cur - 128));
    }
    return bound;
}

const std::string &HttpFront::error() const {
    return impl_->error;
}

bool HttpFront::run() {
    return impl_->run();
}

void HttpFront::stop() {
    impl_->stopping = true;
    if (impl_->wake_fd >= 0) impl_->wake();
}

}  // namespace lctx::server
