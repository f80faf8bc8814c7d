#include "server/kv_events.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#if LCTX_KV_EVENTS
#include <msgpack.hpp>  // MSGPACK_NO_BOOST comes from the build
#include <zmq.hpp>
#endif

namespace lctx::server {

// ---- endpoint ----

KvEndpoint parse_kv_endpoint(const std::string &endpoint) {
    auto bad = [&](const std::string &why) {
        return std::runtime_error("--kv-events '" + endpoint + "': " + why +
                                  " (expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:5557)");
    };
    const std::string scheme = "tcp://";
    if (endpoint.rfind(scheme, 0) != 0) throw bad("only tcp:// endpoints are supported");
    const std::string rest = endpoint.substr(scheme.size());
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) throw bad("no port");
    KvEndpoint ep;
    ep.host = rest.substr(0, colon);
    const std::string port = rest.substr(colon + 1);
    if (ep.host.empty()) throw bad("no host");
    if (ep.host.front() == '[' ? ep.host.back() != ']' || ep.host.size() < 3
                               : ep.host.find_first_of("[]:/ ") != std::string::npos)
        throw bad("'" + ep.host + "' is not a host");
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
        throw bad("'" + port + "' is not a port");
    ep.port = std::stoi(port);
    if (ep.port < 1 || ep.port > 65535) throw bad("the port must be in 1..65535");
    return ep;
}

#if LCTX_KV_EVENTS
// ---- encoding ----

std::string encode_kv_batch(double ts, const std::vector<KvEvent> &events, int32_t dp_rank) {
    msgpack::sbuffer buf;
    msgpack::packer<msgpack::sbuffer> pk(buf);
    auto str = [&](const char *s) {
        const size_t n = std::strlen(s);
        pk.pack_str(static_cast<uint32_t>(n));
        pk.pack_str_body(s, static_cast<uint32_t>(n));
    };
    auto hashes = [&](const std::vector<uint64_t> &h) {
        pk.pack_array(static_cast<uint32_t>(h.size()));
        for (uint64_t x : h) pk.pack_uint64(x);
    };
    pk.pack_array(3);
    pk.pack_double(ts);
    pk.pack_array(static_cast<uint32_t>(events.size()));
    for (const KvEvent &e : events) {
        switch (e.kind) {
            case KvEvent::Stored:
                pk.pack_array(7);
                str("BlockStored");
                hashes(e.hashes);
                if (e.parent)
                    pk.pack_uint64(*e.parent);
                else
                    pk.pack_nil();
                pk.pack_array(static_cast<uint32_t>(e.tokens.size()));
                for (int32_t t : e.tokens) pk.pack_int32(t);
                pk.pack_int32(e.block_size);
                if (e.lora_id)
                    pk.pack_int32(*e.lora_id);
                else
                    pk.pack_nil();
                str(kKvMedium);
                break;
            case KvEvent::Removed:
                pk.pack_array(3);
                str("BlockRemoved");
                hashes(e.hashes);
                str(kKvMedium);
                break;
            case KvEvent::Cleared:
                pk.pack_array(1);
                str("AllBlocksCleared");
                break;
        }
    }
    pk.pack_int32(dp_rank);
    return std::string(buf.data(), buf.size());
}
#endif

// ---- tracker ----

namespace {
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;
void fnv_bytes(uint64_t &h, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
        h ^= (v >> (8 * i)) & 0xffu;
        h *= kFnvPrime;
    }
}
}  // namespace

uint64_t KvBlockTracker::root(uint64_t lora_key) {
    uint64_t h = kFnvOffset;
    fnv_bytes(h, 0x6c6374786b76ull, 6);  // "lctxkv": no parent
    fnv_bytes(h, lora_key, 8);
    return h;
}

uint64_t KvBlockTracker::block_hash(uint64_t parent, const int32_t *tokens, int32_t n) {
    uint64_t h = kFnvOffset;
    fnv_bytes(h, parent, 8);
    for (int32_t i = 0; i < n; ++i) fnv_bytes(h, static_cast<uint32_t>(tokens[i]), 4);
    return h;
}

KvBlockTracker::KvBlockTracker(int32_t block_size, int32_t n_slots)
    : block_size_(block_size), slots_(static_cast<size_t>(n_slots)) {}

void KvBlockTracker::store_run(const SlotBlocks &s, size_t first, size_t last) {
    if (first >= last) return;
    KvEvent e;
    e.kind = KvEvent::Stored;
    e.hashes.assign(s.hashes.begin() + static_cast<std::ptrdiff_t>(first),
                    s.hashes.begin() + static_cast<std::ptrdiff_t>(last));
    if (first > 0) e.parent = s.hashes[first - 1];
    const size_t bs = static_cast<size_t>(block_size_);
    e.tokens.assign(s.tokens.begin() + static_cast<std::ptrdiff_t>(first * bs),
                    s.tokens.begin() + static_cast<std::ptrdiff_t>(last * bs));
    e.block_size = block_size_;
    e.lora_id = s.lora_id;
    pending_.push_back(std::move(e));
}

