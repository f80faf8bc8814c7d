#include "context/context.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "context/mask.h"
#include "context/recurrent_placement.h"
#include "kernels/attention.h"
#include "model/cls_head.h"
#include "util/error.h"
#include "util/log.h"

namespace lctx {

double Context::now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

Context::Context(const Model &model, const ContextParams &params) : model_(model), params_(params) {
    const HParams &hp = model.hparams();
    if (params_.n_ctx == 0) params_.n_ctx = hp.n_ctx_train;
    if (params_.n_ctx == 0) throw Error("n_ctx is 0 and the model gives no training context");
    if (params_.n_batch == 0) throw Error("n_batch must be greater than 0");
    if (params_.n_ubatch == 0) throw Error("n_ubatch must be greater than 0");
    // A micro-batch never holds more than a batch (llama.cpp clamps the same way).
    params_.n_ubatch = std::min(params_.n_ubatch, params_.n_batch);
    if (params_.n_threads < 1) params_.n_threads = 1;
    if (params_.n_threads_batch < 1) params_.n_threads_batch = params_.n_threads;
    if (params_.pooling == PoolingType::Unspecified) params_.pooling = PoolingType::None;
    if (params_.pooling == PoolingType::Rank && !has_cls_head(model.weights()))
        throw Error(
            "rank pooling needs a classification head (cls, cls.output), which this model does not have");

    switch (params_.attention) {
        case AttentionType::Causal:
            causal_attn_ = true;
            break;
        case AttentionType::NonCausal:
            causal_attn_ = false;
            break;
        default:
            causal_attn_ = hp.causal_attn;
            break;
    }
    const kernels::RopeParams rope = context_rope(hp, params_.rope);  // throws for a bad setting
    // b4748's llama_init_from_model refuses the same (whatever the model): a block-quantized V is stored by
    // rows, which only its flash-attention path reads.
    if (is_kv_cache_type(params_.type_v) && type_traits(params_.type_v).is_quantized && !params_.flash_attn)
        throw Error("V cache quantization requires flash_attn");
    // An encoder-decoder model's cache holds its decoder's layers (the encoder has cells of its own).
    kv_ = std::make_unique<KvCache>(hp, params_.n_ctx, params_.type_k, params_.type_v, params_.n_seq_max,
                                    /*v_trans=*/!params_.flash_attn, hp.n_layer_cache());
    kv_->set_rope(rope);
    pool_ = std::make_unique<kernels::ThreadPool>(std::max(params_.n_threads, params_.n_threads_batch));
    perf_.t_start_ms = now_ms();
}

Context::~Context() = default;

void Context::set_n_threads(int n_threads, int n_threads_batch) {
    params_.n_threads = std::max(1, n_threads);
    params_.n_threads_batch = std::max(1, n_threads_batch);
    const int need = std::max(params_.n_threads, params_.n_threads_batch);
    if (need != pool_->n_threads()) pool_ = std::make_unique<kernels::ThreadPool>(need);
}

void Context::attach_threadpools(kernels::ThreadPool *pool, kernels::ThreadPool *pool_batch) {
    attached_pool_ = pool;
    attached_pool_batch_ = pool ? (pool_batch ? pool_batch : pool) : nullptr;
}

kernels::ThreadPool &Context::pool_for(int32_t n_tokens) {
    const bool single = n_tokens == 1;
    kernels::ThreadPool *p = attached_pool_ ? (single ? attached_pool_ : attached_pool_batch_) : pool_.get();
    p->set_n_active(single ? params_.n_threads : params_.n_threads_batch);  // capped by the pool's size
    return *p;
}

void Context::set_control_vector(const float *data, size_t len, int32_t n_embd, int32_t il_start,
                                 int32_t il_end) {
    const HParams &hp = model_.hparams();
    if (!data) {
        cvec_.clear();
        return;
    }
    if (n_embd != static_cast<int32_t>(hp.n_embd))
        throw Error("control vector n_embd = " + std::to_string(n_embd) + " does not match the model's " +
                    std::to_string(hp.n_embd));
    // One row per layer of the longest stack (a t5 decoder can have more layers than its encoder: those
    // beyond the encoder's count get none, as b4748 sizes the vector by n_layer).
    std::vector<float> v(static_cast<size_t>(std::max(hp.n_layer, hp.n_layer_dec)) * hp.n_embd, 0.0f);
    for (uint32_t il = 1; il < hp.n_layer; ++il) {
        const size_t off = static_cast<size_t>(hp.n_embd) * (il - 1);
        if (off + hp.n_embd <= len) std::copy(data + off, data + off + hp.n_embd, v.begin() + il * hp.n_embd);
    }
    cvec_ = std::move(v);
    cvec_first_ = il_start;
    cvec_last_ = il_end;
}

void Context::perf_reset() {
    perf_ = PerfCounters{};
    perf_.t_start_ms = now_ms();
}

void Context::fill_seq_defaults(Batch &b, SeqDefaults &d) {
    static int32_t seq_zero = 0;
    if (!b.seq_id) {
        d.n_seq.assign(b.n_tokens, 1);
        d.seq.assign(b.n_tokens, &seq_zero);
        b.n_seq_id = d.n_seq.data();
        b.seq_id = d.seq.data();
    } else if (!b.n_seq_id) {
        d.n_seq.assign(b.n_tokens, 1);
        b.n_seq_id = d.n_seq.data();
    }
}

bool Context::validate(const Batch &b, const char *what) const {
    const HParams &hp = model_.hparams();
    if (b.n_tokens <= 0) {
        LCTX_LOG_ERROR("%s: the batch is empty (n_tokens = %d)", what, b.n_tokens);
        return false;
    }
    if (static_cast<uint32_t>(b.n_tokens) > params_.n_batch) {
        LCTX_LOG_ERROR("%s: the batch has %d tokens, more than n_batch = %u", what, b.n_tokens,
                       params_.n_batch);
        return false;
    }
    if ((b.token == nullptr) == (b.embd == nullptr)) {
        LCTX_LOG_ERROR("%s: a batch needs exactly one of token ids and embeddings", what);
        return false;
    }
    for (int32_t i = 0; i < b.n_tokens; ++i) {
        if (b.token && (b.token[i] < 0 || static_cast<uint32_t>(b.token[i]) >= hp.n_vocab)) {
            LCTX_LOG_ERROR("%s: token %d at batch index %d is outside the vocabulary [0, %u)", what,
                           b.token[i], i, hp.n_vocab);
            return false;
        }
        // Any id a cell can hold is accepted (b4748 takes any id for attention models; n_seq_max only
        // bounds the states of recurrent ones).
        if (b.seq_id) {
            const int32_t ns = b.n_seq_id ? b.n_seq_id[i] : 1;
            if (ns < 1 || ns > kMaxSeqs) {
                LCTX_LOG_ERROR("%s: batch index %d has %d sequence ids (must be 1..%d)", what, i, ns,
                               kMaxSeqs);
                return false;
            }
            for (int32_t s = 0; s < ns; ++s) {
                const int32_t id = b.seq_id[i][s];
                if (id < 0 || id >= kMaxSeqs) {
                    LCTX_LOG_ERROR("%s: sequence id %d at batch index %d is outside [0, %d)", what, id, i,
                                   kMaxSeqs);
                    return false;
                }
            }
        }
        if (b.pos && b.pos[i] < 0) {
            LCTX_LOG_ERROR("%s: position %d at batch index %d is negative", what, b.pos[i], i);
            return false;
        }
    }
    return true;
}

// A recurrent model keeps one state per sequence (n_seq_max of them) and runs a sequence's tokens in batch
// order: ids must lie below n_seq_max (b4748 finds no state cell for the others: 1, NoKvSlot), and a
// sequence's positions must increase along the batch (b4748 would sort them; a batch that needs it is refused
// instead: Error). Either way nothing changes.
DecodeStatus Context::validate_recurrent(const Batch &b) const {
    const int32_t n_seq_max = static_cast<int32_t>(kv_->size());
    for (int32_t i = 0; i < b.n_tokens; ++i) {
        const int32_t ns = b.seq_id && b.n_seq_id ? b.n_seq_id[i] : 1;
        for (int32_t s = 0; s < ns; ++s) {
            const int32_t id = b.seq_id ? b.seq_id[i][s] : 0;
            if (id >= n_seq_max) {
                LCTX_LOG_ERROR(
                    "decode: sequence id %d at batch index %d is not below n_seq_max = %d: a recurrent model "
                    "keeps one state per sequence; create the context with a larger n_seq_max",
                    id, i, n_seq_max);
                return DecodeStatus::NoKvSlot;
            }
        }
    }
    std::vector<int64_t> last(n_seq_max, -1);
    for (int32_t i = 0; i < b.n_tokens; ++i) {
        const int32_t ns = b.seq_id && b.n_seq_id ? b.n_seq_id[i] : 1;
        for (int32_t s = 0; s < ns; ++s) {
            const int32_t id = b.seq_id ? b.seq_id[i][s] : 0;
            if (!b.pos ||
                (b.pos[i] == last[id] && std::find(b.seq_id[i], b.seq_id[i] + s, id) != b.seq_id[i] + s))
                continue;  // no positions given, or an id the token lists twice
            if (b.pos[i] <= last[id]) {
                LCTX_LOG_ERROR(
                    "decode: sequence %d has position %d at batch index %d after position %lld: a recurrent "
                    "model takes each sequence's tokens in increasing positions",
                    id, b.pos[i], i, static_cast<long long>(last[id]));
                return DecodeStatus::Error;
            }
            last[id] = b.pos[i];
        }
    }
    return DecodeStatus::Ok;
}

// Micro-batches are consecutive runs of at most n_ubatch tokens; ends[k] is the end of the k-th. Without
// the causal mask a token must see every token of its sequence in the batch, and a later micro-batch's
// tokens are not in the cache yet: so a cut may fall only where every sequence before it has ended. A
// sequence that cannot fit in one micro-batch is refused (b4748 asserts n_ubatch >= n_tokens there).
bool Context::plan_ubatches(const Batch &b, std::vector<int32_t> &ends) const {
    const int32_t n = b.n_tokens;
    const int32_t nu = static_cast<int32_t>(params_.n_ubatch);
    ends.clear();
    if (kv_->recurrent()) {
        plan_recurrent_ubatches(b, ends);
        return true;
    }
    if (causal_attn_) {
        for (int32_t e = std::min(nu, n);; e = std::min(e + nu, n)) {
            ends.push_back(e);
            if (e == n) return true;
        }
    }
    std::vector<int32_t> last(kMaxSeqs, -1);  // last batch index of each sequence
    for (int32_t i = 0; i < n; ++i)
        for (int32_t s = 0; s < b.n_seq_id[i]; ++s) last[b.seq_id[i][s]] = i;
    // cut_ok[c]: no sequence has tokens both before and at or after c.
    std::vector<char> cut_ok(n + 1, 0);
    int32_t reach = -1;
    for (int32_t i = 0; i < n; ++i) {
        for (int32_t s = 0; s < b.n_seq_id[i]; ++s) reach = std::max(reach, last[b.seq_id[i][s]]);
        cut_ok[i + 1] = reach <= i;
    }
    for (int32_t begin = 0; begin < n;) {
        int32_t end = std::min(begin + nu, n);
        while (end > begin && !cut_ok[end]) --end;
        if (end == begin) {
            int32_t need = begin + nu + 1;
            while (!cut_ok[need]) ++need;
            LCTX_LOG_ERROR(
                "decode: without causal attention each sequence must be decoded whole in one "
                "micro-batch, but batch tokens %d..%d belong to sequences that cannot be split "
                "(%d tokens, n_ubatch = %d); raise n_ubatch or decode the sequences separately",
                begin, need - 1, need - begin, nu);
            return false;
        }
        ends.push_back(end);
        begin = end;
    }
    return true;
}

// Recurrent models: runs of at most n_ubatch tokens, each token's set of sequence ids taking one state
// cell (KvCache::find_state_cells). A sequence cannot be in two different sets of one micro-batch (its
// state would have to be in two cells at once), so a run is also cut before a token whose set overlaps
// another set of the run. Sequences in a run go on side by side, each from its own state, which gives what
// b4748's split into equal per-sequence parts gives.
void Context::plan_recurrent_ubatches(const Batch &b, std::vector<int32_t> &ends) const {
    const int32_t n = b.n_tokens;
    const int32_t nu = static_cast<int32_t>(params_.n_ubatch);
    std::vector<SeqSet> set_of_seq(kv_->size());  // within the current run; none: not seen
    int32_t begin = 0;
    for (int32_t i = 0; i < n; ++i) {
        SeqSet set;
        for (int32_t s = 0; s < b.n_seq_id[i]; ++s) set.set(b.seq_id[i][s]);
        bool conflict = i - begin == nu;
        for (int32_t s = 0; s < b.n_seq_id[i] && !conflict; ++s) {
            const SeqSet &seen = set_of_seq[b.seq_id[i][s]];
            conflict = seen.any() && seen != set;
        }
        if (conflict) {
            ends.push_back(i);
            begin = i;
            std::fill(set_of_seq.begin(), set_of_seq.end(), SeqSet());
        }
        for (int32_t s = 0; s < b.n_seq_id[i]; ++s) set_of_seq[b.seq_id[i][s]] = set;
    }
    ends.push_back(n);
}

bool Context::check_positions(const Batch &b, const char *what) const {
    const HParams &hp = model_.hparams();
    if (!hp.abs_pos_embd) return true;
    for (int32_t i = 0; i < b.n_tokens; ++i)
        if (static_cast<uint32_t>(b.pos[i]) >= hp.n_ctx_train) {
            LCTX_LOG_ERROR(
                "%s: position %d at batch index %d is beyond the model's %u learned positions (the text is "
                "too long for it)",
                what, b.pos[i], i, hp.n_ctx_train);
            return false;
        }
    return true;
}

bool Context::check_outputs() const {
    if (params_.embeddings || model_.weights().output.data) return true;
    LCTX_LOG_ERROR("decode: this model has no output matrix, only embeddings: turn embeddings on");
    return false;
}

void Context::build_mask(const std::vector<KvCell> &cells, bool causal, const Batch &b, int32_t begin,
                         int32_t n, uint32_t n_kv) {
    const HParams &hp = model_.hparams();
    MaskRules rules;
    rules.causal = causal;
    rules.n_swa = hp.n_swa;
    rules.alibi = hp.use_alibi;
    mask_.resize(static_cast<size_t>(n) * n_kv);
    if (hp.n_swa > 0) mask_swa_.resize(static_cast<size_t>(n) * n_kv);
    build_masks(cells, n_kv, n, b.pos + begin, b.seq_id + begin, rules, mask_.data(),
                hp.n_swa > 0 ? mask_swa_.data() : nullptr);
    mask_spans_.resize(2 * static_cast<size_t>(n));
    kernels::attention_mask_spans(mask_.data(), n_kv, n, static_cast<int>(n_kv), mask_spans_.data());
    if (hp.n_swa > 0) {
        mask_swa_spans_.resize(2 * static_cast<size_t>(n));
        kernels::attention_mask_spans(mask_swa_.data(), n_kv, n, static_cast<int>(n_kv),
                                      mask_swa_spans_.data());
    }
}

void Context::fill_kv_pos(const std::vector<KvCell> &cells, uint32_t n_kv) {
    kv_pos_.resize(n_kv);
    for (uint32_t j = 0; j < n_kv; ++j) kv_pos_[j] = cells[j].pos;
}

// Decoder token t may attend to encoder token j when one of t's sequences is one of j's (b4748's cross mask
// reads every sequence id of the token).
void Context::build_cross_mask(const Batch &b, int32_t begin, int32_t n) {
    const size_t n_enc = enc_seq_.size();
    cross_mask_.resize(static_cast<size_t>(n) * n_enc);
    for (int32_t t = 0; t < n; ++t) {
        SeqSet seqs;
        for (int32_t s = 0; s < b.n_seq_id[begin + t]; ++s) seqs.set(b.seq_id[begin + t][s]);
        float *row = cross_mask_.data() + static_cast<size_t>(t) * n_enc;
        for (size_t j = 0; j < n_enc; ++j)
            row[j] = (enc_seq_[j] & seqs).any() ? 0.0f : -std::numeric_limits<float>::infinity();
    }
}

DecodeStatus Context::decode(const Batch &in) {
    if (decodes_without_cache()) return decode_without_cache(in);
    if (!validate(in, "decode")) return DecodeStatus::Error;
    if (kv_->recurrent())
        if (const DecodeStatus st = validate_recurrent(in); st != DecodeStatus::Ok) return st;
    const HParams &hp = model_.hparams();
    const double t_start = now_ms();
    const int32_t n_tokens = in.n_tokens;

    // Fill in defaults: sequence 0; positions continuing from the largest position in the cache, over every
    // sequence, one more for each token of the batch (b4748's rule, whatever the tokens' sequences); output
    // for the last token.
    Batch b = in;
    SeqDefaults seq_defaults;
    fill_seq_defaults(b, seq_defaults);
    if (!b.pos) {
        const int64_t p0 = static_cast<int64_t>(kv_->max_pos()) + 1;
        if (p0 + n_tokens - 1 > INT32_MAX) {
            LCTX_LOG_ERROR("decode: the cache has reached the largest position; no next %d positions",
                           n_tokens);
            return DecodeStatus::Error;
        }
        auto_pos_.resize(n_tokens);
        for (int32_t i = 0; i < n_tokens; ++i) auto_pos_[i] = static_cast<int32_t>(p0 + i);
        b.pos = auto_pos_.data();
    }
    if (!check_positions(b, "decode") || !check_outputs()) return DecodeStatus::Error;
    std::vector<int32_t> ubatch_ends;
    if (!plan_ubatches(b, ubatch_ends)) return DecodeStatus::Error;
    if (is_encoder_decoder() && enc_out_.empty()) {
        LCTX_LOG_ERROR("decode: %s is an encoder-decoder model; run llama_encode on the input first",
                       hp.arch_name.c_str());
        return DecodeStatus::Error;
    }
    enc_rows_readable_ = false;

    std::vector<int8_t> want(n_tokens, 0);
    if (params_.embeddings && params_.pooling != PoolingType::None) {
        std::fill(want.begin(), want.end(), 1);  // pooling reads every token of the batch
    } else if (b.logits) {
        for (int32_t i = 0; i < n_tokens; ++i) want[i] = b.logits[i] != 0;
    } else {
        want[n_tokens - 1] = 1;
    }

    // Output buffers: one row per requested token, in batch order.
    int32_t n_out = 0;
    output_ids_.assign(n_tokens, -1);
    for (int32_t i = 0; i < n_tokens; ++i)
        if (want[i]) output_ids_[i] = n_out++;
    const bool want_logits = !params_.embeddings;
    n_outputs_ = 0;
    try {
        if (want_logits) logits_.resize(static_cast<size_t>(n_out) * hp.n_vocab);
        if (params_.embeddings) embd_.resize(static_cast<size_t>(n_out) * hp.n_embd);
    } catch (const std::bad_alloc &) {
        LCTX_LOG_ERROR("decode: cannot allocate outputs for %d tokens", n_out);
        return DecodeStatus::Error;
    }

    // Pooled vectors belong to the batch that made them.
    embd_seq_.clear();
    cls_missing_.clear();

    // Pending shifts re-rotate the cached keys first (an equivalent form of the same cache: kept even when
    // the call stops early).
    kv_->apply_shift(model_);
    kernels::ThreadPool &pool = pool_for(n_tokens);

    // A call that stops early takes back every cell it placed and the search head, so the cache is as it
    // was and a retry places the batch in the same cells.
    const uint32_t head_before = kv_->head();
    // Only a call of several micro-batches, or one that may be aborted, can stop after changing a state.
    kv_->begin_decode(ubatch_ends.size() > 1 || params_.abort_callback != nullptr);
    std::vector<KvCell> recurrent_before;  // the state cells as the call found them (b4748's placement below)
    if (kv_->recurrent()) recurrent_before = kv_->cells();
    placed_.clear();
    int32_t out_row = 0;
    auto stop = [&](DecodeStatus st) {
        kv_->rollback(placed_, head_before);
        n_outputs_ = out_row;
        return st;
    };

    int32_t begin = 0;
    for (size_t k = 0; k < ubatch_ends.size(); begin = ubatch_ends[k++]) {
        const int32_t n = ubatch_ends[k] - begin;
        uint32_t n_kv = 0;
        if (kv_->recurrent()) {  // a state cell per sequence set; no attention, no mask
            if (!kv_->find_state_cells(n, b.pos + begin, b.n_seq_id + begin, b.seq_id + begin, cells_)) {
                LCTX_LOG_WARN("decode: no free recurrent state cell (%u of %u used)", kv_->used(),
                              kv_->size());
                return stop(DecodeStatus::NoKvSlot);
            }
        } else {
            kv_->maybe_rewind_head(n);
            if (!kv_->find_cells(n, b.n_seq_id + begin, b.seq_id + begin, cells_)) {
                LCTX_LOG_WARN("decode: no room in the KV cache for %d tokens (%u of %u cells used)", n,
                              kv_->used(), kv_->size());
                return stop(DecodeStatus::NoKvSlot);
            }
            kv_->occupy(cells_, b.pos + begin, b.n_seq_id + begin, b.seq_id + begin);
            placed_.insert(placed_.end(), cells_.begin(), cells_.end());
            n_kv = kv_->n_kv();
            build_mask(kv_->cells(), causal_attn_, b, begin, n, n_kv);
            fill_kv_pos(kv_->cells(), n_kv);
            if (!enc_out_.empty()) build_cross_mask(b, begin, n);
        }

        out_rows_.clear();
        for (int32_t t = 0; t < n; ++t)
            if (want[begin + t]) out_rows_.push_back(t);

        ForwardBatch fb;
        fb.n_tokens = n;
        fb.tokens = b.token ? b.token + begin : nullptr;
        fb.embd = b.embd ? b.embd + static_cast<size_t>(begin) * hp.n_embd : nullptr;
        fb.pos = b.pos + begin;
        fb.cells = cells_.data();
        fb.n_kv = static_cast<int32_t>(n_kv);
        fb.mask = mask_.data();
        fb.mask_swa = hp.n_swa > 0 ? mask_swa_.data() : nullptr;
        fb.mask_spans = mask_spans_.data();
        fb.mask_swa_spans = hp.n_swa > 0 ? mask_swa_spans_.data() : nullptr;
        fb.kv_pos = kv_pos_.data();
        fb.lora = lora_.active();
        if (!enc_out_.empty()) {
            fb.enc_out = enc_out_.data();
            fb.n_enc = static_cast<int32_t>(enc_seq_.size());
            fb.cross_mask = cross_mask_.data();
            cross_kv_.resize(static_cast<size_t>(hp.n_layer_cache()) * fb.n_enc *
                             (hp.n_embd_k_gqa() + hp.n_embd_v_gqa()));
            fb.cross_kv = cross_kv_.data();
            fb.cross_kv_ready =
                cross_kv_ready_ &&
                std::equal(fb.lora.begin(), fb.lora.end(), cross_kv_lora_.begin(), cross_kv_lora_.end(),
                           [](const LoraActive &a, const LoraActive &c) {
                               return a.adapter == c.adapter && a.scale == c.scale;
                           });
        }
        fb.n_outputs = static_cast<int32_t>(out_rows_.size());
        fb.out_rows = out_rows_.data();
        fb.logits = want_logits ? logits_.data() + static_cast<size_t>(out_row) * hp.n_vocab : nullptr;
        fb.hidden = params_.embeddings ? embd_.data() + static_cast<size_t>(out_row) * hp.n_embd : nullptr;
        fb.cvec = cvec_.empty() ? nullptr : cvec_.data();
        fb.cvec_first = cvec_first_;
        fb.cvec_last = cvec_last_;
        scratch_.mm.lora = fb.lora;
        fb.abort_cb = params_.abort_callback;
        fb.abort_data = params_.abort_callback_data;
        if (fb.cross_kv && !fb.cross_kv_ready) cross_kv_ready_ = false;  // until every layer is projected
        if (!forward(model_, kv_->view(), fb, scratch_, pool)) return stop(DecodeStatus::Aborted);
        if (fb.cross_kv && !fb.cross_kv_ready) {
            cross_kv_ready_ = true;
            cross_kv_lora_.assign(fb.lora.begin(), fb.lora.end());
        }
        if (!kv_->recurrent()) kv_->advance_head(static_cast<uint32_t>(n));
        out_row += fb.n_outputs;
        if (params_.abort_callback && ubatch_ends[k] < n_tokens &&
            params_.abort_callback(params_.abort_callback_data))
            return stop(DecodeStatus::Aborted);
    }
    n_outputs_ = out_row;
    if (params_.embeddings && params_.pooling != PoolingType::None) pool_embeddings(b);
    // Recurrent states end in the cells where b4748 leaves them (its state files list cells in order). Where
    // b4748's placement cannot be replayed (it would assert), lctx's own stays: the states are the same.
    // (Pooled embeddings: b4748 splits by sequence instead, not replayed.)
    if (kv_->recurrent() && !(params_.embeddings && params_.pooling != PoolingType::None)) {
        uint32_t head = head_before;
        if (place_recurrent_like_b4748(recurrent_before, head, n_tokens, b.pos, b.n_seq_id, b.seq_id,
                                       params_.n_ubatch))
            kv_->arrange_states(recurrent_before, head);
    }

    if (!params_.no_perf) {
        const double dt = now_ms() - t_start;
        if (n_tokens == 1) {
            perf_.t_eval_ms += dt;
            perf_.n_eval += 1;
        } else {
            perf_.t_p_eval_ms += dt;
            perf_.n_p_eval += n_tokens;
        }
    }
    return DecodeStatus::Ok;
}

// One vector per sequence of the batch: the mean of its tokens' hidden states, the state of its
// token at position 0 (cls), or of its last position (last). Pooled over the whole batch, however
// many micro-batches it took.
void Context::pool_embeddings(const Batch &b) {
    const size_t n_embd = model_.hparams().n_embd;
    std::map<int32_t, int32_t> count, best_pos;
    for (int32_t i = 0; i < b.n_tokens; ++i) {
        const int32_t row = output_ids_[i];
        if (row < 0 || row >= n_outputs_) continue;
        const float *h = embd_.data() + static_cast<size_t>(row) * n_embd;
        for (int32_t s = 0; s < b.n_seq_id[i]; ++s) {
            const int32_t seq = b.seq_id[i][s];
            switch (params_.pooling) {
                case PoolingType::Mean: {
                    std::vector<float> &e = embd_seq_[seq];
                    if (e.empty()) e.assign(n_embd, 0.0f);
                    for (size_t k = 0; k < n_embd; ++k) e[k] += h[k];
                    count[seq]++;
                    break;
                }
                case PoolingType::Cls:
                case PoolingType::Rank:  // the head's score of the CLS state, below
                    if (b.pos[i] == 0)
                        embd_seq_[seq].assign(h, h + n_embd);
                    else
                        cls_missing_.push_back(seq);  // pruned below when its position 0 shows up
                    break;
                case PoolingType::Last:
                    if (!best_pos.count(seq) || b.pos[i] >= best_pos[seq]) {
                        best_pos[seq] = b.pos[i];
                        embd_seq_[seq].assign(h, h + n_embd);
                    }
                    break;
                default:
                    break;
            }
        }
    }
    if (params_.pooling == PoolingType::Mean)
        for (auto &[seq, e] : embd_seq_)
            for (float &v : e) v /= static_cast<float>(count[seq]);
    std::erase_if(cls_missing_, [&](int32_t seq) { return embd_seq_.count(seq) != 0; });
    if (params_.pooling == PoolingType::Rank && !embd_seq_.empty()) {
        // One product for every sequence's CLS state; each keeps one value, its score (as b4748).
        std::vector<float> h, scores(embd_seq_.size());  // h: [n_seq][n_embd]
        for (const auto &[seq, e] : embd_seq_) h.insert(h.end(), e.begin(), e.end());
        cls_head_scores(model_, h.data(), static_cast<int64_t>(embd_seq_.size()), scores.data(),
                        pool_for(static_cast<int32_t>(embd_seq_.size())), scratch_.mm);
        size_t k = 0;
        for (auto &[seq, e] : embd_seq_) e.assign(1, scores[k++]);
    }
}

float *Context::embeddings_seq(int32_t seq_id) {
    auto it = embd_seq_.find(seq_id);
    if (it == embd_seq_.end()) {
        if (std::find(cls_missing_.begin(), cls_missing_.end(), seq_id) != cls_missing_.end())
            LCTX_LOG_ERROR(
                "get_embeddings_seq: sequence %d had no token at position 0 in the last batch, so "
                "CLS (or rank) pooling has no vector for it",
                seq_id);
        else
            LCTX_LOG_ERROR("get_embeddings_seq: sequence %d was not in the last batch; no pooled embedding",
                           seq_id);
        return nullptr;
    }
    return it->second.data();
}

int32_t Context::shift_context(int32_t seq, int32_t n_keep) {
    if (kv_->recurrent())
        return 0;  // a recurrent state cannot drop a part of its past (b4748: can_shift false)
    const int32_t n_past = kv_->seq_pos_max(seq) + 1;
    if (n_keep < 0) n_keep = 0;
    if (n_past <= n_keep) return 0;
    const int32_t n_discard = (n_past - n_keep) / 2;
    if (n_discard == 0) return 0;
    kv_->seq_rm(seq, n_keep, n_keep + n_discard);
    kv_->seq_add(seq, n_keep + n_discard, n_past, -n_discard);
    return n_discard;
}

float *Context::logits_ith(int32_t i) {
    if (params_.embeddings || logits_.empty()) {
        LCTX_LOG_ERROR("get_logits_ith: no logits are available (embeddings mode or nothing decoded)");
        return nullptr;
    }
    int32_t row;
    if (i < 0) {
        row = n_outputs_ + i;
        if (row < 0) {
            LCTX_LOG_ERROR("get_logits_ith: index %d reaches before the first of %d outputs", i, n_outputs_);
            return nullptr;
        }
    } else {
        if (static_cast<size_t>(i) >= output_ids_.size()) {
            LCTX_LOG_ERROR("get_logits_ith: index %d is outside the last batch of %zu tokens", i,
                           output_ids_.size());
            return nullptr;
        }
        row = output_ids_[i];
        if (row < 0) {
            LCTX_LOG_ERROR("get_logits_ith: batch token %d did not ask for logits", i);
            return nullptr;
        }
    }
    if (row >= n_outputs_) {
        LCTX_LOG_ERROR("get_logits_ith: output %d was not computed (decode stopped early)", row);
        return nullptr;
    }
    return logits_.data() + static_cast<size_t>(row) * model_.hparams().n_vocab;
}

float *Context::embeddings_ith(int32_t i) {
    if ((!params_.embeddings && !enc_rows_readable_) || embd_.empty()) {
        LCTX_LOG_ERROR("get_embeddings_ith: no embeddings are available (embeddings off or nothing decoded)");
        return nullptr;
    }
    int32_t row =
        i < 0 ? n_outputs_ + i : (static_cast<size_t>(i) < output_ids_.size() ? output_ids_[i] : -1);
    if (row < 0 || row >= n_outputs_) {
        LCTX_LOG_ERROR("get_embeddings_ith: index %d has no embedding", i);
        return nullptr;
    }
    return embd_.data() + static_cast<size_t>(row) * model_.hparams().n_embd;
}

}  // namespace lctx
