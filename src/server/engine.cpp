#include "server/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "generate/chat_turns.h"
#include "generate/context_shift.h"
#include "generate/embed_batch.h"
#include "generate/speculative.h"
#include "generate/text_stream.h"
#include "generate/tokens.h"
#include "lctx/lctx_ext.h"
#include "server/kv_events.h"
#include "server/sampling_config.h"

namespace lctx::server {

namespace {
int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

size_t common_prefix(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
    size_t n = std::min(a.size(), b.size()), i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}
// An encoder that makes embeddings (bert and its kin): llama_model_has_encoder is false for these (as in
// llama.cpp, it means an encoder-decoder), so the architecture, or a pooling type in the metadata, tells.
bool is_embedding_model(const llama_model *model) {
    char arch[64] = {0}, val[32] = {0};
    if (llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch) < 0) return false;
    const std::string a = arch;
    if (a.size() >= 4 && a.compare(a.size() - 4, 4, "bert") == 0) return true;
    return llama_model_meta_val_str(model, (a + ".pooling_type").c_str(), val, sizeof val) >= 0;
}
}  // namespace

// ---- Channel ----

void Channel::push(Event e) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (e.kind != Event::Token) --open_;
        q_.push_back(std::move(e));
    }
    cv_.notify_all();
}

bool Channel::pop(std::vector<Event> &out, int timeout_ms) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms), [&] { return !q_.empty() || open_ <= 0; });
    if (q_.empty()) return open_ > 0;
    while (!q_.empty()) {
        out.push_back(std::move(q_.front()));
        q_.pop_front();
    }
    return true;
}

struct Engine::EmbedJob {
    const std::vector<std::vector<int32_t>> *inputs = nullptr;  // the waiting handler's
    bool done = false;
    std::vector<std::vector<float>> rows;
    std::optional<ApiError> error;
};

// ---- slots ----

struct Engine::Slot {
    int32_t id = 0;
    std::vector<int32_t> cache;  // the tokens this sequence holds, at positions 0..size-1
    std::atomic<bool> busy{false};
    std::atomic<int32_t> n_cached_pub{0};  // cache.size() for /slots, published after each step
    uint64_t last_used = 0;

    // The request being served.
    Task task;
    int32_t n_cached = 0;  // prompt tokens found in the cache
    int32_t n_generated = 0;
    bool generating = false;
    int32_t next_token = -1;    // sampled, not yet decoded
    int32_t i_batch = -1;       // this step's logits row, or -1
    bool in_step = false;       // has tokens in this step's batch
    uint64_t last_step = 0;     // the step that last decoded its tokens
    std::vector<float> lora;    // the adapter scales its cached K/V were computed with
    size_t n_block_tokens = 0;  // the first cache tokens that are prompt tokens (KV-cache events' blocks)
    llama_sampler *chain = nullptr;  // a drafting request's: the filters, without the final draw
    std::unique_ptr<generate::TextStream> text;
    // Speculative decoding: the slot's drafter (kept across requests: a draft model's cache of this slot's
    // sequence is reused as far as the next text shares it), the request's verifier over `chain` when it
    // drafts (null: plain sampling), this step's draft, and the request's draft tokens verified / accepted.
    std::unique_ptr<generate::Drafter> drafter;
    std::unique_ptr<generate::SpecVerifier> verifier;
    generate::Draft draft;
    int32_t n_drafted = 0, n_accepted = 0;
    std::chrono::steady_clock::time_point t_start, t_first;  // assigned; first token sampled
    std::chrono::steady_clock::time_point t_last;            // the last token sampled

    void end_task() {
        verifier.reset();  // before the chain it points at
        if (chain) llama_sampler_free(chain);
        chain = nullptr;
        text.reset();
        draft.tokens.clear();
        draft.q.clear();
        task = Task{};
        generating = false;
        i_batch = -1;
        busy = false;
    }
};

// ---- construction ----