void KvBlockTracker::set_slot(int32_t slot, const int32_t *tokens, size_t n, uint64_t lora_key,
                              std::optional<int32_t> lora_id) {
    SlotBlocks &s = slots_.at(static_cast<size_t>(slot));
    const size_t bs = static_cast<size_t>(block_size_);
    const size_t n_new = n / bs, n_old = s.hashes.size();
    // The blocks both hold: those before the first token that differs (all differ under other adapters).
    size_t same = 0;
    if (lora_key == s.lora_key) {
        const size_t lim = std::min(n_new, n_old) * bs;
        size_t i = 0;
        while (i < lim && s.tokens[i] == tokens[i]) ++i;
        same = i / bs;
    }
    if (same == n_old && same == n_new) return;
    // Removed: the old blocks past `same` that no other slot holds.
    KvEvent rm;
    rm.kind = KvEvent::Removed;
    for (size_t b = same; b < n_old; ++b) {
        auto it = refs_.find(s.hashes[b]);
        if (it != refs_.end() && --it->second == 0) {
            rm.hashes.push_back(s.hashes[b]);
            refs_.erase(it);
        }
    }
    if (!rm.hashes.empty()) pending_.push_back(std::move(rm));
    s.tokens.resize(same * bs);
    s.hashes.resize(same);
    s.lora_key = lora_key;
    s.lora_id = lora_id;
    // Stored: the new blocks, in runs of those no other slot held already.
    s.tokens.insert(s.tokens.end(), tokens + same * bs, tokens + n_new * bs);
    uint64_t parent = same > 0 ? s.hashes[same - 1] : root(lora_key);
    size_t run = same;
    for (size_t b = same; b < n_new; ++b) {
        parent = block_hash(parent, tokens + b * bs, block_size_);
        s.hashes.push_back(parent);
        if (refs_[parent]++ > 0) {  // already held by another slot: not announced again
            store_run(s, run, b);
            run = b + 1;
        }
    }
    store_run(s, run, n_new);
}

void KvBlockTracker::clear_all() {
    for (SlotBlocks &s : slots_) s = SlotBlocks{};
    refs_.clear();
    pending_.clear();  // everything before is moot
    KvEvent e;
    e.kind = KvEvent::Cleared;
    pending_.push_back(std::move(e));
}

void KvBlockTracker::resync() {
    pending_.clear();
    KvEvent e;
    e.kind = KvEvent::Cleared;
    pending_.push_back(std::move(e));
    std::unordered_map<uint64_t, int32_t> seen;
    for (const SlotBlocks &s : slots_) {
        size_t run = 0;
        for (size_t b = 0; b < s.hashes.size(); ++b)
            if (seen[s.hashes[b]]++ > 0) {
                store_run(s, run, b);
                run = b + 1;
            }
        store_run(s, run, s.hashes.size());
    }
}

std::vector<KvEvent> KvBlockTracker::take() {
    std::vector<KvEvent> out;
    out.swap(pending_);
    return out;
}

// ---- publisher ----

#if LCTX_KV_EVENTS

struct KvEventPublisher::Zmq {
    zmq::context_t ctx{1};
    zmq::socket_t sock{ctx, zmq::socket_type::pub};
};

KvEventPublisher::KvEventPublisher(const std::string &endpoint, std::string topic,
                                   std::atomic<uint64_t> *dropped, size_t max_batches, bool start_sender)
    : topic_(std::move(topic)), dropped_(dropped), max_batches_(std::max<size_t>(max_batches, 1)) {
    parse_kv_endpoint(endpoint);
    zmq_ = std::make_unique<Zmq>();
    try {
        zmq_->sock.set(zmq::sockopt::linger, 1000);
        zmq_->sock.set(zmq::sockopt::sndhwm, 100000);
        zmq_->sock.bind(endpoint);
    } catch (const zmq::error_t &e) {
        throw std::runtime_error("--kv-events '" + endpoint + "': cannot bind: " + e.what());
    }
    if (start_sender) start();
}

void KvEventPublisher::start() {
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

KvEventPublisher::~KvEventPublisher() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

bool KvEventPublisher::publish(std::vector<KvEvent> events) {
    if (events.empty()) return true;
    const double ts =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    {
        std::lock_guard<std::mutex> lk(mu_);
        const uint64_t seq = seq_++;  // a dropped batch leaves a gap the subscriber can see
        if (queue_.size() >= max_batches_) {
            if (dropped_) *dropped_ += events.size();
            resync_ = true;
            return false;
        }
        queue_.push_back({seq, ts, std::move(events)});
    }
    cv_.notify_one();
    return true;
}

bool KvEventPublisher::take_resync() {
    return resync_.exchange(false);
}

void KvEventPublisher::run() {
    for (;;) {
        std::deque<Batch> work;
        {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty() && stopping_) break;
            work.swap(queue_);
        }
        for (const Batch &b : work) {
            const std::string payload = encode_kv_batch(b.ts, b.events, 0);
            unsigned char seq[8];
            for (int i = 0; i < 8; ++i) seq[i] = static_cast<unsigned char>(b.seq >> (8 * (7 - i)));
            try {
                // A PUB socket drops (never blocks) when a subscriber is too slow.
                zmq_->sock.send(zmq::buffer(topic_), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
                zmq_->sock.send(zmq::buffer(seq, sizeof seq),
                                zmq::send_flags::sndmore | zmq::send_flags::dontwait);
                zmq_->sock.send(zmq::buffer(payload), zmq::send_flags::dontwait);
            } catch (const zmq::error_t &) {
                if (dropped_) *dropped_ += b.events.size();
            }
        }
    }
    zmq_->sock.close();
    zmq_->ctx.close();
}

#else
struct KvEventPublisher::Zmq {};

KvEventPublisher::KvEventPublisher(const std::string &endpoint, std::string, std::atomic<uint64_t> *, size_t,
                                   bool) {
    parse_kv_endpoint(endpoint);
    throw std::runtime_error(
        "--kv-events: this build has no ZMQ and msgpack (libzmq3-dev, cppzmq-dev and "
        "libmsgpack-cxx-dev were missing when it was configured)");
}
KvEventPublisher::~KvEventPublisher() = default;
bool KvEventPublisher::publish(std::vector<KvEvent>) {
    return false;
}
bool KvEventPublisher::take_resync() {
    return false;
}
void KvEventPublisher::start() {}
void KvEventPublisher::run() {}
#endif

}  // namespace lctx::server
