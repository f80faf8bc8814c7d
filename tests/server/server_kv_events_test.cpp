// KV-cache events (--kv-events): a ZMQ subscriber reads what `lctx serve` publishes while requests run and
// checks vLLM's wire format, that every stored block holds the tokens the slot holds, that removals and
// clears arrive, and that the index rebuilt from the events is the replica's caches.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "server/kv_events.h"
#include "server_fixture.h"

#if LCTX_KV_EVENTS
#include <msgpack.hpp>
#include <zmq.hpp>

namespace server_kv_events_test {
namespace {

using lctx::testing::LocalServer;
using nlohmann::json;
namespace server = lctx::server;
using Tokens = std::vector<int32_t>;

int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

struct Ev {
    std::string type;
    std::vector<uint64_t> hashes;
    std::optional<uint64_t> parent;
    Tokens tokens;
    int64_t block_size = 0;
    bool lora_nil = false;
    std::string medium;
};

struct Msg {
    std::string topic;
    uint64_t seq = 0;
    double ts = 0;
    std::vector<Ev> events;
    int64_t dp_rank = -1;
};

// Decodes one message's frames the way a subscriber that knows only vLLM's format does; fails the test on
// anything else.
Msg decode(const std::vector<zmq::message_t> &frames) {
    Msg m;
    EXPECT_EQ(frames.size(), 3u);
    if (frames.size() != 3) return m;
    m.topic = frames[0].to_string();
    EXPECT_EQ(frames[1].size(), 8u);
    const auto *b = static_cast<const unsigned char *>(frames[1].data());
    for (size_t i = 0; i < 8 && i < frames[1].size(); ++i) m.seq = (m.seq << 8) | b[i];
    msgpack::object_handle oh =
        msgpack::unpack(static_cast<const char *>(frames[2].data()), frames[2].size());
    const msgpack::object &o = oh.get();
    EXPECT_EQ(o.type, msgpack::type::ARRAY);
    EXPECT_EQ(o.via.array.size, 3u);
    if (o.type != msgpack::type::ARRAY || o.via.array.size != 3) return m;
    m.ts = o.via.array.ptr[0].as<double>();
    m.dp_rank = o.via.array.ptr[2].as<int64_t>();
    const msgpack::object &evs = o.via.array.ptr[1];
    EXPECT_EQ(evs.type, msgpack::type::ARRAY);
    for (uint32_t i = 0; i < evs.via.array.size; ++i) {
        const msgpack::object &e = evs.via.array.ptr[i];
        EXPECT_EQ(e.type, msgpack::type::ARRAY);
        Ev ev;
        const msgpack::object *f = e.via.array.ptr;
        const uint32_t n = e.via.array.size;
        ev.type = f[0].as<std::string>();
        if (ev.type == "BlockStored") {
            EXPECT_EQ(n, 7u);
            if (n != 7) continue;
            ev.hashes = f[1].as<std::vector<uint64_t>>();
            if (f[2].type != msgpack::type::NIL) ev.parent = f[2].as<uint64_t>();
            ev.tokens = f[3].as<Tokens>();
            ev.block_size = f[4].as<int64_t>();
            ev.lora_nil = f[5].type == msgpack::type::NIL;
            ev.medium = f[6].as<std::string>();
        } else if (ev.type == "BlockRemoved") {
            EXPECT_EQ(n, 3u);
            if (n != 3) continue;
            ev.hashes = f[1].as<std::vector<uint64_t>>();
            ev.medium = f[2].as<std::string>();
        } else {
            EXPECT_EQ(ev.type, "AllBlocksCleared");
            EXPECT_EQ(n, 1u);
        }
        m.events.push_back(std::move(ev));
    }
    return m;
}

// A subscriber that rebuilds the replica's blocks from the events: each block's whole token prefix (its
// parents' tokens, then its own), as a router's index knows it.
class Subscriber {
  public:
    explicit Subscriber(const std::string &endpoint) : sock_(ctx_, zmq::socket_type::sub) {
        sock_.set(zmq::sockopt::subscribe, "");
        sock_.connect(endpoint);
    }
    // Reads messages until `done` holds or timeout_ms pass; true when done held.
    template <typename F>
    bool read_until(F done, int timeout_ms = 5000) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        while (!done()) {
            if (std::chrono::steady_clock::now() > end) return false;
            read(50);
        }
        return true;
    }
    void read(int ms) {
        zmq::pollitem_t it{sock_.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&it, 1, std::chrono::milliseconds(ms)) <= 0) return;
        while (true) {
            std::vector<zmq::message_t> frames;
            zmq::message_t f;
            if (!sock_.recv(f, zmq::recv_flags::dontwait)) break;
            frames.push_back(std::move(f));
            while (frames.back().more()) {
                zmq::message_t g;
                (void)sock_.recv(g);
                frames.push_back(std::move(g));
            }
            apply(decode(frames));
        }
    }
    void apply(const Msg &m) {
        msgs.push_back(m);
        // The first message of a replica (sequence 0) is its start's AllBlocksCleared, which a subscriber
        // that connects later may or may not see.
        if (m.seq == 0) {
            EXPECT_EQ(m.events.size(), 1u);
            if (!m.events.empty()) {
                EXPECT_EQ(m.events[0].type, "AllBlocksCleared");
            }
            return;
        }
        for (const Ev &e : m.events) {
            if (e.type == "AllBlocksCleared") {
                blocks.clear();
                ++clears;
            } else if (e.type == "BlockRemoved") {
                for (uint64_t h : e.hashes) {
                    EXPECT_EQ(blocks.erase(h), 1u) << "a removed block was not stored";
                    removed.push_back(h);
                }
            } else {
                const size_t bs = static_cast<size_t>(e.block_size);
                EXPECT_EQ(e.tokens.size(), e.hashes.size() * bs);
                Tokens prefix;
                if (e.parent) {
                    auto it = blocks.find(*e.parent);
                    EXPECT_NE(it, blocks.end()) << "a stored block's parent is not held";
                    if (it != blocks.end()) prefix = it->second;
                }
                for (size_t i = 0; i < e.hashes.size(); ++i) {
                    prefix.insert(prefix.end(), e.tokens.begin() + static_cast<std::ptrdiff_t>(i * bs),
                                  e.tokens.begin() + static_cast<std::ptrdiff_t>((i + 1) * bs));
                    EXPECT_EQ(blocks.count(e.hashes[i]), 0u) << "a block stored twice";
                    blocks[e.hashes[i]] = prefix;
                    ever.insert(prefix);
                }
            }
        }
    }
    // The index: every block's whole prefix.
    std::set<Tokens> prefixes() const {
        std::set<Tokens> out;
        for (const auto &[h, p] : blocks) out.insert(p);
        return out;
    }