Engine::Engine(const EngineOptions &opts) : opts_(opts) {
    if (opts_.n_slots < 1 || opts_.n_slots > 256) throw std::runtime_error("--parallel must be in 1..256");
    if (opts_.n_ctx < 8 * opts_.n_slots)
        throw std::runtime_error("the context (-c) must hold at least 8 cells per slot");
    opts_.step_tokens = std::max(opts_.step_tokens, opts_.n_slots);
    if (opts_.spec.batch_max < 0) throw std::runtime_error("--draft-batch-max must be 0 (automatic) or more");
    if (opts_.kv_block_size < 1 || opts_.kv_block_size > 65536)
        throw std::runtime_error("--kv-block-size must be in 1..65536");
    std::optional<KvEndpoint> kv_endpoint;
    if (!opts_.kv_events.empty()) kv_endpoint = parse_kv_endpoint(opts_.kv_events);
    // --chat-template takes the names the C API knows (llama_chat_builtin_templates, b4748's heuristics for a
    // template's text), and raw: the one list `lctx chat` takes too.
    if (std::string builtin;
        !opts_.chat_template.empty() && !generate::chat_format_by_name(opts_.chat_template, &builtin))
        throw std::runtime_error("unknown --chat-template '" + opts_.chat_template +
                                 "' (known: " + generate::chat_format_names() + ")");
    llama_model_params mp = llama_model_default_params();
    model_ = llama_model_load_from_file(opts_.model_path.c_str(), mp);
    if (!model_) throw std::runtime_error("cannot load the model '" + opts_.model_path + "'");
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(opts_.n_ctx);
    // A lone request may take larger steps (see step()); the batch holds either.
    max_step_ = std::max(opts_.step_tokens, kLoneStepTokens);
    // With speculation the generating slots add their drafts too (logits at each of their tokens), at most
    // --draft-batch-max (by default the step's budget) in a step.
    const int32_t step_drafts = std::min(opts_.n_slots * std::max(opts_.spec.n_max, 0),
                                         opts_.spec.batch_max > 0 ? opts_.spec.batch_max : max_step_);
    max_batch_ = max_step_ + (opts_.spec.enabled() ? step_drafts : 0);
    cp.n_batch = static_cast<uint32_t>(max_batch_);
    cp.n_ubatch = static_cast<uint32_t>(std::min(max_batch_, 512));
    embedding_only_ = is_embedding_model(model_);
    if (embedding_only_) {
        // An encoder sees each input whole in one micro-batch and keeps nothing between passes: the
        // context is one pass of up to the model's positions (or -c when smaller).
        const int32_t n_train = std::max(llama_model_n_ctx_train(model_), 8);
        max_embed_tokens_ = std::min(n_train, opts_.n_ctx);
        cp.n_ctx = cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(max_embed_tokens_);
        cp.embeddings = true;
    }
    cp.n_seq_max = static_cast<uint32_t>(opts_.n_slots);
    if (opts_.n_threads > 0) cp.n_threads = cp.n_threads_batch = opts_.n_threads;
    cp.no_perf = true;
    cp.type_k = opts_.type_k;
    cp.type_v = opts_.type_v;
    cp.flash_attn = opts_.flash_attn;
    ctx_ = llama_init_from_model(model_, cp);
    if (!ctx_) {
        llama_model_free(model_);
        throw std::runtime_error("cannot create a context of " + std::to_string(opts_.n_ctx) + " cells");
    }
    for (const auto &[path, scale] : opts_.lora) {
        llama_adapter_lora *a = llama_adapter_lora_init(model_, path.c_str());
        if (!a) {
            llama_free(ctx_);
            llama_model_free(model_);  // frees the adapters loaded so far
            throw std::runtime_error("cannot load the LoRA adapter '" + path + "' (see the log line above)");
        }
        lora_.push_back(a);
        lora_scales_.push_back(scale);
    }
    applied_lora_.assign(lora_.size(), 0.0f);
    // Each slot's cells together: a step's tokens then attend over their own slot's cells only.
    lctx_kv_cache_place_by_sequence(ctx_, true);
    vocab_ = llama_model_get_vocab(model_);
    pooling_ = llama_pooling_type(ctx_);
    n_embd_ = llama_model_n_embd(model_);
    n_vocab_ = llama_vocab_n_tokens(vocab_);
    slot_ctx_ = static_cast<int32_t>(llama_n_ctx(ctx_)) / opts_.n_slots;
    model_name_ =
        opts_.alias.empty() ? std::filesystem::path(opts_.model_path).filename().string() : opts_.alias;
    // A --chat-template name wins over --chat-template-file; a model without a template uses chatml, and a
    // template that fails falls back to chatml, as llama-server does.
    generate::ChatTemplateChoice choice;
    choice.format = opts_.chat_template;
    if (opts_.chat_template.empty()) choice.jinja = opts_.chat_template_jinja;
    choice.no_template = ChatFormat::ChatML;
    choice.jinja_fallback = "chatml";
    chat_ = std::make_unique<generate::ChatTurns>(model_, choice);
    for (int32_t t = 0; t < n_vocab_; ++t)
        if (llama_vocab_is_eog(vocab_, t)) eog_.push_back(t);
    batch_ = llama_batch_init(max_batch_, 0, 1);
    for (int32_t i = 0; i < opts_.n_slots; ++i) {
        slots_.push_back(std::make_unique<Slot>());
        slots_.back()->id = i;
    }
    metrics_.kv_size = static_cast<int64_t>(llama_n_ctx(ctx_));
    metrics_.slots = opts_.n_slots;
    metrics_.block_size = opts_.kv_block_size;
    if (kv_endpoint && !embedding_only_) {
        const std::string pod = opts_.kv_events_pod.empty()
                                    ? kv_endpoint->host + ":" + std::to_string(kv_endpoint->port)
                                    : opts_.kv_events_pod;
        try {
            kv_pub_ = std::make_unique<KvEventPublisher>(opts_.kv_events, "kv@" + pod + "@" + model_name_,
                                                         &metrics_.kv_events_dropped);
        } catch (...) {
            llama_batch_free(batch_);
            llama_free(ctx_);
            llama_model_free(model_);
            throw;
        }
        kv_blocks_ = std::make_unique<KvBlockTracker>(opts_.kv_block_size, opts_.n_slots);
        kv_blocks_->clear_all();  // a (re)started replica holds nothing: subscribers drop what it held before
    }
    try {
        init_spec();
    } catch (...) {
        free_engine();
        throw;
    }
}

void Engine::init_spec() {
    const SpecServeOptions &sp = opts_.spec;
    if (!sp.enabled()) return;
    if (embedding_only_)
        throw std::runtime_error(
            "speculative decoding (--model-draft, --lookup) needs a model that generates text; this one "
            "makes "
            "embeddings");
    if (llama_model_has_encoder(model_))
        throw std::runtime_error(
            opts_.model_path +
            " is an encoder-decoder model: speculative decoding drafts for decoder-only models");
    if (const std::string e = generate::spec_context_check(ctx_, "target"); !e.empty())
        throw std::runtime_error(e);
    if (sp.lookup && !sp.model_draft.empty())
        throw std::runtime_error(
            "--model-draft and prompt lookup (--lookup, --lookup-ngram-*) are two drafters: choose one");
    if (!sp.model_draft.empty()) {
        draft_model_ = llama_model_load_from_file(sp.model_draft.c_str(), llama_model_default_params());
        if (!draft_model_) throw std::runtime_error("cannot load the draft model '" + sp.model_draft + "'");
        const std::string e = generate::spec_vocab_check(vocab_, llama_model_get_vocab(draft_model_));
        if (!e.empty())
            throw std::runtime_error(sp.model_draft + " cannot draft for " + opts_.model_path + ": " + e);
        llama_context_params dp = llama_context_default_params();
        dp.n_ctx =
            static_cast<uint32_t>(sp.ctx_draft > 0 ? sp.ctx_draft : static_cast<int32_t>(llama_n_ctx(ctx_)));
        dp.n_batch = static_cast<uint32_t>(max_step_);  // a slot's history catches up in chunks of this size
        dp.n_ubatch = static_cast<uint32_t>(std::min(max_step_, 512));
        dp.n_seq_max = static_cast<uint32_t>(opts_.n_slots);
        const int td = sp.threads_draft > 0 ? sp.threads_draft : opts_.n_threads;
        const int tbd = sp.threads_batch_draft > 0 ? sp.threads_batch_draft : td;
        if (td > 0) dp.n_threads = td;
        if (tbd > 0) dp.n_threads_batch = tbd;
        dp.no_perf = true;
        dp.type_k = opts_.type_k;
        dp.type_v = opts_.type_v;
        dp.flash_attn = opts_.flash_attn;
        draft_ctx_ = llama_init_from_model(draft_model_, dp);
        if (!draft_ctx_)
            throw std::runtime_error("cannot create a context of " + std::to_string(dp.n_ctx) +
                                     " cells for the draft model '" + sp.model_draft + "'");
        if (const std::string e2 = generate::spec_context_check(draft_ctx_, "draft"); !e2.empty())
            throw std::runtime_error(e2);
        lctx_kv_cache_place_by_sequence(draft_ctx_, true);  // as the target's: each slot's cells together
    }
    // One drafter per slot: the draft model drafts in the slot's own sequence of its context.
    for (auto &s : slots_) {
        if (draft_ctx_)
            s->drafter = std::make_unique<generate::ModelDrafter>(draft_ctx_, sp.p_min, s->id);
        else
            s->drafter = std::make_unique<generate::NgramDrafter>(sp.ngram_min, sp.ngram_max);
    }
}

