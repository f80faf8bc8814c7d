// The context: owns the KV cache, splits a batch of tokens from many sequences into micro-batches,
// builds positions and masks for each, runs the model, and keeps the outputs (logits or embeddings)
// of the tokens that asked for them. The C API (llama_context) is a thin layer over this class.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "context/kv_cache.h"
#include "context/lora_binding.h"
#include "kernels/threadpool.h"
#include "model/forward.h"
#include "model/model.h"

namespace lctx {

enum class PoolingType { Unspecified = -1, None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };
enum class AttentionType { Unspecified = -1, Causal = 0, NonCausal = 1 };

struct ContextParams {
    uint32_t n_ctx = 512;     // KV cells (0: the model's training context)
    uint32_t n_batch = 2048;  // most tokens one decode call accepts
    uint32_t n_ubatch = 512;  // most tokens one forward pass takes
    uint32_t n_seq_max = 1;
    int n_threads = 1;        // single-token decode
    int n_threads_batch = 1;  // prompt processing
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    bool embeddings = false;
    PoolingType pooling = PoolingType::Unspecified;
    AttentionType attention = AttentionType::Unspecified;  // unspecified: the model's (causal for decoders)
    bool flash_attn = false;  // as llama.cpp's flash-attention contexts: V stored by rows (state v_trans = 0)
    RopeOverrides rope;       // the context's RoPE settings (context_rope: the model's by default)
    bool no_perf = false;
    bool (*abort_callback)(void *) = nullptr;
    void *abort_callback_data = nullptr;
};

// A batch as llama_batch describes it: token ids or embeddings, and per token a position, a set of
// sequence ids and an output flag. Null pos / seq ids / logits take the documented defaults.
struct Batch {
    int32_t n_tokens = 0;
    const int32_t *token = nullptr;
    const float *embd = nullptr;
    const int32_t *pos = nullptr;
    const int32_t *n_seq_id = nullptr;
    int32_t *const *seq_id = nullptr;
    const int8_t *logits = nullptr;
};

enum class DecodeStatus : int { Ok = 0, NoKvSlot = 1, Aborted = 2, Error = -1 };

struct PerfCounters {
    double t_start_ms = 0, t_load_ms = 0, t_p_eval_ms = 0, t_eval_ms = 0;
    int32_t n_p_eval = 0, n_eval = 0;
};

class Context {
  public:
    Context(const Model &model, const ContextParams &params);
    ~Context();

    const Model &model() const { return model_; }
    const ContextParams &params() const { return params_; }
    KvCache &kv() { return *kv_; }
    const KvCache &kv() const { return *kv_; }

    // Decodes a batch. An invalid batch (token outside the vocabulary, sequence id outside [0, kMaxSeqs),
    // empty, or, without causal attention, a sequence longer than a micro-batch) is refused with a logged
    // reason and changes nothing (returns Error). A call that stops early (Aborted, NoKvSlot) leaves the
    // cache exactly as it found it; the outputs of the micro-batches it completed stay readable. An
    // encoder-only model (decodes_without_cache) runs the batch as one micro-batch (more tokens than n_ubatch
    // are refused) within the batch, never touching the cache; missing positions are 0, 1, ... each call.
    DecodeStatus decode(const Batch &batch);

    // Runs the model's encoder over a batch (llama_encode), in src/context/encode.cpp. The whole batch is one
    // micro-batch (n_tokens <= n_ubatch, as b4748), attends within each sequence in both directions, and
    // never touches the KV cache: its keys and values live in cells of its own. Missing positions are the
    // batch indices 0, 1, ... and missing sequence ids 0 (b4748's defaults). An encoder-decoder model keeps
    // the output, with each token's sequences, for the cross-attention of later decodes (and it can be read
    // as embeddings); an encoder-only model's output is read as a decode's with embeddings on (per token, or
    // pooled per sequence). A model without an encoder, or an invalid batch, is refused (Error) with a logged
    // reason.
    DecodeStatus encode(const Batch &batch);
    // An encoder and a decoder (T5): decodes cross-attend to the last encode's output.
    bool is_encoder_decoder() const;
    // An encoder-only model (non-causal: BERT, nomic-bert): its decodes run as encodes (encode.cpp), within
    // the batch and without the KV cache, as b4748's.
    bool decodes_without_cache() const;