    std::vector<Msg> msgs;
    std::map<uint64_t, Tokens> blocks;
    std::set<Tokens> ever;
    std::vector<uint64_t> removed;
    int clears = 0;

  private:
    zmq::context_t ctx_;
    zmq::socket_t sock_;
};

// The full blocks of a slot holding `tokens`, as whole prefixes.
std::set<Tokens> expected_blocks(const Tokens &tokens, size_t bs) {
    std::set<Tokens> out;
    for (size_t n = bs; n <= tokens.size(); n += bs) out.insert(Tokens(tokens.begin(), tokens.begin() + n));
    return out;
}
std::set<Tokens> unite(std::set<Tokens> a, const std::set<Tokens> &b) {
    a.insert(b.begin(), b.end());
    return a;
}

Tokens some_tokens(int n, int seed) {
    Tokens t;
    uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 12345u;
    for (int i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        t.push_back(
            static_cast<int32_t>(3 + (x >> 16) % 400));  // past BOS/EOS, inside the 512 of stories260K
    }
    return t;
}
Tokens cat(Tokens a, const Tokens &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST(KvEvents, MalformedEndpointIsAClearErrorAtStart) {
    for (const char *bad : {"127.0.0.1:5557", "ipc:///tmp/kv", "tcp://127.0.0.1", "tcp://:5557", "tcp://h:0",
                            "tcp://h:70000", "tcp://h:55x", "tcp://a b:5557", "tcp://[::1:5557"}) {
        server::EngineOptions eo;
        eo.model_path = lctx::testing::stories_model();
        eo.kv_events = bad;
        try {
            server::Engine e(eo);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const std::runtime_error &err) {
            const std::string what = err.what();
            EXPECT_NE(what.find("--kv-events"), std::string::npos) << what;
            EXPECT_NE(what.find("tcp://HOST:PORT"), std::string::npos) << what;
        }
    }
    EXPECT_EQ(server::parse_kv_endpoint("tcp://*:5557").port, 5557);
    EXPECT_EQ(server::parse_kv_endpoint("tcp://[::1]:1").host, "[::1]");
    // The command says so before it loads anything, and exits 1.
    const std::string cmd =
        std::string(LCTX_BIN_DIR) + "/lctx serve --port 0 --kv-events tcp://localhost 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[512];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    EXPECT_EQ(WEXITSTATUS(st), 1) << out;
    EXPECT_NE(out.find("--kv-events 'tcp://localhost': no port"), std::string::npos) << out;
    EXPECT_EQ(out.find("listening"), std::string::npos) << out;
    // A block size of 0 too.
    server::EngineOptions eo;
    eo.model_path = lctx::testing::stories_model();
    eo.kv_block_size = 0;
    EXPECT_THROW(server::Engine e(eo), std::runtime_error);
}

TEST(KvEvents, EndpointInUseIsAClearError) {
    const int port = free_port();
    ASSERT_GT(port, 0);
    const std::string ep = "tcp://127.0.0.1:" + std::to_string(port);
    server::EngineOptions eo;
    eo.n_ctx = 256;
    eo.n_slots = 2;
    eo.kv_events = ep;
    eo.model_path = lctx::testing::stories_model();
    LocalServer a(eo);
    try {
        server::Engine b(eo);
        ADD_FAILURE() << "a second publisher bound " << ep;
    } catch (const std::runtime_error &err) {
        EXPECT_NE(std::string(err.what()).find("cannot bind"), std::string::npos) << err.what();
    }
}

TEST(KvEvents, TrackerAnnouncesSharedBlocksOnce) {
    server::KvBlockTracker t(4, 2);
    const Tokens a = some_tokens(12, 1), b = cat(Tokens(a.begin(), a.begin() + 8), some_tokens(5, 2));
    t.set_slot(0, a.data(), a.size(), 0, std::nullopt);
    auto ev = t.take();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, server::KvEvent::Stored);
    EXPECT_EQ(ev[0].hashes.size(), 3u);
    EXPECT_FALSE(ev[0].parent);
    EXPECT_EQ(ev[0].tokens, a);
    const std::vector<uint64_t> ha = ev[0].hashes;
    // Slot 1 shares the first two blocks: only its third is new, with the second as parent.
    t.set_slot(1, b.data(), b.size(), 0, std::nullopt);
    ev = t.take();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].hashes.size(), 1u);
    ASSERT_TRUE(ev[0].parent);
    EXPECT_EQ(*ev[0].parent, ha[1]);
    EXPECT_EQ(ev[0].tokens, Tokens(b.begin() + 8, b.begin() + 12));
    EXPECT_EQ(t.n_blocks(), 4u);
    // Slot 0 lets everything go: only its third block leaves the replica.
    t.set_slot(0, nullptr, 0, 0, std::nullopt);
    ev = t.take();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, server::KvEvent::Removed);
    EXPECT_EQ(ev[0].hashes, std::vector<uint64_t>{ha[2]});
    // Other adapter scales: the same tokens are other blocks.
    t.set_slot(0, a.data(), a.size(), 77, 0);
    ev = t.take();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].hashes.size(), 3u);
    EXPECT_NE(ev[0].hashes[0], ha[0]);
    EXPECT_EQ(ev[0].lora_id, 0);
    // A resync: AllBlocksCleared, then each block held once.
    t.resync();
    ev = t.take();
    ASSERT_GE(ev.size(), 2u);
    EXPECT_EQ(ev[0].kind, server::KvEvent::Cleared);
    size_t n = 0;
    for (size_t i = 1; i < ev.size(); ++i) n += ev[i].hashes.size();
    EXPECT_EQ(n, t.n_blocks());
}