Engine::~Engine() {
    stop();
    for (auto &s : slots_) s->end_task();
    free_engine();
}

void Engine::free_engine() {
    slots_.clear();  // the drafters use the draft context
    if (draft_ctx_) llama_free(draft_ctx_);
    if (draft_model_) llama_model_free(draft_model_);
    llama_batch_free(batch_);
    llama_free(ctx_);
    llama_model_free(model_);
}

void Engine::start() {
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
}

void Engine::stop() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    // Requests still queued (or all of them when the loop never ran) end here.
    std::deque<Task> left;
    {
        std::lock_guard<std::mutex> lk(mu_);
        left.swap(queue_);
        metrics_.waiting = 0;
        for (auto &j : embed_jobs_) {  // only when the loop never ran: it answers the others
            j->error.emplace(503, "the server is shutting down", "unavailable_error");
            j->done = true;
        }
        embed_jobs_.clear();
    }
    cv_.notify_all();
    metrics_.finished_abort += left.size();
    for (Task &t : left) {
        Event e;
        e.kind = Event::Failed;
        e.index = t.index;
        e.error = "the server is shutting down";
        e.status = 503;
        t.channel->push(std::move(e));
    }
}

void Engine::submit(std::vector<Task> tasks) {
    if (embedding_only_)
        throw ApiError(400,
                       "this model makes embeddings only (an encoder): use /v1/embeddings (or /v1/rerank)",
                       "invalid_request_error");
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stopping_) throw ApiError(503, "the server is shutting down", "unavailable_error");
        // Tasks may wait for a slot up to max_queue; the free slots take the rest at the next step.
        const size_t free_slots = static_cast<size_t>(
            std::count_if(slots_.begin(), slots_.end(), [](const auto &s) { return !s->busy.load(); }));
        if (queue_.size() + tasks.size() > static_cast<size_t>(opts_.max_queue) + free_slots)
            throw ApiError(503, "the server is busy: every slot is taken and the queue is full",
                           "unavailable_error");
        const auto now = std::chrono::steady_clock::now();
        for (Task &t : tasks) {
            t.t_arrival = now;
            queue_.push_back(std::move(t));
        }
        metrics_.waiting = static_cast<int64_t>(queue_.size());
    }
    cv_.notify_all();
}

// ---- LoRA adapters ----

nlohmann::json Engine::lora_adapters() const {
    std::lock_guard<std::mutex> lk(mu_);
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < lora_.size(); ++i)
        out.push_back({{"id", i}, {"path", opts_.lora[i].first}, {"scale", lora_scales_[i]}});
    return out;
}

namespace {

// [{id, scale}] -> one scale per adapter, those left out 0 (llama-server's parse_lora_request).
std::vector<float> parse_lora_list(const nlohmann::json &list, size_t n_adapters) {
    if (!list.is_array())
        throw ApiError(400, "lora must be an array of {id, scale}", "invalid_request_error", "lora");
    std::vector<float> scales(n_adapters, 0.0f);
    for (const nlohmann::json &e : list) {
        if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer())
            throw ApiError(400, "each lora entry needs an integer id", "invalid_request_error", "lora");
        const int64_t id = e["id"].get<int64_t>();
        if (id < 0 || static_cast<size_t>(id) >= n_adapters)
            throw ApiError(400,
                           "invalid adapter id " + std::to_string(id) + " (the server has " +
                               std::to_string(n_adapters) + " adapters)",
                           "invalid_request_error", "lora");
        const nlohmann::json &sc = e.contains("scale") ? e["scale"] : nlohmann::json(0.0);
        if (!sc.is_number() || !std::isfinite(sc.get<double>()))
            throw ApiError(400, "the scale of adapter " + std::to_string(id) + " must be a finite number",
                           "invalid_request_error", "lora");
        scales[static_cast<size_t>(id)] = sc.get<float>();
    }
    return scales;
}

}  // namespace

void Engine::set_lora_scales(const nlohmann::json &body) {
    std::vector<float> scales = parse_lora_list(body, lora_.size());
    std::lock_guard<std::mutex> lk(mu_);
    lora_scales_ = std::move(scales);
}

std::vector<float> Engine::lora_scales_for(const nlohmann::json *request_lora) const {
    if (request_lora) return parse_lora_list(*request_lora, lora_.size());
    std::lock_guard<std::mutex> lk(mu_);
    return lora_scales_;
}

void Engine::apply_lora(const std::vector<float> &scales) {
    if (scales == applied_lora_) return;
    llama_clear_adapter_lora(ctx_);
    for (size_t i = 0; i < lora_.size(); ++i)
        if (scales[i] != 0.0f) llama_set_adapter_lora(ctx_, lora_[i], scales[i]);
    applied_lora_ = scales;
}

// ---- model-side helpers ----

std::vector<int32_t> Engine::tokenize(const std::string &text, bool add_special, bool parse_special) const {
    return generate::tokenize(vocab_, text, add_special, parse_special);
}

std::string Engine::token_text(int32_t token) const {
    return generate::token_piece(vocab_, token, false);
}
std::string Engine::token_text_special(int32_t token) const {
    return generate::token_piece(vocab_, token, true);
}

std::string Engine::detokenize(const std::vector<int32_t> &tokens) const {
    std::string out;
    for (int32_t t : tokens) out += generate::token_piece(vocab_, t, true);
    return out;
}

std::string Engine::render_chat(const std::vector<ChatTurn> &turns, bool add_generation_prompt) const {
    std::vector<ChatMessage> msgs;
    for (const ChatTurn &t : turns) msgs.push_back({t.role, t.content});
    try {
        return chat_->render(msgs, add_generation_prompt).prompt;
    } catch (const std::exception &e) {
        throw ApiError(400, std::string("the chat template failed: ") + e.what());
    }
}

