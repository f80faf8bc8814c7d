// The serving engine: one model, ONE llama_context shared by `slots` sequences, and one thread (the decode
// loop) that alone touches the context. HTTP handlers submit tasks and read their results from a Channel.
//
// Continuous batching: each step builds one llama_batch with the next token of every generating slot
// first, then chunks of the prompts being evaluated (the rest of the step's token budget shared evenly
// among them, so a long prompt never stalls the others and a new request joins at the next step); one
// llama_decode; then each slot samples from its own logits row. Slot s is sequence s and owns
// n_ctx / slots cells. A finished slot keeps its tokens as a prompt cache: a new request goes to the free
// slot holding the longest common prefix and evaluates only the rest (reported as cached_tokens). A
// cancelled request (client gone) frees its cells at once.
//
// Speculative decoding (EngineOptions::spec: a draft model, or prompt lookup): each generating slot that
// drafts puts its next token and its draft in the same batch (logits at every one of them), so the drafting
// slots are verified together with the others' single tokens in the step's one llama_decode; the
// generation layer's verifier (generate/speculative.h) keeps the accepted prefix plus the target's own
// token, streamed in order, and the rejected cells leave the slot's sequence (llama_kv_cache_seq_rm). A draft
// model has a context of its own with one sequence per slot. Requests the verifier cannot serve yet decode
// plainly in their slot (see Engine::drafts).
//
// Only the public C API (llama.h and lctx/lctx_ext.h) is used, plus the chat layer for templates and the
// generation layer (src/generate/).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "generate/chat_turns.h"
#include "generate/fim_prompt.h"
#include "llama.h"
#include "server/metrics.h"
#include "server/request.h"