TEST(KvEvents, EventsMatchTheSlotsCaches) {
    const int zport = free_port();
    ASSERT_GT(zport, 0);
    const std::string ep = "tcp://127.0.0.1:" + std::to_string(zport);
    const size_t bs = 8;
    server::EngineOptions eo;
    eo.n_ctx = 512;
    eo.n_slots = 2;  // 256 cells each
    eo.kv_events = ep;
    eo.kv_block_size = static_cast<int32_t>(bs);
    auto srv = std::make_unique<LocalServer>(eo);
    Subscriber sub(ep);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the subscription reaches the publisher
    auto complete = [&](const Tokens &prompt, int slot) {
        auto [st, j] = srv->post("/completion", {{"prompt", prompt},
                                                 {"n_predict", 4},
                                                 {"temperature", 0},
                                                 {"id_slot", slot},
                                                 {"cache_prompt", true}});
        EXPECT_EQ(st, 200) << j.dump();
        EXPECT_EQ(j.value("id_slot", -1), slot);
        return j;
    };
    auto slots_hold = [&](const std::vector<size_t> &at_least) {
        const json sl = json::parse(srv->client()->Get("/slots")->body);
        for (size_t i = 0; i < at_least.size(); ++i) EXPECT_GE(sl[i]["n_cached"].get<size_t>(), at_least[i]);
    };

    // A: 45 tokens on slot 0 -> its 5 full blocks.
    const Tokens pa = some_tokens(45, 1);
    complete(pa, 0);
    std::set<Tokens> want = expected_blocks(pa, bs);
    EXPECT_TRUE(sub.read_until([&] { return sub.prefixes() == want; })) << sub.blocks.size() << " blocks";
    slots_hold({pa.size(), 0});
    // B: slot 1 shares A's first 3 blocks (24 tokens): only its own blocks are stored.
    const Tokens pb = cat(Tokens(pa.begin(), pa.begin() + 24), some_tokens(20, 2));
    const size_t stored_before = sub.ever.size();
    complete(pb, 1);
    want = unite(expected_blocks(pa, bs), expected_blocks(pb, bs));
    EXPECT_TRUE(sub.read_until([&] { return sub.prefixes() == want; }));
    EXPECT_EQ(sub.ever.size() - stored_before, pb.size() / bs - 3);
    // C: slot 0 keeps 2 blocks of A: A's blocks 3 and 4 leave (block 2 stays: slot 1 holds it).
    const Tokens pc = cat(Tokens(pa.begin(), pa.begin() + 16), some_tokens(30, 3));
    std::map<Tokens, uint64_t> hash_of;
    for (const auto &[h, p] : sub.blocks) hash_of[p] = h;
    complete(pc, 0);
    want = unite(expected_blocks(pc, bs), expected_blocks(pb, bs));
    EXPECT_TRUE(sub.read_until([&] { return sub.prefixes() == want; }));
    const std::set<uint64_t> gone(sub.removed.begin(), sub.removed.end());
    EXPECT_EQ(gone, (std::set<uint64_t>{hash_of[Tokens(pa.begin(), pa.begin() + 32)],
                                        hash_of[Tokens(pa.begin(), pa.begin() + 40)]}));
    slots_hold({pc.size(), pb.size()});
    // Every stored block held the slot's tokens, in vLLM's shape, and the messages came in order.
    ASSERT_FALSE(sub.msgs.empty());
    for (size_t i = 0; i < sub.msgs.size(); ++i) {
        const Msg &m = sub.msgs[i];
        EXPECT_EQ(m.topic, "kv@127.0.0.1:" + std::to_string(zport) + "@stories260K.gguf");
        if (i > 0) {
            EXPECT_EQ(m.seq, sub.msgs[i - 1].seq + 1);
        }
        EXPECT_EQ(m.dp_rank, 0);
        EXPECT_NEAR(
            m.ts, std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
            60.0);
        for (const Ev &e : m.events) {
            if (e.type == "BlockStored") {
                EXPECT_EQ(e.block_size, static_cast<int64_t>(bs));
                EXPECT_TRUE(e.lora_nil);
            }
            if (e.type != "AllBlocksCleared") {
                EXPECT_EQ(e.medium, "CPU");
            }
        }
    }
    for (const Tokens &p : sub.ever) {
        const bool of_a_prompt = (p.size() <= pa.size() && std::equal(p.begin(), p.end(), pa.begin())) ||
                                 (p.size() <= pb.size() && std::equal(p.begin(), p.end(), pb.begin())) ||
                                 (p.size() <= pc.size() && std::equal(p.begin(), p.end(), pc.begin()));
        EXPECT_TRUE(of_a_prompt) << "a block of tokens no slot held (" << p.size() << " tokens)";
    }
    EXPECT_EQ(sub.clears, 0);
    // /slots erase: slot 0's own blocks leave; erasing slot 1 too leaves nothing: AllBlocksCleared.
    ASSERT_EQ(srv->post("/slots/0?action=erase", json::object()).first, 200);
    want = expected_blocks(pb, bs);
    EXPECT_TRUE(sub.read_until([&] { return sub.prefixes() == want; }));
    ASSERT_EQ(srv->post("/slots/1?action=erase", json::object()).first, 200);
    EXPECT_TRUE(sub.read_until([&] { return sub.clears == 1 && sub.blocks.empty(); }));
    // A prompt again, then the server stops: AllBlocksCleared (a restarted replica holds nothing).
    complete(pa, 1);
    want = expected_blocks(pa, bs);
    EXPECT_TRUE(sub.read_until([&] { return sub.prefixes() == want; }));
    srv.reset();
    EXPECT_TRUE(sub.read_until([&] { return sub.clears == 2 && sub.blocks.empty(); }));
}