std::vector<int32_t> Engine::tokenize_chat(const std::string &prompt) const {
    return chat_->tokenize(prompt);
}

generate::FimTokens Engine::fim_tokens() const {
    generate::FimTokens t;
    t.pre = llama_vocab_fim_pre(vocab_);
    t.suf = llama_vocab_fim_suf(vocab_);
    t.mid = llama_vocab_fim_mid(vocab_);
    t.rep = llama_vocab_fim_rep(vocab_);
    t.sep = llama_vocab_fim_sep(vocab_);
    t.bos = llama_vocab_bos(vocab_);
    t.add_bos = llama_vocab_get_add_bos(vocab_);
    return t;
}

std::vector<SlotInfo> Engine::slots_info() const {
    std::vector<SlotInfo> out;
    for (const auto &s : slots_) out.push_back({s->id, s->busy.load(), s->n_cached_pub.load()});
    return out;
}

bool Engine::idle() const {
    std::lock_guard<std::mutex> lk(mu_);
    return queue_.empty() &&
           std::none_of(slots_.begin(), slots_.end(), [](const auto &s) { return s->busy.load(); });
}

// ---- the decode loop ----

void Engine::loop() {
    std::deque<std::function<void()>> cmds;
    std::vector<std::shared_ptr<EmbedJob>> embeds;
    flush_kv_events();  // the start's AllBlocksCleared
    for (;;) {
        {
            std::unique_lock<std::mutex> lk(mu_);
            const bool idle =
                std::none_of(slots_.begin(), slots_.end(), [](const auto &s) { return s->busy.load(); });
            cv_.wait(lk, [&] {
                return stopping_ ||
                       (!paused_ && (!idle || !queue_.empty() || !commands_.empty() || !embed_jobs_.empty()));
            });
            if (stopping_) break;
            cmds.swap(commands_);
            embeds.swap(embed_jobs_);  // every embedding request queued by now shares the passes
        }
        for (auto &c : cmds) c();
        cmds.clear();
        if (!embeds.empty()) run_embed_jobs(embeds);
        embeds.clear();
        flush_kv_events();
        // A client gone frees its slot and cells before anything else.
        for (auto &s : slots_)
            if (s->busy && s->task.channel->cancelled()) {
                release_cells(*s);
                s->end_task();
                metrics_.requests_total++;
                metrics_.finished_abort++;
            }
        assign_waiting();
        step();
        flush_kv_events();
    }
    for (auto &s : slots_)
        if (s->busy) fail(*s, "the server is shutting down", 503);
    update_kv_metrics();
    if (kv_blocks_) kv_blocks_->clear_all();  // a stopped replica holds nothing
    flush_kv_events();
    // Slot actions and embedding requests that arrived too late still get an answer (each takes the mutex
    // to hand it over).
    {
        std::lock_guard<std::mutex> lk(mu_);
        cmds.swap(commands_);
        embeds.swap(embed_jobs_);
    }
    for (auto &c : cmds) c();
    if (!embeds.empty()) run_embed_jobs(embeds);
}

// The result travels back as a value and an error as its fields, under the engine's mutex: no exception
// object is shared between the threads (its reference count lives in the uninstrumented C++ runtime, where
// ThreadSanitizer cannot see that the handler was done with it before the loop dropped its copy), and the
// handler's thread throws an ApiError of its own.
template <typename R, typename F>
R Engine::run_on_loop(F work) {
    struct Outcome {
        bool done = false;
        std::optional<R> value;
        std::optional<ApiError> error;
    };
    auto out = std::make_shared<Outcome>();
    auto run = [this, work = std::move(work), out]() mutable {
        std::optional<R> value;
        std::optional<ApiError> error;
        try {
            value.emplace(work());
        } catch (const ApiError &e) {
            error.emplace(e.status, e.what(), e.type, e.param);
        } catch (const std::exception &e) {
            error.emplace(500, e.what(), "server_error");
        }
        {
            std::lock_guard<std::mutex> lk(mu_);
            out->value = std::move(value);
            out->error = std::move(error);
            out->done = true;
        }
        cv_.notify_all();
    };
    std::unique_lock<std::mutex> lk(mu_);
    if (stopping_) throw ApiError(503, "the server is shutting down", "unavailable_error");
    commands_.push_back(std::move(run));
    cv_.notify_all();
    cv_.wait(lk, [&] { return out->done; });
    if (out->error)
        throw ApiError(out->error->status, out->error->what(), out->error->type, out->error->param);
    return std::move(*out->value);
}

nlohmann::json Engine::slot_action(int32_t id, const std::string &action, const std::string &path) {
    if (id < 0 || id >= opts_.n_slots)
        throw ApiError(404, "no slot " + std::to_string(id), "not_found_error");
    if (action != "save" && action != "restore" && action != "erase")
        throw ApiError(400, "action must be save, restore or erase", "invalid_request_error", "action");
    return run_on_loop<nlohmann::json>([this, id, &action, &path] {
        Slot &s = *slots_[static_cast<size_t>(id)];
        if (s.busy)
            throw ApiError(409, "slot " + std::to_string(id) + " is processing a request", "conflict_error");
        const int64_t t0 = now_us();
        nlohmann::json out = {{"id_slot", id}};
        if (action == "erase") {
            out["n_erased"] = s.cache.size();
            release_cells(s);
            if (kv_blocks_ && kv_blocks_->n_blocks() == 0) kv_blocks_->clear_all();  // nothing left anywhere
        } else if (action == "save") {
            const size_t n =
                llama_state_seq_save_file(ctx_, path.c_str(), s.id, s.cache.data(), s.cache.size());
            if (n == 0) throw ApiError(500, "the slot could not be saved to the file", "server_error");
            out["filename"] = std::filesystem::path(path).filename().string();
            out["n_saved"] = s.cache.size();
            out["n_written"] = n;
            out["timings"] = {{"save_ms", double(now_us() - t0) / 1000.0}};
        } else {
            std::vector<int32_t> toks(static_cast<size_t>(slot_ctx_));
            size_t n_tok = 0;
            release_cells(s);
            const size_t n =
                llama_state_seq_load_file(ctx_, path.c_str(), s.id, toks.data(), toks.size(), &n_tok);
            if (n == 0) {
                release_cells(s);
                throw ApiError(400, "the file is not a slot state this slot can hold",
                               "invalid_request_error");
            }
            toks.resize(n_tok);
            s.cache = std::move(toks);
            s.lora = lora_scales_for(nullptr);  // taken as computed with the global adapter scales
            sync_blocks(s, s.cache.size());
            out["filename"] = std::filesystem::path(path).filename().string();
            out["n_restored"] = s.cache.size();
            out["n_read"] = n;
            out["timings"] = {{"restore_ms", double(now_us() - t0) / 1000.0}};
        }
        update_kv_metrics();
        return out;
    });
}