    // Outputs of the last decode. Rows are in batch order; i indexes the batch (negative: from the
    // end of the outputs). Null with a logged reason for a token that did not ask for output.
    float *logits() { return logits_.data(); }
    float *logits_ith(int32_t i);
    float *embeddings() { return embd_.data(); }
    float *embeddings_ith(int32_t i);
    // The pooled embedding of a sequence of the last decode (pooling mean / cls / last; rank: one value, the
    // classification head's score), or null with a logged reason: the sequence was not in the last batch,
    // or (cls, rank) its position 0 was not.
    float *embeddings_seq(int32_t seq_id);
    int32_t n_outputs() const { return n_outputs_; }
    const std::vector<int32_t> &output_ids() const { return output_ids_; }

    void set_n_threads(int n_threads, int n_threads_batch);
    void set_embeddings(bool on) { params_.embeddings = on; }
    // Causal masks (the default for decoder models) or full attention within each sequence.
    void set_causal_attn(bool on) { causal_attn_ = on; }
    bool causal_attn() const { return causal_attn_; }
    // Runs on the caller's pools (llama_attach_threadpool): `pool` for single-token decodes, `pool_batch`
    // (or `pool` when null) for the rest, with at most n_threads / n_threads_batch of their threads. Null
    // goes back to the context's own pool. The pools must outlive their attachment.
    void attach_threadpools(kernels::ThreadPool *pool, kernels::ThreadPool *pool_batch);
    void set_abort_callback(bool (*cb)(void *), void *data) {
        params_.abort_callback = cb;
        params_.abort_callback_data = data;
    }

    // Context shift for long generations: keeps the first n_keep positions of `seq`, drops half of the
    // rest and moves the remainder back so that decoding can go on. Returns the positions dropped.
    int32_t shift_context(int32_t seq, int32_t n_keep);

    // Control vector (llama_apply_adapter_cvec): data holds n_embd values per layer from layer 1 on (layer 0
    // has none, as llama.cpp), as many layers as `len` covers; applied to layers [il_start, il_end]. Null
    // data switches it off. Throws Error when n_embd is not the model's.
    void set_control_vector(const float *data, size_t len, int32_t n_embd, int32_t il_start, int32_t il_end);

    // LoRA adapters applied from the next decode on (model/lora_adapter.h).
    LoraBinding &lora() { return lora_; }

    PerfCounters perf() const { return perf_; }
    void perf_reset();

    // ---- read-only views of everything a call may change, for tests (tests/state_snapshot.h) ----
    const std::vector<float> &logit_rows() const { return logits_; }
    const std::vector<float> &embedding_rows() const { return embd_; }
    const std::map<int32_t, std::vector<float>> &pooled_embeddings() const { return embd_seq_; }
    const std::vector<int32_t> &sequences_without_position_0() const { return cls_missing_; }
    const std::vector<float> &encoder_output() const { return enc_out_; }
    const std::vector<SeqSet> &encoder_output_sequences() const { return enc_seq_; }
    const KvCache *encoder_cells() const { return enc_kv_.get(); }  // null before the first encode
    bool encoder_rows_readable() const { return enc_rows_readable_; }
    const std::vector<float> &control_vector() const { return cvec_; }

  private:
    friend class ContextState;  // state save/restore (src/context/state.cpp) reads and writes outputs

