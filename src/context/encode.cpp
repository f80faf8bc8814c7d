// The encoder pass of the context (llama_encode): embedding models (BERT) and the encoder of
// encoder-decoder models (T5). The whole batch is one micro-batch that attends within each sequence in both
// directions; its keys and values go to cells of the encoder's own, so the KV cache (the decoder's) is never
// touched.
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

DecodeStatus Context::encode(const Batch &in) {
    const HParams &hp = model_.hparams();
    const Family *family = find_family(hp.arch);
    if (!family || !family->encode) {
        LCTX_LOG_ERROR("encode: %s has no encoder; run its input with llama_decode", hp.arch_name.c_str());
        return DecodeStatus::Error;
    }
    if (!validate(in, "encode")) return DecodeStatus::Error;
    const int32_t n = in.n_tokens;
    if (static_cast<uint32_t>(n) > params_.n_ubatch) {
        LCTX_LOG_ERROR(
            "encode: the batch has %d tokens, more than n_ubatch = %u; the encoder runs a batch as one "
            "micro-batch, so raise n_ubatch or encode fewer tokens at once",
            n, params_.n_ubatch);
        return DecodeStatus::Error;
    }
    const double t_start = now_ms();

    Batch b = in;
    SeqDefaults seq_defaults;
    fill_seq_defaults(b, seq_defaults);
    if (!b.pos) {
        auto_pos_.resize(n);
        std::iota(auto_pos_.begin(), auto_pos_.end(), 0);
        b.pos = auto_pos_.data();
    }
    if (!check_positions(b, "encode")) return DecodeStatus::Error;

    const bool enc_dec = is_encoder_decoder();
    std::vector<float> rows;
    try {
        if (!enc_kv_ || enc_kv_->size() < static_cast<uint32_t>(n))
            enc_kv_ = std::make_unique<KvCache>(hp, std::max<uint32_t>(params_.n_ubatch, 1), GgmlType::F32,
                                                GgmlType::F32, params_.n_seq_max, /*v_trans=*/true,
                                                hp.n_layer);  // the encoder's layers
        rows.resize(static_cast<size_t>(n) * hp.n_embd);
    } catch (const std::exception &e) {
        LCTX_LOG_ERROR("encode: cannot allocate the encoder's buffers for %d tokens: %s", n, e.what());
        return DecodeStatus::Error;
    }

    // Cells 0..n-1 of the encoder's own cache, then a mask within each sequence in both directions.
    enc_kv_->clear();
    cells_.resize(n);
    std::iota(cells_.begin(), cells_.end(), 0u);
    enc_kv_->occupy(cells_, b.pos, b.n_seq_id, b.seq_id);
    MaskRules rules;
    rules.causal = false;
    rules.alibi = hp.use_alibi;
    rules.n_swa = hp.n_swa;
    const uint32_t n_kv = static_cast<uint32_t>(n);
    mask_.resize(static_cast<size_t>(n) * n_kv);
    if (hp.n_swa > 0) mask_swa_.resize(static_cast<size_t>(n) * n_kv);
    build_masks(enc_kv_->cells(), n_kv, n, b.pos, b.seq_id, rules, mask_.data(),
                hp.n_swa > 0 ? mask_swa_.data() : nullptr);
    fill_kv_pos(enc_kv_->cells(), n_kv);

    out_rows_.resize(n);
    std::iota(out_rows_.begin(), out_rows_.end(), 0);
    ForwardBatch fb;
    fb.n_tokens = n;
    fb.tokens = b.token;
    fb.embd = b.embd;
    fb.pos = b.pos;
    fb.cells = cells_.data();
    fb.n_kv = static_cast<int32_t>(n_kv);
    fb.mask = mask_.data();
    fb.mask_swa = hp.n_swa > 0 ? mask_swa_.data() : nullptr;
    fb.kv_pos = kv_pos_.data();
    fb.n_outputs = n;
    fb.out_rows = out_rows_.data();
    fb.hidden = rows.data();
    fb.cvec = cvec_.empty() ? nullptr : cvec_.data();
    fb.cvec_first = cvec_first_;
    fb.cvec_last = cvec_last_;
    fb.lora = lora_.active();
    scratch_.mm.lora = fb.lora;
    fb.abort_cb = params_.abort_callback;
    fb.abort_data = params_.abort_callback_data;
    const bool done = family->encode(model_, enc_kv_->view(), fb, scratch_, pool_for(n));
    enc_kv_->clear();
    if (!done) return DecodeStatus::Aborted;  // nothing of the context changed

    // Every token has an output row, in batch order.
    output_ids_.resize(n);
    std::iota(output_ids_.begin(), output_ids_.end(), 0);
    n_outputs_ = n;
    logits_.clear();
    embd_seq_.clear();
    cls_missing_.clear();
    if (enc_dec) {
        enc_seq_.assign(n, SeqSet{});
        for (int32_t i = 0; i < n; ++i)
            for (int32_t s = 0; s < b.n_seq_id[i]; ++s) enc_seq_[i].set(b.seq_id[i][s]);
        enc_out_ = rows;
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

}  // namespace lctx