std::vector<int32_t> Engine::rerank_tokens(const std::string &query, const std::string &doc) const {
    return generate::rerank_tokens(vocab_, query, doc);
}

std::vector<std::vector<float>> Engine::embed(const std::vector<std::vector<int32_t>> &inputs) {
    if (!embedding_only_)
        throw ApiError(400, "this model generates text; embeddings need an embedding model (an encoder)",
                       "invalid_request_error");
    if (pooling_ == LLAMA_POOLING_TYPE_NONE)
        throw ApiError(400,
                       "this model has no pooling (pooling none): a vector per input needs mean, cls or last",
                       "invalid_request_error");
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].empty())
            throw ApiError(400, "input " + std::to_string(i) + " gives no tokens", "invalid_request_error",
                           "input");
        if (static_cast<int64_t>(inputs[i].size()) > max_embed_tokens_)
            throw ApiError(400,
                           "input " + std::to_string(i) + " has " + std::to_string(inputs[i].size()) +
                               " tokens; the model takes at most " + std::to_string(max_embed_tokens_),
                           "invalid_request_error", "input");
        for (int32_t t : inputs[i])
            if (t < 0 || t >= n_vocab_)
                throw ApiError(400, "input " + std::to_string(i) + " holds a token id outside the vocabulary",
                               "invalid_request_error", "input");
    }
    if (inputs.empty()) return {};
    // The loop answers under mu_ (as run_on_loop: no exception object crosses threads); inputs outlive the
    // job's use, as this thread waits for its answer.
    auto job = std::make_shared<EmbedJob>();
    job->inputs = &inputs;
    std::unique_lock<std::mutex> lk(mu_);
    if (stopping_) throw ApiError(503, "the server is shutting down", "unavailable_error");
    embed_jobs_.push_back(job);
    cv_.notify_all();
    cv_.wait(lk, [&] { return job->done; });
    if (job->error)
        throw ApiError(job->error->status, job->error->what(), job->error->type, job->error->param);
    return std::move(job->rows);
}

void Engine::run_embed_jobs(const std::vector<std::shared_ptr<EmbedJob>> &jobs) {
    using Rows = std::vector<std::vector<float>>;
    apply_lora(lora_scales_for(nullptr));  // an embedding pass takes the global adapter scales
    // Passes of at most n_slots inputs and max_embed_tokens_ tokens (the context's n_seq_max and
    // n_batch = n_ubatch), as the generation layer packs them; pooling gives each input its own row.
    auto run = [this](const std::vector<std::vector<int32_t>> &inputs, Rows *rows) -> std::string {
        size_t n_passes = 0;
        try {  // what throws (out of memory) fails these requests, not the loop
            const std::string why = generate::embed_sequences(ctx_, inputs, rows, &n_passes);
            metrics_.embed_passes += n_passes;
            return why;
        } catch (const std::exception &e) {
            return e.what();
        }
    };
    std::vector<Rows> answers(jobs.size());
    std::vector<std::string> errors(jobs.size());
    bool together = false;
    if (jobs.size() > 1) {
        std::vector<std::vector<int32_t>> all;
        for (const auto &j : jobs) all.insert(all.end(), j->inputs->begin(), j->inputs->end());
        Rows rows;
        if (run(all, &rows).empty() && rows.size() == all.size()) {
            together = true;
            auto next = rows.begin();
            for (size_t i = 0; i < jobs.size(); ++i) {
                const auto n = static_cast<std::ptrdiff_t>(jobs[i]->inputs->size());
                answers[i].assign(std::make_move_iterator(next), std::make_move_iterator(next + n));
                next += n;
            }
        }
    }
    if (!together)
        for (size_t i = 0; i < jobs.size(); ++i) errors[i] = run(*jobs[i]->inputs, &answers[i]);
    metrics_.embed_requests += jobs.size();
    {
        std::lock_guard<std::mutex> lk(mu_);
        for (size_t i = 0; i < jobs.size(); ++i) {
            if (!errors[i].empty())
                jobs[i]->error.emplace(500, "the embedding pass failed: " + errors[i], "server_error");
            else
                jobs[i]->rows = std::move(answers[i]);
            jobs[i]->done = true;
        }
    }
    cv_.notify_all();
}

void Engine::pause_loop(bool paused) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        paused_ = paused;
    }
    cv_.notify_all();
}

size_t Engine::embed_requests_queued() const {
    std::lock_guard<std::mutex> lk(mu_);
    return embed_jobs_.size();
}