namespace lctx::server {

class KvBlockTracker;  // kv_events.h
class KvEventPublisher;

// Speculative decoding in the slots (lctx serve takes `lctx run`'s options: tools/lctx/spec_options.h).
struct SpecServeOptions {
    std::string model_draft;  // -md: a draft model with the target's vocabulary ("": none)
    bool lookup = false;      // --lookup: prompt lookup (n-grams of the slot's text)
    int32_t ngram_min = 1, ngram_max = 4;
    int32_t n_max = 16;     // --draft-max
    int32_t n_min = 5;      // --draft-min: a shorter draft is not verified
    float p_min = 0.9f;     // --draft-p-min
    int32_t ctx_draft = 0;  // -cd: the draft context's cells, all slots together (0: as -c)
    int32_t threads_draft = 0, threads_batch_draft = 0;  // -td, -tbd (0: as -t)
    // --draft-batch-max: the most draft tokens one step adds, all its slots together, shared evenly among the
    // drafting slots (0: the step's budget, -b or 128 alone, less its generating slots' own tokens, so that
    // a step's generating part stays within the budget).
    int32_t batch_max = 0;
    bool enabled() const { return lookup || !model_draft.empty(); }
};

struct EngineOptions {
    std::string model_path;
    int32_t n_ctx = 2048;        // the whole context; each slot gets n_ctx / n_slots cells
    int32_t n_slots = 4;         // sequences decoded together
    int32_t step_tokens = 32;    // tokens in one step's batch (generating slots first, then prompt chunks);
                                 // a request alone in the server takes steps of up to 128
    int32_t n_threads = 0;       // 0: every core
    int32_t max_queue = 64;      // requests waiting for a slot; beyond: 503
    bool context_shift = false;  // a full slot drops half its tokens (else the request ends with length)
    std::string chat_template;   // a built-in format name; "" = the model's template (chatml without one)
    // A Jinja chat template's text (--chat-template-file): used instead of the model's own.
    std::string chat_template_jinja;
    std::string alias;  // the model's name in answers (--alias); "": the file's name
    // LoRA adapters (--lora FILE[:SCALE]): file and initial global scale; their ids are their indexes here.
    std::vector<std::pair<std::string, float>> lora;
    // The KV cache (-ctk, -ctv, -fa): llama.cpp's cache types; a block-quantized V needs flash attention.
    ggml_type type_k = GGML_TYPE_F16, type_v = GGML_TYPE_F16;
    bool flash_attn = false;
    // KV-cache events (kv_events.h): the ZMQ endpoint to publish on ("" = off), the tokens of one block,
    // and the topic's POD part ("" = the endpoint's HOST:PORT; lctx serve passes its HTTP address).
    std::string kv_events;
    // Also vllm:cache_config_info's block_size (num_gpu_blocks = n_ctx / kv_block_size).
    int32_t kv_block_size = 16;
    std::string kv_events_pod;
    SpecServeOptions spec;
};

struct TopLogprob {
    int32_t token;
    std::string text;
    float logprob;
};

// One message from the decode loop to a request's handler.
struct Event {
    enum Kind { Token, Done, Failed } kind = Token;
    int32_t index = 0;  // the choice (n > 1)
    std::string text;   // Token: text safe to send (may be empty while a stop string is pending)
    // Token with logprobs: the sampled token and its alternatives.
    int32_t token = -1;
    std::string token_text;
    float logprob = 0.0f;
    std::vector<TopLogprob> top;
    // Done: why, and the counts of this choice.
    std::string finish_reason;
    int32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
    std::string error;  // Failed
    int status = 500;   // Failed: 503 when the server is shutting down
    // Done: milliseconds evaluating the prompt (its uncached part) and generating (llama-server's timings).
    double prompt_ms = 0.0, predicted_ms = 0.0;
    // Done: llama-server's stop_type (eos, word, limit), the stop string that ended the text, the slot.
    std::string stop_type, stopping_word;
    int32_t slot = -1;
    // Done, when the choice drafted: draft tokens verified and accepted (llama-server's draft_n and
    // draft_n_accepted timings).
    int32_t draft_n = 0, draft_accepted = 0;
    bool drafted = false;
};

// Results of one request (all its choices), from the decode loop to the handler thread.
class Channel {
  public:
    explicit Channel(int n_choices) : open_(n_choices) {}
    void push(Event e);
    // Waits up to timeout_ms for events; moves them into out. False once every choice has ended and
    // nothing is left.
    bool pop(std::vector<Event> &out, int timeout_ms);
    // The client is gone: the decode loop drops the request at its next step and frees its cells.
    void cancel() { cancelled_ = true; }
    bool cancelled() const { return cancelled_; }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Event> q_;
    int open_;
    std::atomic<bool> cancelled_{false};
};

struct Task {
    std::shared_ptr<Channel> channel;
    int32_t index = 0;
    std::vector<int32_t> prompt;
    std::vector<std::string> stop;
    int32_t max_tokens = -1;
    SamplingParams sampling;
    uint32_t seed = 0;
    std::string grammar;
    int32_t top_logprobs = -1;  // -1: no logprobs
    std::vector<float> lora;    // the scale of each adapter (Engine::lora_scales_for); 0: not applied
    int32_t id_slot = -1;       // the slot it must run on (waits for it); -1: any
    bool cache_prompt = true;   // false: no cached prefix is reused
    // Special tokens whose text the reply keeps (tool-call and reasoning markers); sorted.
    std::vector<int32_t> preserved_tokens;
    // When the request arrived (Engine::submit sets it): the start of its queue time, TTFT and latency.
    std::chrono::steady_clock::time_point t_arrival{};
};

struct SlotInfo {
    int32_t id;
    bool busy;
    int32_t n_cached;  // tokens this slot's sequence holds
};

class Engine {
  public:
    // Loads the model and makes the context; throws std::runtime_error with the reason.
    explicit Engine(const EngineOptions &opts);
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    void start();
    // Ends every queued and running request with an error event and joins the loop.
    void stop();

    // Queues the tasks of one request (its n choices, all or none). Throws ApiError 503 when the queue is
    // full or the engine is stopping.
    void submit(std::vector<Task> tasks);

    // Model-side helpers, safe from any thread (they only read the model).
    std::vector<int32_t> tokenize(const std::string &text, bool add_special, bool parse_special) const;
    std::string token_text(int32_t token) const;
    std::string token_text_special(int32_t token) const;  // control tokens spelled out
    std::string detokenize(const std::vector<int32_t> &tokens) const;
    // The chat prompt through the model's template (or --chat-template); throws ApiError 400 on failure.
    std::string render_chat(const std::vector<ChatTurn> &messages, bool add_generation_prompt = true) const;
    // Chat prompt text -> tokens (no second BOS when the template wrote one).
    std::vector<int32_t> tokenize_chat(const std::string &prompt) const;