TEST(KvEvents, ContextShiftAnnouncesTheMovedBlocks) {
    const int zport = free_port();
    ASSERT_GT(zport, 0);
    const std::string ep = "tcp://127.0.0.1:" + std::to_string(zport);
    server::EngineOptions eo;
    eo.n_ctx = 128;
    eo.n_slots = 2;  // 64 cells each
    eo.context_shift = true;
    eo.kv_events = ep;
    eo.kv_block_size = 8;
    LocalServer srv(eo);
    Subscriber sub(ep);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const Tokens pa = some_tokens(40, 5);
    // End of text banned: 40 tokens of generation fill the slot's 64 cells and shift it once (keep the first
    // cell, drop 31): the prompt's tokens 32..39 move to positions 1..8.
    auto [st, j] =
        srv.post("/completion",
                 {{"prompt", pa}, {"n_predict", 40}, {"temperature", 0}, {"logit_bias", {{"2", -100}}}});
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["tokens_predicted"], 40);
    Tokens moved = {pa[0]};
    moved.insert(moved.end(), pa.begin() + 32, pa.begin() + 39);
    const std::set<Tokens> want = {moved};
    EXPECT_TRUE(sub.read_until([&] { return sub.prefixes() == want; })) << sub.blocks.size() << " blocks";
    EXPECT_EQ(sub.removed.size(), 5u);  // the prompt's 5 blocks as they were
    EXPECT_EQ(sub.ever.size(), 6u);
}

