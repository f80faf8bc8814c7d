// KV-cache events (--kv-events tcp://HOST:PORT): what vLLM publishes for llm-d's prefix-aware router, so a
// router can index which replica holds which prompt prefix.
//
// The wire format is vLLM's: a ZMQ PUB socket sends each batch as three frames, the topic
// (`kv@POD@MODEL`), an 8-byte big-endian sequence number, and a msgpack array [timestamp, [events...],
// dp_rank]. Events are msgpack arrays whose first element names their type (msgspec's tagged array form):
//   ["BlockStored", [block_hashes...], parent_block_hash|nil, [token_ids...], block_size, lora_id|nil,
//   medium]
//   ["BlockRemoved", [block_hashes...], medium]
//   ["AllBlocksCleared"]
//
// A block is block_size consecutive prompt tokens of a slot's cache starting at a multiple of block_size
// (full blocks only). Its hash chains through its parent (the block before it), so equal hashes mean equal
// prefixes. Two slots holding the same prefix hold the same blocks: a block is announced stored when the
// first slot gets it and removed when the last one loses it.
//
// The tracker runs on the decode loop; the publisher's queue is bounded and a sender thread owns the socket,
// so the decode loop never waits for the network. A batch that does not fit the queue is dropped (counted);
// the next batch that fits then starts with AllBlocksCleared and every block held, so a subscriber's index
// is whole again.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace lctx::server {

struct KvEndpoint {
    std::string host;
    int port = 0;
};
// tcp://HOST:PORT (HOST may be *, a name, an IPv4 address or a bracketed IPv6 one); throws std::runtime_error
// saying what is wrong.
KvEndpoint parse_kv_endpoint(const std::string &endpoint);

struct KvEvent {
    enum Kind { Stored, Removed, Cleared } kind = Stored;
    std::vector<uint64_t> hashes;    // Stored, Removed
    std::optional<uint64_t> parent;  // Stored: the block before the first one (none for a prompt's first)
    std::vector<int32_t> tokens;     // Stored: block_size tokens per hash
    int32_t block_size = 0;
    std::optional<int32_t> lora_id;
};

// The medium lctx's blocks live in (vLLM writes "GPU" for its device cache).
inline constexpr const char *kKvMedium = "CPU";

// One message's third frame: msgpack [ts, [events...], dp_rank] (in builds with ZMQ and msgpack).
std::string encode_kv_batch(double ts, const std::vector<KvEvent> &events, int32_t dp_rank);

// The blocks each slot holds. Not thread-safe: the decode loop's alone.
class KvBlockTracker {
  public:
    KvBlockTracker(int32_t block_size, int32_t n_slots);
    int32_t block_size() const { return block_size_; }
    // Slot `slot` now holds tokens[0..n) as prompt tokens at positions 0..n-1, computed with the adapters
    // that `lora_key` identifies (0: none; lora_id is what events carry). Queues the changes as events.
    void set_slot(int32_t slot, const int32_t *tokens, size_t n, uint64_t lora_key,
                  std::optional<int32_t> lora_id);
    // Every block is gone (a restart, everything erased): AllBlocksCleared.
    void clear_all();
    // AllBlocksCleared, then every block held stored again (after events were lost).
    void resync();
    // The events queued since the last call.
    std::vector<KvEvent> take();
    // Distinct blocks held (over every slot).
    size_t n_blocks() const { return refs_.size(); }
    // The hash of a block: FNV-1a 64 over the parent hash and the tokens (little-endian); the first block of
    // a slot hashes over root(lora_key) as its parent.
    static uint64_t block_hash(uint64_t parent, const int32_t *tokens, int32_t n);
    static uint64_t root(uint64_t lora_key);

  private:
    struct SlotBlocks {
        std::vector<int32_t> tokens;  // the full blocks' tokens
        std::vector<uint64_t> hashes;
        uint64_t lora_key = 0;
        std::optional<int32_t> lora_id;
    };
    void store_run(const SlotBlocks &s, size_t first, size_t last);
    int32_t block_size_;
    std::vector<SlotBlocks> slots_;
    std::unordered_map<uint64_t, int32_t> refs_;  // block -> slots holding it
    std::vector<KvEvent> pending_;
};

class KvEventPublisher {
  public:
    // Binds a PUB socket to the endpoint; throws std::runtime_error when it cannot. `dropped` counts the
    // events of batches that did not fit the queue. The sender starts at once, or at start() when
    // `start_sender` is false (tests fill the queue first).
    KvEventPublisher(const std::string &endpoint, std::string topic, std::atomic<uint64_t> *dropped,
                     size_t max_batches = 1024, bool start_sender = true);
    void start();
    // Sends what is queued (the socket lingers up to a second for slow subscribers), then closes.
    ~KvEventPublisher();
    KvEventPublisher(const KvEventPublisher &) = delete;
    KvEventPublisher &operator=(const KvEventPublisher &) = delete;
    // Queues one batch; never waits for the sender. False when it was dropped.
    bool publish(std::vector<KvEvent> events);
    // True once after a batch was dropped: the caller's next batch should resynchronize
    // (KvBlockTracker::resync).
    bool take_resync();
    const std::string &topic() const { return topic_; }

  private:
    void run();
    struct Batch {
        uint64_t seq;
        double ts;
        std::vector<KvEvent> events;
    };
    std::string topic_;
    std::atomic<uint64_t> *dropped_;
    size_t max_batches_;
    struct Zmq;
    std::unique_ptr<Zmq> zmq_;  // the context and the socket (the sender thread's once started)
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Batch> queue_;
    uint64_t seq_ = 0;
    bool stopping_ = false;
    std::atomic<bool> resync_{false};
    std::thread thread_;
};

}  // namespace lctx::server