    int32_t n_vocab() const { return n_vocab_; }
    // The model's fill-in-the-middle tokens (/infill).
    generate::FimTokens fim_tokens() const;
    // The tokens that end a generation (end of text, end of turn ...): what ignore_eos bans.
    const std::vector<int32_t> &eog_tokens() const { return eog_; }
    int32_t slot_ctx() const { return slot_ctx_; }
    int32_t n_slots() const { return opts_.n_slots; }
    int32_t max_queue() const { return opts_.max_queue; }
    int32_t kv_block_size() const { return opts_.kv_block_size; }  // --kv-block-size (vllm:cache_config_info)
    // The topic KV-cache events go out under (kv@POD@MODEL); "" when --kv-events is off.
    std::string kv_events_topic() const;
    const std::string &model_name() const { return model_name_; }
    const std::string &model_path() const { return opts_.model_path; }
    // The template chat messages go through: the model's own, or the built-in format's name.
    const std::string &chat_template_text() const {
        return opts_.chat_template.empty() ? chat_->jinja_template() : opts_.chat_template;
    }
    // What renders chats (--chat-template, --chat-template-file or the model's own template, chatml without
    // one): its jinja_template() is "" when chats use a built-in format.
    const generate::ChatTurns &chat_turns() const { return *chat_; }
    Metrics &metrics() { return metrics_; }
    std::vector<SlotInfo> slots_info() const;
    // No request queued or running (a drain waits for it).
    bool idle() const;

    // /slots/{id}?action=save|restore|erase, run on the decode loop between steps (the only thread that
    // touches the context). save and restore take a full path (the HTTP layer checks the file name).
    // Returns the response object; throws ApiError (404 unknown slot, 409 slot busy, 400 bad file).
    nlohmann::json slot_action(int32_t id, const std::string &action, const std::string &path);

    // LoRA adapters (--lora): [{id, path, scale}] with the global scales (GET /lora-adapters).
    nlohmann::json lora_adapters() const;
    // POST /lora-adapters: [{id, scale}] sets the global scales (adapters left out get 0, as llama-server).
    // Throws ApiError 400 naming what is wrong; then nothing changes.
    void set_lora_scales(const nlohmann::json &body);
    // A request's scales: the global ones, or its `lora` field ([{id, scale}], the others 0) when given.
    std::vector<float> lora_scales_for(const nlohmann::json *request_lora) const;

    // Embedding models (an encoder such as bert): the context makes pooled vectors, not tokens.
    bool embedding_only() const { return embedding_only_; }
    enum llama_pooling_type pooling() const { return pooling_; }
    int32_t n_embd() const { return n_embd_; }
    int32_t max_embed_tokens() const { return max_embed_tokens_; }  // the longest input one pass takes
    // One row per input (the model's pooling: a vector, or rank's one score), through the generation layer's
    // embed_sequences (generate/embed_batch.h) on the decode loop between steps. The loop takes every request
    // queued by then and runs their inputs together, in arrival order: as many inputs per pass as fit
    // n_ubatch tokens and n_seq_max sequences, whichever request they come from.
    // Throws ApiError (400 for an input that no pass can hold, 500 when the pass fails, 503 once stopping).
    std::vector<std::vector<float>> embed(const std::vector<std::vector<int32_t>> &inputs);
    // Tests: while paused the decode loop takes nothing between steps (nor steps), so requests sent meanwhile
    // gather as behind a long step; embed_requests_queued() counts the embedding requests waiting.
    void pause_loop(bool paused);
    size_t embed_requests_queued() const;
    // llama-server's rerank input: [BOS] query [EOS] [SEP] document [EOS] (missing specials left out;
    // generate::rerank_tokens, as `lctx embed --query`).
    std::vector<int32_t> rerank_tokens(const std::string &query, const std::string &doc) const;