bool Engine::assign_waiting() {
    std::lock_guard<std::mutex> lk(mu_);
    bool any = false;
    for (size_t qi = 0; qi < queue_.size();) {
        if (queue_[qi].channel->cancelled()) {
            queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(qi));
            metrics_.finished_abort++;
            continue;
        }
        // The free slot whose cache shares the longest prefix with the prompt, when that prefix is at
        // least half the prompt (llama-server's similarity rule: a shared BOS alone must not evict a
        // useful cache); else the least recently used free slot. A task that asks for one slot (id_slot)
        // waits for it, and the tasks behind it go on.
        const Task &task = queue_[qi];
        const std::vector<int32_t> &prompt = task.prompt;
        Slot *best = nullptr, *lru = nullptr;
        size_t best_lcp = 0;
        // A cache computed with other adapter scales holds other K/V: it shares no prefix.
        const std::vector<float> &lora = task.lora;
        auto prefix = [&](const Slot &sl) {
            return sl.lora == lora && task.cache_prompt ? common_prefix(sl.cache, prompt) : 0;
        };
        for (auto &s : slots_) {
            if (s->busy || (task.id_slot >= 0 && s->id != task.id_slot)) continue;
            const size_t lcp = prefix(*s);
            if (2 * lcp >= prompt.size() && lcp > best_lcp) {
                best = s.get();
                best_lcp = lcp;
            }
            if (!lru || s->last_used < lru->last_used) lru = s.get();
        }
        if (!best) {
            best = lru;
            best_lcp = lru ? prefix(*lru) : 0;
        }
        if (!best && task.id_slot >= 0) {
            ++qi;
            continue;
        }
        if (!best) break;
        Slot &s = *best;
        s.task = std::move(queue_[qi]);
        queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(qi));
        s.busy = true;
        s.last_used = ++use_clock_;
        any = true;
        // At least the last prompt token is evaluated again: its logits start the reply.
        size_t keep = std::min(best_lcp, s.task.prompt.size() - 1);
        if (keep < s.cache.size() && !llama_kv_cache_seq_rm(ctx_, s.id, static_cast<llama_pos>(keep), -1)) {
            // A sequence that cannot lose only its tail (recurrent state) starts over.
            llama_kv_cache_seq_rm(ctx_, s.id, -1, -1);
            keep = 0;
        }
        s.cache.resize(keep);
        s.lora = s.task.lora;
        sync_blocks(s, keep);
        s.n_cached = static_cast<int32_t>(keep);
        s.n_generated = 0;
        s.generating = false;
        s.t_start = std::chrono::steady_clock::now();
        s.text = std::make_unique<generate::TextStream>(s.task.stop);
        metrics_.prefix_queries += s.task.prompt.size();
        metrics_.prefix_hits += keep;

        // The sampler chain: grammar -> logit bias -> the samplers in the request's order -> a draw. A
        // request that drafts keeps the chain without its draw as the filters of its verifier, which draws
        // itself.
        std::string why;
        const generate::SamplingConfig sc = sampling_config(s.task.sampling, s.task.grammar, s.task.seed);
        const bool spec = s.drafter && drafts(s.task);
        s.chain = spec ? generate::make_filter_chain(sc, vocab_, slot_ctx_, &why)
                       : generate::make_sampler_chain(sc, vocab_, slot_ctx_, &why);
        s.n_drafted = s.n_accepted = 0;
        if (!s.chain) {
            fail(s, why);
        } else if (spec) {
            generate::SpecSampling ss;
            ss.filters = s.chain;
            ss.greedy = s.task.sampling.config.temperature <= 0.0f;
            ss.seed = s.task.seed;
            s.verifier = std::make_unique<generate::SpecVerifier>(n_vocab_, ss);
        }
    }
    metrics_.waiting = static_cast<int64_t>(queue_.size());
    metrics_.running =
        std::count_if(slots_.begin(), slots_.end(), [](const auto &s) { return s->busy.load(); });
    return any;
}

void Engine::step() {
    batch_.n_tokens = 0;
    auto add = [&](Slot &s, int32_t token, bool logits) {
        const int32_t i = batch_.n_tokens++;
        batch_.token[i] = token;
        batch_.pos[i] = static_cast<llama_pos>(s.cache.size());
        batch_.n_seq_id[i] = 1;
        batch_.seq_id[i][0] = s.id;
        batch_.logits[i] = logits ? 1 : 0;
        s.cache.push_back(token);
        s.in_step = true;
        if (logits) s.i_batch = i;
    };
    // One decode applies one set of adapter scales: the step takes the slots of the set whose slot has waited
    // longest (the others take a later step, so every set moves in turn).
    const Slot *oldest = nullptr;
    for (auto &sp : slots_) {
        sp->i_batch = -1;
        sp->in_step = false;
        sp->draft.tokens.clear();
        sp->draft.q.clear();
        if (sp->busy && (!oldest || sp->last_step < oldest->last_step)) oldest = sp.get();
    }
    const std::vector<float> step_lora = oldest ? oldest->lora : applied_lora_;
    auto joins = [&](const Slot &s) { return s.busy && s.lora == step_lora; };
    std::vector<Slot *> prompting;
    int32_t n_generating = 0, n_drafting = 0;
    for (auto &sp : slots_) {
        if (!joins(*sp)) continue;
        if (!sp->generating) {
            prompting.push_back(sp.get());
            continue;
        }
        ++n_generating;
        if (sp->verifier) ++n_drafting;
    }
    // Small steps keep the other requests' tokens flowing (a new request waits at most one step); a lone
    // request, which nobody waits behind, takes large ones.
    const bool alone = prompting.size() + static_cast<size_t>(n_generating) == 1;
    const int32_t step_budget = alone ? max_step_ : opts_.step_tokens;
    // The step's draft tokens, all slots together: --draft-batch-max, or what the budget leaves after the
    // generating slots' own tokens; each drafting slot gets an even share of what the ones before it left.
    int32_t drafts_left =
        opts_.spec.batch_max > 0 ? opts_.spec.batch_max : std::max(0, step_budget - n_generating);
    int32_t n_drafts = 0;
    // Generating slots first: one token each, and a drafting slot's draft right after its token (verified by
    // this decode's logits rows, in the same batch as the other slots' tokens).
    int32_t n_gen = 0;
    for (auto &sp : slots_) {
        Slot &s = *sp;
        if (!joins(s) || !s.generating) continue;
        add(s, s.next_token, true);
        ++n_gen;
        if (!s.verifier) continue;
        const int32_t added = add_draft(s, drafts_left / n_drafting--);
        drafts_left -= added;
        n_drafts += added;
    }
    if (n_drafts > metrics_.spec_step_draft_max.load()) metrics_.spec_step_draft_max = n_drafts;
    // Then prompt chunks: the remaining budget shared evenly, so every waiting prompt moves each step.
    // (Drafts do not count: they ride along with their slot's token.)
    int32_t n_prompt = 0;
    for (size_t k = 0; k < prompting.size(); ++k) {
        Slot &s = *prompting[k];
        const int32_t budget = std::min(step_budget - n_gen - n_prompt, max_batch_ - batch_.n_tokens);
        if (budget <= 0) break;
        const int32_t share = std::max<int32_t>(1, budget / static_cast<int32_t>(prompting.size() - k));
        const int32_t left = static_cast<int32_t>(s.task.prompt.size() - s.cache.size());
        const int32_t take = std::min(left, share);
        for (int32_t j = 0; j < take; ++j) {
            const size_t at = s.cache.size();
            add(s, s.task.prompt[at], at + 1 == s.task.prompt.size());
        }
        n_prompt += take;
    }
    if (batch_.n_tokens == 0) {
        update_kv_metrics();  // a cancelled slot may just have freed its cells
        return;
    }

    ++step_clock_;
    for (auto &sp : slots_)
        if (sp->in_step) sp->last_step = step_clock_;
    apply_lora(step_lora);
    const int64_t t0 = now_us();
    const int32_t rc = llama_decode(ctx_, batch_);
    const int64_t dt = now_us() - t0;
    metrics_.decode_steps++;
    for (auto &sp : slots_)
        if (sp->in_step) metrics_.busy_slot_steps++;
    if (n_prompt > 0) {
        metrics_.prompt_tokens += static_cast<uint64_t>(n_prompt);
        metrics_.prompt_us += static_cast<uint64_t>(dt);
    } else {
        metrics_.generation_us += static_cast<uint64_t>(dt);
    }
    if (rc != 0) {
        // The batch's slots end with an error; their sequences start over.
        for (auto &sp : slots_)
            if (sp->busy && sp->in_step) {
                release_cells(*sp);
                fail(*sp, "decoding failed (llama_decode returned " + std::to_string(rc) + ")");
            }
        update_kv_metrics();
        return;
    }
    // The prompt tokens just evaluated may complete blocks (a generating slot's prompt part does not change).
    for (Slot *sp : prompting)
        if (sp->in_step) sync_blocks(*sp, std::min(sp->cache.size(), sp->task.prompt.size()));
    for (auto &sp : slots_) {
        if (!sp->busy || sp->i_batch < 0) continue;
        if (sp->verifier)
            verify_slot(*sp, sp->i_batch);
        else
            sample_slot(*sp, sp->i_batch);
    }
    update_kv_metrics();
}