TEST(KvEvents, AFullQueueDropsCountsAndResynchronizes) {
    const int zport = free_port();
    ASSERT_GT(zport, 0);
    const std::string ep = "tcp://127.0.0.1:" + std::to_string(zport);
    std::atomic<uint64_t> dropped{0};
    server::KvBlockTracker t(4, 1);
    // A queue of 2 batches whose sender has not started yet: the third batch does not fit.
    server::KvEventPublisher pub(ep, "kv@pod@m", &dropped, 2, /*start_sender=*/false);
    Subscriber sub(ep);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const Tokens a = some_tokens(12, 4);
    t.clear_all();
    EXPECT_TRUE(pub.publish(t.take()));  // sequence 0
    t.set_slot(0, a.data(), 8, 0, std::nullopt);
    EXPECT_TRUE(pub.publish(t.take()));  // 1: two blocks
    t.set_slot(0, a.data(), 12, 0, std::nullopt);
    EXPECT_FALSE(pub.publish(t.take()));  // 2: the third block, dropped
    EXPECT_EQ(dropped.load(), 1u);
    EXPECT_TRUE(pub.take_resync());
    EXPECT_FALSE(pub.take_resync());
    // The next batch starts over: AllBlocksCleared, then every block held.
    t.resync();
    pub.start();
    ASSERT_TRUE(sub.read_until([&] { return sub.msgs.size() == 2; }));  // the queue is empty again
    EXPECT_TRUE(pub.publish(t.take()));                                 // 3
    const std::set<Tokens> want = expected_blocks(a, 4);
    EXPECT_TRUE(sub.read_until([&] { return sub.prefixes() == want && sub.clears == 1; }));
    std::vector<uint64_t> seqs;
    for (const Msg &m : sub.msgs) seqs.push_back(m.seq);
    EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 1, 3}));  // the dropped one is a gap a subscriber can see
}

TEST(KvEvents, DroppedCounterIsAMetric) {
    server::EngineOptions eo;
    eo.n_ctx = 256;
    eo.n_slots = 2;
    LocalServer srv(eo);
    EXPECT_EQ(srv.metric("lctx_kv_events_dropped_total"), 0);
}

#else
// A build configured without ZMQ and msgpack refuses --kv-events with the reason.
TEST(KvEvents, RefusedWithoutZmq) {
    lctx::server::EngineOptions eo;
    eo.model_path = lctx::testing::stories_model();
    eo.kv_events = "tcp://127.0.0.1:5557";
    try {
        lctx::server::Engine e(eo);
        ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error &err) {
        EXPECT_NE(std::string(err.what()).find("no ZMQ"), std::string::npos) << err.what();
    }
}
#endif
}  // namespace server_kv_events_test