    // Storage for the defaults of a batch that left out its sequence ids (one id per token, sequence 0).
    struct SeqDefaults {
        std::vector<int32_t> n_seq;
        std::vector<int32_t *> seq;
    };
    static void fill_seq_defaults(Batch &b, SeqDefaults &d);
    static double now_ms();  // the performance counters' clock
    bool validate(const Batch &batch, const char *what) const;
    DecodeStatus validate_recurrent(const Batch &batch) const;
    bool plan_ubatches(const Batch &batch, std::vector<int32_t> &ends) const;
    void plan_recurrent_ubatches(const Batch &batch, std::vector<int32_t> &ends) const;
    // Learned absolute positions (bert) exist only below n_ctx_train; logits need an output matrix.
    bool check_positions(const Batch &batch, const char *what) const;
    bool check_outputs() const;
    kernels::ThreadPool &pool_for(int32_t n_tokens);
    void prepare_outputs(const Batch &batch, std::vector<int8_t> &want);
    // mask_ (and mask_swa_) of rows begin..begin+n over cells 0..n_kv-1, with each row's visible span
    void build_mask(const std::vector<KvCell> &cells, bool causal, const Batch &batch, int32_t begin,
                    int32_t n, uint32_t n_kv);
    void pool_embeddings(const Batch &batch);
    void fill_kv_pos(const std::vector<KvCell> &cells, uint32_t n_kv);
    void build_cross_mask(const Batch &batch, int32_t begin, int32_t n);
    // encode.cpp: an encoder pass over a whole batch in the encoder's own f32 cells.
    bool prepare_encoder_batch(const Batch &in, const char *what, Batch &b, SeqDefaults &defaults);
    DecodeStatus run_encoder(const Batch &b, bool causal, int32_t n_out, const int32_t *out_rows,
                             float *hidden);
    DecodeStatus decode_without_cache(const Batch &in);

    const Model &model_;
    ContextParams params_;
    std::unique_ptr<KvCache> kv_;
    std::unique_ptr<kernels::ThreadPool> pool_;
    kernels::ThreadPool *attached_pool_ = nullptr;  // llama_attach_threadpool's, not owned
    kernels::ThreadPool *attached_pool_batch_ = nullptr;
    ForwardScratch scratch_;

    std::vector<float> logits_;                       // [n_outputs][n_vocab]
    std::vector<float> embd_;                         // [n_outputs][n_embd]
    std::vector<int32_t> output_ids_;                 // batch index -> output row, -1 when none
    std::map<int32_t, std::vector<float>> embd_seq_;  // seq id -> [n_embd] pooled embedding
    std::vector<int32_t> cls_missing_;                // sequences of the last batch without position 0
    int32_t n_outputs_ = 0;

    std::vector<float> cvec_;  // [n_layer][n_embd] control vector, empty when none
    int32_t cvec_first_ = 0, cvec_last_ = -1;
    LoraBinding lora_;
    std::vector<float> mask_;      // [n_ubatch][n_kv]
    std::vector<float> mask_swa_;  // [n_ubatch][n_kv], for the sliding-window layers of a model with some
    std::vector<int32_t> mask_spans_, mask_swa_spans_;  // [n_ubatch][2] the masks' visible spans
    std::vector<uint32_t> cells_;                       // cells of the current micro-batch
    std::vector<uint32_t> placed_;   // cells of every micro-batch of the current call (for rollback)
    std::vector<int32_t> out_rows_;  // ubatch rows with output
    std::vector<int32_t> auto_pos_;  // positions when the batch gave none
    std::vector<int32_t> kv_pos_;    // [n_kv] position of each cell the micro-batch attends to

    // The encoder (encode.cpp): its own cells, created at the first encode, and for encoder-decoder models
    // the last output with the sequences of each of its tokens, and the decoder's cross-attention mask.
    std::unique_ptr<KvCache> enc_kv_;
    std::vector<float> enc_out_;      // [n_enc][n_embd]
    std::vector<SeqSet> enc_seq_;     // [n_enc]
    std::vector<float> cross_mask_;   // [n_ubatch][n_enc]
    bool enc_rows_readable_ = false;  // embd_ holds the last encode's rows (read even with embeddings off)
    // The decoder's cross-attention K and V of enc_out_ (ForwardBatch::cross_kv): projected by the first
    // decode after an encode, with the LoRA set it ran with, and read by the next decodes while the encoder
    // output and that set stay (a T5 decode step otherwise projects all encoder rows in every layer again).
    std::vector<float> cross_kv_;
    bool cross_kv_ready_ = false;
    std::vector<LoraActive> cross_kv_lora_;
    PerfCounters perf_;
    bool causal_attn_ = true;
};

}  // namespace lctx