bool Engine::drafts(const Task &t) const {
    // What the verifier cannot honour yet decodes plainly in its slot, never with a wrong result: a grammar
    // (its sampler would have to follow each draft token and be rolled back on a rejection),
    // log-probabilities and n_probs (they come from the plain path's one row per token), and Mirostat (it
    // draws by itself, so it cannot be a filter before the verifier's draw). Logit biases (ignore_eos),
    // penalties, DRY and the distribution samplers in any order are the verifier's filters.
    return opts_.spec.enabled() && t.grammar.empty() && t.top_logprobs < 0 && t.sampling.config.mirostat == 0;
}

int32_t Engine::add_draft(Slot &s, int32_t budget) {
    // s.cache is the slot's history with its next token (just added): the draft must fit the slot's cells
    // with it, and a draft past the tokens the request may still take would be thrown away.
    int32_t k_max = std::min(opts_.spec.n_max, slot_ctx_ - static_cast<int32_t>(s.cache.size()));
    if (s.task.max_tokens > 0) k_max = std::min(k_max, s.task.max_tokens - s.n_generated - 1);
    k_max = std::min({k_max, budget, max_batch_ - batch_.n_tokens});
    generate::spec_draft(s.drafter.get(), s.cache, k_max, opts_.spec.n_min, n_vocab_, &s.draft);
    const int32_t row = s.i_batch;  // the verification's first row: the next token's
    for (const llama_token t : s.draft.tokens) {
        const int32_t i = batch_.n_tokens++;
        batch_.token[i] = t;
        batch_.pos[i] = static_cast<llama_pos>(s.cache.size());
        batch_.n_seq_id[i] = 1;
        batch_.seq_id[i][0] = s.id;
        batch_.logits[i] = 1;
        s.cache.push_back(t);
    }
    s.i_batch = row;
    return static_cast<int32_t>(s.draft.tokens.size());
}

void Engine::verify_slot(Slot &s, int32_t bi) {
    const int32_t k = static_cast<int32_t>(s.draft.tokens.size());
    std::vector<llama_token> toks;
    std::string why;
    const int32_t accepted = s.verifier->verify(
        s.draft, [&](int32_t i) { return llama_get_logits_ith(ctx_, bi + i); }, &toks, &why);
    if (accepted < 0) {
        fail(s, why);
        return;
    }
    if (accepted < k) {
        // The rejected draft tokens leave the slot's cells: the cache is the history, the accepted prefix of
        // the draft with it (the token chosen after it is the next to decode).
        const size_t keep = s.cache.size() - static_cast<size_t>(k - accepted);
        if (!llama_kv_cache_seq_rm(ctx_, s.id, static_cast<llama_pos>(keep), -1)) {
            release_cells(s);
            fail(s, "the slot's cache could not drop the rejected draft tokens");
            return;
        }
        s.cache.resize(keep);
    }
    if (k > 0) {
        s.n_drafted += k;
        metrics_.spec_drafts++;
        metrics_.spec_draft_tokens += static_cast<uint64_t>(k);
    }
    // In order, as the plain path streams them; an accepted token is counted once, when it is streamed (the
    // ones after an end of the request are not).
    for (size_t i = 0; i < toks.size(); ++i) {
        if (static_cast<int32_t>(i) < accepted) {
            s.n_accepted++;
            metrics_.spec_accepted_tokens++;
        }
        Event ev;
        ev.index = s.task.index;
        if (!emit(s, toks[i], ev)) return;
    }
    go_on(s, toks.back());
}

void Engine::sample_slot(Slot &s, int32_t bi) {
    Event ev;
    ev.index = s.task.index;
    // Log-probabilities come from the model's distribution, before sampling's filters.
    const float *row = s.task.top_logprobs >= 0 ? llama_get_logits_ith(ctx_, bi) : nullptr;
    float lse = 0.0f;
    if (row) {
        const float mx = *std::max_element(row, row + n_vocab_);
        double sum = 0.0;
        for (int32_t i = 0; i < n_vocab_; ++i) sum += std::exp(static_cast<double>(row[i] - mx));
        lse = mx + static_cast<float>(std::log(sum));
        std::vector<int32_t> idx(static_cast<size_t>(n_vocab_));
        std::iota(idx.begin(), idx.end(), 0);
        const size_t k = std::min<size_t>(static_cast<size_t>(s.task.top_logprobs), idx.size());
        std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                          [&](int32_t a, int32_t b) { return row[a] > row[b]; });
        for (size_t j = 0; j < k; ++j) ev.top.push_back({idx[j], token_text(idx[j]), row[idx[j]] - lse});
    }
    const int32_t tok = llama_sampler_sample(s.chain, ctx_, bi);
    if (row && tok >= 0 && tok < n_vocab_) ev.logprob = row[tok] - lse;
    if (tok < 0) {
        fail(s, "sampling failed");
        return;
    }
    if (emit(s, tok, ev)) go_on(s, tok);
}

