// The encoder pass of the context: llama_encode (embedding models such as BERT, and the encoder of
// encoder-decoder models such as T5), and llama_decode on an encoder-only model (non-causal: BERT,
// nomic-bert). The whole batch is one micro-batch that attends within each token's sequences; its keys and
// values stay in f32 cells of the encoder's own, so the KV cache (the decoder's) is never touched, as b4748.
#include <algorithm>
#include <numeric>

#include "context/context.h"
#include "context/mask.h"
#include "model/architectures.h"
#include "model/families.h"
#include "util/log.h"

namespace lctx {

bool Context::is_encoder_decoder() const {
    const ArchitectureInfo *a = find_architecture(model_.hparams().arch_name);
    return a && a->has_encoder && a->has_decoder;
}

// b4748 keeps a non-causal model's decode out of the cache ("non-causal masks do not use the KV cache"):
// the model's own attention type decides, not llama_set_causal_attn.
bool Context::decodes_without_cache() const {
    const Family *family = find_family(model_.hparams().arch);
    return !model_.hparams().causal_attn && family && family->encode && !is_encoder_decoder() &&
           !kv_->recurrent();
}

// The checks and defaults both passes share: the batch fits one micro-batch (b4748 asserts n_ubatch >=
// n_tokens for the encoder and for non-causal attention), missing sequence ids are 0 and missing positions
// the batch indices 0, 1, ... (b4748: the cache is not used, so every call starts at 0).
bool Context::prepare_encoder_batch(const Batch &in, const char *what, Batch &b, SeqDefaults &defaults) {
    if (!validate(in, what)) return false;
    const int32_t n = in.n_tokens;
    if (static_cast<uint32_t>(n) > params_.n_ubatch) {
        LCTX_LOG_ERROR(
            "%s: the batch has %d tokens, more than n_ubatch = %u; an encoder runs a batch as one "
            "micro-batch, so raise n_ubatch or pass fewer tokens at once",
            what, n, params_.n_ubatch);
        return false;
    }
    b = in;
    fill_seq_defaults(b, defaults);
    if (!b.pos) {
        auto_pos_.resize(n);
        std::iota(auto_pos_.begin(), auto_pos_.end(), 0);
        b.pos = auto_pos_.data();
    }
    return check_positions(b, what);
}

DecodeStatus Context::run_encoder(const Batch &b, bool causal, int32_t n_out, const int32_t *out_rows,
                                  float *hidden) {
    const HParams &hp = model_.hparams();
    const int32_t n = b.n_tokens;
    try {
        if (!enc_kv_ || enc_kv_->size() < static_cast<uint32_t>(n)) {
            enc_kv_ = std::make_unique<KvCache>(hp, std::max<uint32_t>(params_.n_ubatch, 1), GgmlType::F32,
                                                GgmlType::F32, params_.n_seq_max, /*v_trans=*/true,
                                                hp.n_layer);  // the encoder's layers
            // (Only its cells are used, for the masks and positions: the layers keep their K and V rows in
            // place (ForwardBatch::own_cells), so its pages are never written and never committed.)
            enc_kv_->set_rope(kv_->view().rope);  // the context's RoPE settings
        }
    } catch (const std::exception &e) {
        LCTX_LOG_ERROR("encode: cannot allocate the encoder's cells for %d tokens: %s", n, e.what());
        return DecodeStatus::Error;
    }

    // Cells 0..n-1 of the encoder's own cache, then a mask within each token's sequences (and each row's
    // visible span, found once for every layer).
    enc_kv_->clear();
    cells_.resize(n);
    std::iota(cells_.begin(), cells_.end(), 0u);
    enc_kv_->occupy(cells_, b.pos, b.n_seq_id, b.seq_id);
    const uint32_t n_kv = static_cast<uint32_t>(n);
    build_mask(enc_kv_->cells(), causal, b, 0, n, n_kv);
    fill_kv_pos(enc_kv_->cells(), n_kv);

    ForwardBatch fb;
    fb.n_tokens = n;
    fb.tokens = b.token;
    fb.embd = b.embd;
    fb.pos = b.pos;
    fb.cells = cells_.data();
    fb.n_kv = static_cast<int32_t>(n_kv);
    fb.mask = mask_.data();
    fb.mask_swa = hp.n_swa > 0 ? mask_swa_.data() : nullptr;
    fb.mask_spans = mask_spans_.data();
    fb.mask_swa_spans = hp.n_swa > 0 ? mask_swa_spans_.data() : nullptr;
    fb.kv_pos = kv_pos_.data();
    fb.own_cells = true;  // cells 0..n-1, cleared below: the layers attend their K and V rows in place
    fb.n_outputs = n_out;
    fb.out_rows = out_rows;
    fb.hidden = hidden;
    fb.cvec = cvec_.empty() ? nullptr : cvec_.data();
    fb.cvec_first = cvec_first_;
    fb.cvec_last = cvec_last_;
    fb.lora = lora_.active();
    scratch_.mm.lora = fb.lora;
    fb.abort_cb = params_.abort_callback;
    fb.abort_data = params_.abort_callback_data;
    const bool done = find_family(hp.arch)->encode(model_, enc_kv_->view(), fb, scratch_, pool_for(n));
    enc_kv_->clear();
    return done ? DecodeStatus::Ok : DecodeStatus::Aborted;
}

DecodeStatus Context::encode(const Batch &in) {
    const HParams &hp = model_.hparams();
    const Family *family = find_family(hp.arch);
    if (!family || !family->encode) {
        LCTX_LOG_ERROR("encode: %s has no encoder; run its input with llama_decode", hp.arch_name.c_str());
        return DecodeStatus::Error;
    }
    Batch b;
    SeqDefaults seq_defaults;
    if (!prepare_encoder_batch(in, "encode", b, seq_defaults)) return DecodeStatus::Error;
    const int32_t n = b.n_tokens;
    const double t_start = now_ms();

    std::vector<float> rows;
    try {
        rows.resize(static_cast<size_t>(n) * hp.n_embd);
    } catch (const std::exception &e) {
        LCTX_LOG_ERROR("encode: cannot allocate the encoder's output for %d tokens: %s", n, e.what());
        return DecodeStatus::Error;
    }
    out_rows_.resize(n);
    std::iota(out_rows_.begin(), out_rows_.end(), 0);
    const DecodeStatus st = run_encoder(b, /*causal=*/false, n, out_rows_.data(), rows.data());
    if (st != DecodeStatus::Ok) return st;  // nothing of the context changed

    // Every token has an output row, in batch order.
    output_ids_.resize(n);
    std::iota(output_ids_.begin(), output_ids_.end(), 0);
    n_outputs_ = n;
    logits_.clear();
    embd_seq_.clear();
    cls_missing_.clear();
    if (is_encoder_decoder()) {
        enc_seq_.assign(n, SeqSet{});
        for (int32_t i = 0; i < n; ++i)
            for (int32_t s = 0; s < b.n_seq_id[i]; ++s) enc_seq_[i].set(b.seq_id[i][s]);
        enc_out_ = rows;
        cross_kv_ready_ = false;  // the next decode projects the new rows
        embd_ = std::move(rows);
        enc_rows_readable_ = true;
    } else {
        embd_ = std::move(rows);
        enc_rows_readable_ = true;
        if (params_.pooling != PoolingType::None) pool_embeddings(b);
    }

    if (!params_.no_perf) {
        perf_.t_p_eval_ms += now_ms() - t_start;
        perf_.n_p_eval += n;
    }
    return DecodeStatus::Ok;
}

// llama_decode on an encoder-only model: the encoder pass with a decode's outputs (the tokens that asked for
// them, or every token when pooling), the cache untouched, so a second call sees nothing of the first.
DecodeStatus Context::decode_without_cache(const Batch &in) {
    const HParams &hp = model_.hparams();
    Batch b;
    SeqDefaults seq_defaults;
    if (!prepare_encoder_batch(in, "decode", b, seq_defaults) || !check_outputs()) return DecodeStatus::Error;
    const int32_t n = b.n_tokens;
    const double t_start = now_ms();

    const bool pooled = params_.pooling != PoolingType::None;  // pooling reads every token of the batch
    output_ids_.assign(n, -1);
    out_rows_.clear();
    for (int32_t i = 0; i < n; ++i)
        if (pooled || (b.logits ? b.logits[i] != 0 : i == n - 1)) {
            output_ids_[i] = static_cast<int32_t>(out_rows_.size());
            out_rows_.push_back(i);
        }
    const auto n_out = static_cast<int32_t>(out_rows_.size());
    n_outputs_ = 0;
    enc_rows_readable_ = false;
    embd_seq_.clear();
    cls_missing_.clear();
    logits_.clear();  // an encoder has no output matrix (check_outputs: embeddings are on)
    try {
        embd_.resize(static_cast<size_t>(n_out) * hp.n_embd);
    } catch (const std::bad_alloc &) {
        LCTX_LOG_ERROR("decode: cannot allocate outputs for %d tokens", n_out);
        return DecodeStatus::Error;
    }
    // Outputs that are not there read as missing (n_outputs_ stays 0) when the pass stops early.
    if (n_out > 0) {
        const DecodeStatus st = run_encoder(b, causal_attn_, n_out, out_rows_.data(), embd_.data());
        if (st != DecodeStatus::Ok) return st;
    }
    n_outputs_ = n_out;
    if (pooled) pool_embeddings(b);

    if (!params_.no_perf) {
        const double dt = now_ms() - t_start;
        if (n == 1) {
            perf_.t_eval_ms += dt;
            perf_.n_eval += 1;
        } else {
            perf_.t_p_eval_ms += dt;
            perf_.n_p_eval += n;
        }
    }
    return DecodeStatus::Ok;
}

}  // namespace lctx