  private:
    struct Slot;
    void loop();
    bool assign_waiting();  // queued tasks -> free slots; true when something was assigned
    void step();
    void sample_slot(Slot &s, int32_t batch_index);
    // A token chosen for the slot: counted, streamed, checked against the stops and max_tokens. False when
    // it ended the request.
    bool emit(Slot &s, int32_t tok, Event &ev);
    // After the step's last token of a slot that goes on: it is the next to decode; a full slot shifts or
    // ends.
    void go_on(Slot &s, int32_t tok);
    // Whether a request drafts when speculation is on (else its slot decodes plainly).
    bool drafts(const Task &t) const;
    int32_t add_draft(Slot &s, int32_t budget);  // the slot's draft (at most budget tokens) into the batch
    void verify_slot(Slot &s, int32_t batch_index);  // the drafting slot's tokens from this step's logits
    void finish(Slot &s, const char *reason);
    void fail(Slot &s, const std::string &why, int status = 500);
    void release_cells(Slot &s);
    void shift(Slot &s);
    void update_kv_metrics();
    // The slot's first n cache tokens are prompt tokens: its KV blocks for the events (a no-op without them).
    void sync_blocks(Slot &s, size_t n);
    void flush_kv_events();
    void apply_lora(const std::vector<float> &scales);  // on the context, when not already set
    // An embedding request waiting for the loop: its inputs, then its rows or error (set under mu_).
    struct EmbedJob;
    // The embedding requests the loop took, in one embed_sequences call; when that fails, each alone (one
    // bad request must not fail the others). Answers each.
    void run_embed_jobs(const std::vector<std::shared_ptr<EmbedJob>> &jobs);

    EngineOptions opts_;
    llama_model *model_ = nullptr;
    llama_context *ctx_ = nullptr;
    // Speculative decoding: the draft model and its context (one sequence per slot), when -md is given.
    llama_model *draft_model_ = nullptr;
    llama_context *draft_ctx_ = nullptr;
    void init_spec();    // the drafters of the slots (throws with the reason)
    void free_engine();  // the slots, then what llama.h gave (drafters use the draft context: freed first)
    const llama_vocab *vocab_ = nullptr;
    std::vector<int32_t> eog_;
    static constexpr int32_t kLoneStepTokens = 128;
    int32_t n_vocab_ = 0, slot_ctx_ = 0, max_step_ = 0;
    int32_t max_batch_ = 0;  // the batch's capacity: max_step_, plus the most draft tokens of a step
    bool embedding_only_ = false;
    enum llama_pooling_type pooling_ = LLAMA_POOLING_TYPE_NONE;
    int32_t n_embd_ = 0, max_embed_tokens_ = 0;
    std::string model_name_;
    std::unique_ptr<generate::ChatTurns> chat_;
    Metrics metrics_;
    std::unique_ptr<KvBlockTracker> kv_blocks_;  // with --kv-events: the loop's view of the slots' blocks
    std::unique_ptr<KvEventPublisher> kv_pub_;

    std::vector<llama_adapter_lora *> lora_;  // --lora's adapters (owned by model_)
    std::vector<float> lora_scales_;          // global scales (guarded by mu_)
    std::vector<float> applied_lora_;         // the scales set on ctx_ now (the loop's)
    uint64_t step_clock_ = 0;                 // counts steps: a slot's last_step orders adapter groups

    std::vector<std::unique_ptr<Slot>> slots_;
    llama_batch batch_{};
    uint64_t use_clock_ = 0;  // orders slot reuse: the least recently used free slot goes first

    mutable std::mutex mu_;  // guards queue_, embed_jobs_, stopping_, paused_, the slots' busy/n_cached view
    std::condition_variable cv_;
    std::deque<Task> queue_;
    std::deque<std::function<void()>> commands_;         // slot actions for the loop
    std::vector<std::shared_ptr<EmbedJob>> embed_jobs_;  // embedding requests for the loop, in arrival order
    bool paused_ = false;                                // pause_loop
    // Runs work() on the loop's thread between steps (the only thread touching the context) and returns its
    // result here, or rethrows what it threw; 503 once the server is stopping.
    template <typename R, typename F>
    R run_on_loop(F work);
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace lctx::server