bool Engine::emit(Slot &s, int32_t tok, Event &ev) {
    const auto now = std::chrono::steady_clock::now();
    using secs = std::chrono::duration<double>;
    if (s.n_generated == 0) {
        s.t_first = now;
        metrics_.request_prompt_tokens += s.task.prompt.size();
        metrics_.ttft.observe(secs(now - s.task.t_arrival).count());
    } else {
        metrics_.inter_token.observe(secs(now - s.t_last).count());
    }
    s.t_last = now;
    s.generating = true;
    s.n_generated++;
    metrics_.generated_tokens++;
    if (llama_vocab_is_eog(vocab_, tok)) {
        finish(s, "stop");
        return false;
    }
    ev.token = tok;
    const auto &keep = s.task.preserved_tokens;
    ev.token_text =
        std::binary_search(keep.begin(), keep.end(), tok) ? token_text_special(tok) : token_text(tok);
    ev.text = s.text->push(ev.token_text);
    s.task.channel->push(ev);
    if (s.text->stopped()) {
        finish(s, "stop");
        return false;
    }
    if (s.task.max_tokens > 0 && s.n_generated >= s.task.max_tokens) {
        finish(s, "length");
        return false;
    }
    return true;
}

void Engine::go_on(Slot &s, int32_t tok) {
    s.next_token = tok;
    if (static_cast<int32_t>(s.cache.size()) + 1 > slot_ctx_) {
        // No cell left for the next token: shift when asked for (and a length was given), else stop.
        if (opts_.context_shift && s.task.max_tokens > 0 && llama_kv_cache_can_shift(ctx_))
            shift(s);
        else
            finish(s, "length");
    }
}

void Engine::shift(Slot &s) {
    // The generation layer's shift: keep the first token (usually BOS), drop half of the rest, move the tail
    // down (the slot's cells are its cache's tokens, positions 0 to size - 1).
    generate::ContextShift policy;
    policy.n_keep = 1;
    const int32_t n_keep = policy.n_keep;
    const int32_t n_discard = generate::shift_context(ctx_, s.id, policy);
    s.cache.erase(s.cache.begin() + n_keep, s.cache.begin() + n_keep + n_discard);
    // The prompt tokens after the dropped ones moved down with the rest.
    const size_t p = s.n_block_tokens, k = static_cast<size_t>(n_keep), d = static_cast<size_t>(n_discard);
    sync_blocks(s, p > k + d ? p - d : std::min(p, k));
}

void Engine::finish(Slot &s, const char *reason) {
    const std::string rest = s.text->flush();
    Event done;
    done.index = s.task.index;
    if (!rest.empty()) {
        Event t;
        t.index = s.task.index;
        t.text = rest;
        s.task.channel->push(std::move(t));
    }
    done.kind = Event::Done;
    done.finish_reason = reason;
    done.slot = s.id;
    if (std::string(reason) == "length") {
        done.stop_type = "limit";
    } else if (s.text->stopped()) {
        done.stop_type = "word";
        done.stopping_word = s.text->stop_word();
    } else {
        done.stop_type = "eos";
    }
    done.prompt_tokens = static_cast<int32_t>(s.task.prompt.size());
    done.drafted = s.verifier != nullptr;
    done.draft_n = s.n_drafted;
    done.draft_accepted = s.n_accepted;
    done.cached_tokens = s.n_cached;
    done.completion_tokens = s.n_generated;
    {
        using ms = std::chrono::duration<double, std::milli>;
        const auto now = std::chrono::steady_clock::now();
        const auto first = s.n_generated > 0 ? s.t_first : now;
        done.prompt_ms = ms(first - s.t_start).count();
        done.predicted_ms = ms(now - first).count();
    }
    // Counted before the client can see the end, so a scrape after the response always includes it.
    metrics_.requests_total++;
    metrics_.requests_success++;
    (done.stop_type == "limit" ? metrics_.finished_length : metrics_.finished_stop)++;
    {
        using secs = std::chrono::duration<double>;
        metrics_.e2e.observe(secs(std::chrono::steady_clock::now() - s.task.t_arrival).count());
        metrics_.queue_time.observe(secs(s.t_start - s.task.t_arrival).count());
    }
    std::shared_ptr<Channel> ch = s.task.channel;
    s.end_task();  // the cells stay: the next request may reuse this prefix
    update_kv_metrics();
    ch->push(std::move(done));
}

void Engine::fail(Slot &s, const std::string &why, int status) {
    Event e;
    e.kind = Event::Failed;
    e.index = s.task.index;
    e.error = why;
    e.status = status;
    metrics_.requests_total++;
    if (status == 503) metrics_.finished_abort++;  // ended by the shutdown
    std::shared_ptr<Channel> ch = s.task.channel;
    s.end_task();
    update_kv_metrics();
    if (ch) ch->push(std::move(e));
}

void Engine::release_cells(Slot &s) {
    llama_kv_cache_seq_rm(ctx_, s.id, -1, -1);
    s.cache.clear();
    sync_blocks(s, 0);
}

void Engine::sync_blocks(Slot &s, size_t n) {
    n = std::min(n, s.cache.size());
    s.n_block_tokens = n;
    if (!kv_blocks_) return;
    // The adapters the cells were computed with: none, or a key of their scales (lora_id: the first one).
    uint64_t key = 0;
    std::optional<int32_t> lora_id;
    for (size_t i = 0; i < s.lora.size(); ++i)
        if (s.lora[i] != 0.0f) {
            if (!lora_id) lora_id = static_cast<int32_t>(i);
            uint32_t bits;
            std::memcpy(&bits, &s.lora[i], sizeof bits);
            key = KvBlockTracker::block_hash(key ^ (i + 1), reinterpret_cast<const int32_t *>(&bits), 1);
        }
    kv_blocks_->set_slot(s.id, s.cache.data(), n, key, lora_id);
}

std::string Engine::kv_events_topic() const {
    return kv_pub_ ? kv_pub_->topic() : std::string();
}

void Engine::flush_kv_events() {
    if (!kv_pub_) return;
    if (kv_pub_->take_resync()) kv_blocks_->resync();
    std::vector<KvEvent> ev = kv_blocks_->take();
    if (!ev.empty()) kv_pub_->publish(std::move(ev));
}

void Engine::update_kv_metrics() {
    int64_t used = 0, running = 0;
    for (auto &s : slots_) {
        s->n_cached_pub = static_cast<int32_t>(s->cache.size());
        if (s->busy) {
            used += static_cast<int64_t>(s->cache.size());
            ++running;
        }
    }
    metrics_.kv_used = used;
    metrics_.kv_cells = llama_get_kv_cache_used_cells(ctx_);
    metrics_.running = running;
}

}  // namespace lctx::server
