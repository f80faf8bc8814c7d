// The context where a review against llama.cpp b4748 found it differed: each test is a small llama.h
// program whose behaviour b4748 defines (K-shift with RoPE frequency factors, a decode that stops early,
// sequence ids beyond n_seq_max, non-causal batches across micro-batches, attention_type, pooled outputs,
// KV edge cases, attached thread pools, flash-attention state files).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "capi/capi_test_util.h"
#include "ggml-cpu.h"
#include "gguf/gguf.h"
#include "kernels/threadpool.h"
#include "llama.h"

namespace context_b4748_test {
namespace {

using capi_test::decode_seq;
using capi_test::model;
using capi_test::quiet_log;
using capi_test::tokenize;

constexpr int32_t kVocab = 512;  // both test models

std::vector<float> logits_at(llama_context *ctx, int32_t i) {
    const float *l = llama_get_logits_ith(ctx, i);
    EXPECT_NE(l, nullptr);
    return l ? std::vector<float>(l, l + kVocab) : std::vector<float>(kVocab, NAN);
}

float max_abs_diff(const std::vector<float> &a, const std::vector<float> &b) {
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// Decodes tokens at the given positions on one sequence, logits for the last one.
int32_t decode_at(llama_context *ctx, const std::vector<llama_token> &toks, const std::vector<llama_pos> &pos,
                  llama_seq_id seq = 0) {
    llama_batch b = llama_batch_init(static_cast<int32_t>(toks.size()), 0, 1);
    b.n_tokens = static_cast<int32_t>(toks.size());
    for (size_t i = 0; i < toks.size(); ++i) {
        b.token[i] = toks[i];
        b.pos[i] = pos[i];
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq;
        b.logits[i] = i + 1 == toks.size();
    }
    const int32_t rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc;
}

std::vector<llama_pos> iota_pos(size_t n, llama_pos p0) {
    std::vector<llama_pos> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = p0 + static_cast<llama_pos>(i);
    return p;
}

// The cache as bytes: every cell's position and sequence set, and the K row and V values of each used cell
// in every layer. Two caches with equal snapshots answer every later decode alike.
std::vector<uint8_t> cache_snapshot(llama_context *ctx) {
    const lctx::KvCache &kv = ctx->impl->kv();
    const lctx::KvView &v = kv.view();
    std::vector<uint8_t> out;
    auto put = [&](const void *p, size_t n) {
        out.insert(out.end(), static_cast<const uint8_t *>(p), static_cast<const uint8_t *>(p) + n);
    };
    for (uint32_t i = 0; i < kv.size(); ++i) {
        const lctx::KvCell &c = kv.cells()[i];
        put(&c.pos, sizeof c.pos);
        const std::string seqs = c.seq.to_string();
        put(seqs.data(), seqs.size());
        if (c.pos < 0) continue;
        for (uint32_t il = 0; il < kv.n_layer(); ++il) {
            put(v.k[il] + i * v.k_row_bytes, v.k_row_bytes);
            if (v.v_trans) {
                for (uint32_t ch = 0; ch < kv.n_embd_v(); ++ch)
                    put(v.v[il] + (static_cast<size_t>(ch) * v.size + i) * v.v_elem_bytes, v.v_elem_bytes);
            } else {
                put(v.v[il] + i * v.v_row_bytes, v.v_row_bytes);
            }
        }
    }
    return out;
}

llama_context *ctx_with(const std::function<void(llama_context_params &)> &edit, llama_model *m = nullptr) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 256;
    p.n_batch = 64;
    p.n_ubatch = 8;
    p.n_threads = 1;
    p.n_threads_batch = 1;
    edit(p);
    return llama_init_from_model(m ? m : model(), p);
}

struct CtxDeleter {
    void operator()(llama_context *c) const { llama_free(c); }
};
using Ctx = std::unique_ptr<llama_context, CtxDeleter>;

// ---- 1. K-shift with RoPE frequency factors ----

// The synthetic llama model (head size 32) with a Llama-3.1-style rope_freqs tensor: divisors that grow
// with the pair index, so the low frequencies rotate much slower than without them.
class RopeFreqsModel : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        quiet_log();
        path_ = (std::filesystem::temp_directory_path() /
                 ("lctx-rope-freqs-" + std::to_string(getpid()) + ".gguf"))
                    .string();
        auto f = lctx::gguf::File::open(std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf");
        lctx::gguf::Writer w;
        for (const lctx::gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
        for (const lctx::gguf::TensorInfo &t : f->tensors())
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
        std::vector<float> ff(16);
        for (int i = 0; i < 16; ++i) ff[i] = 1.0f + 0.5f * static_cast<float>(i * i);
        w.add_tensor("rope_freqs.weight", lctx::GgmlType::F32, {16}, ff.data(), ff.size() * sizeof(float));
        w.write_file(path_);
        llama_model_params mp = llama_model_default_params();
        model_ = llama_model_load_from_file(path_.c_str(), mp);
        ASSERT_NE(model_, nullptr);
    }
    static void TearDownTestSuite() {
        llama_model_free(model_);
        std::remove(path_.c_str());
    }
    // F32 cache: a re-rotated key then differs from a fresh one by float rounding only.
    static Ctx make(uint32_t n_seq_max = 1) {
        return Ctx(ctx_with(
            [&](llama_context_params &p) {
                p.type_k = p.type_v = GGML_TYPE_F32;
                p.n_seq_max = n_seq_max;
            },
            model_));
    }
    static inline std::string path_;
    static inline llama_model *model_ = nullptr;
};

const std::vector<llama_token> kToks = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315};
// A key rotated twice (to its old position, then by the shift) against once, in float: ~1e-6 relative, which
// this random-weight model's sharp attention (scores in the hundreds) turns into logit differences of
// 0.0014 - 0.0022 (measured with and without frequency factors, every ISA level). Without the factors in the
// shift the difference is about 1.
constexpr float kShiftTol = 0.01f;

TEST_F(RopeFreqsModel, SeqAddRotatesKeysAsTheForwardPassDoes) {
    const llama_pos shift = 37;
    Ctx shifted = make(), direct = make();
    ASSERT_EQ(decode_at(shifted.get(), kToks, iota_pos(kToks.size(), 0)), 0);
    llama_kv_cache_seq_add(shifted.get(), 0, 0, -1, shift);
    const llama_pos next = static_cast<llama_pos>(kToks.size()) + shift;
    ASSERT_EQ(decode_at(shifted.get(), {300}, {next}), 0);
    ASSERT_EQ(decode_at(direct.get(), kToks, iota_pos(kToks.size(), shift)), 0);
    ASSERT_EQ(decode_at(direct.get(), {300}, {next}), 0);
    EXPECT_LT(max_abs_diff(logits_at(shifted.get(), -1), logits_at(direct.get(), -1)), kShiftTol);
}

// The first layer's keys depend on the token and its position only, so after a division they must equal
// those of the same tokens decoded at the divided positions (deeper layers differ: their tokens attended
// under other positions).
TEST_F(RopeFreqsModel, SeqDivRotatesKeysAsTheForwardPassDoes) {
    Ctx divided = make(), direct = make();
    ASSERT_EQ(decode_at(divided.get(), kToks, iota_pos(kToks.size(), 0)), 0);
    llama_kv_cache_seq_div(divided.get(), 0, 0, -1, 3);
    llama_kv_cache_update(divided.get());
    std::vector<llama_pos> pos(kToks.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<llama_pos>(i) / 3;
    ASSERT_EQ(decode_at(direct.get(), kToks, pos), 0);
    const lctx::KvView &a = divided->impl->kv().view(), &b = direct->impl->kv().view();
    const size_t n = a.k_row_bytes / sizeof(float) * kToks.size();  // F32 keys of the cells 0..11
    const float *ka = reinterpret_cast<const float *>(a.k[0]), *kb = reinterpret_cast<const float *>(b.k[0]);
    float diff = 0, mag = 0;
    for (size_t i = 0; i < n; ++i) {
        diff = std::max(diff, std::fabs(ka[i] - kb[i]));
        mag = std::max(mag, std::fabs(kb[i]));
    }
    // Float rounding of one extra rotation (measured 2e-7 of the largest key value).
    EXPECT_LT(diff, 1e-5f * mag);
}

// A state saved while a shift is pending holds keys rotated to their new positions.
TEST_F(RopeFreqsModel, StateSavedWithAPendingShiftHoldsRotatedKeys) {
    const llama_pos shift = 37;
    Ctx shifted = make(), loaded = make(), direct = make();
    ASSERT_EQ(decode_at(shifted.get(), kToks, iota_pos(kToks.size(), 0)), 0);
    llama_kv_cache_seq_add(shifted.get(), 0, 0, -1, shift);
    std::vector<uint8_t> buf(llama_state_get_size(shifted.get()));
    ASSERT_EQ(llama_state_get_data(shifted.get(), buf.data(), buf.size()), buf.size());
    ASSERT_EQ(llama_state_set_data(loaded.get(), buf.data(), buf.size()), buf.size());

    const llama_pos next = static_cast<llama_pos>(kToks.size()) + shift;
    ASSERT_EQ(decode_at(loaded.get(), {300}, {next}), 0);
    ASSERT_EQ(decode_at(direct.get(), kToks, iota_pos(kToks.size(), shift)), 0);
    ASSERT_EQ(decode_at(direct.get(), {300}, {next}), 0);
    EXPECT_LT(max_abs_diff(logits_at(loaded.get(), -1), logits_at(direct.get(), -1)), kShiftTol);
}

// ---- 2. A decode that stops early leaves the cache as it found it ----

struct AbortAt {
    llama_context *ctx = nullptr;
    int32_t used_cells = 0;  // abort once this many cells are in use (inside the micro-batch that reached it)
};

TEST(DecodeStopsEarly, AbortRestoresTheCacheAndARetryGivesTheCleanLogits) {
    quiet_log();
    Ctx ctx(ctx_with([](llama_context_params &p) { p.n_seq_max = 2; }));
    Ctx clean(ctx_with([](llama_context_params &p) { p.n_seq_max = 2; }));
    // Both start from the same non-empty cache: 5 tokens of sequence 1.
    const std::vector<llama_token> prefix = tokenize("Once upon");
    for (llama_context *c : {ctx.get(), clean.get()}) ASSERT_EQ(decode_seq(c, prefix, 0, 1), 0);
    const std::vector<uint8_t> before = cache_snapshot(ctx.get());
    const int32_t used_before = llama_get_kv_cache_used_cells(ctx.get());

    std::vector<llama_token> toks(40);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<llama_token>(100 + 7 * i);
    // n_ubatch 8: the third micro-batch takes cells up to used_before + 24 and aborts inside its layers.
    AbortAt abort_at{ctx.get(), used_before + 24};
    llama_set_abort_callback(
        ctx.get(),
        [](void *d) {
            auto *a = static_cast<AbortAt *>(d);
            return llama_get_kv_cache_used_cells(a->ctx) >= a->used_cells;
        },
        &abort_at);
    EXPECT_EQ(decode_seq(ctx.get(), toks, 0, 0), 2);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx.get()), used_before);
    EXPECT_EQ(cache_snapshot(ctx.get()), before);

    llama_set_abort_callback(ctx.get(), nullptr, nullptr);
    ASSERT_EQ(decode_seq(ctx.get(), toks, 0, 0), 0);
    ASSERT_EQ(decode_seq(clean.get(), toks, 0, 0), 0);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx.get()), used_before + 40);
    EXPECT_EQ(logits_at(ctx.get(), -1), logits_at(clean.get(), -1));  // the same cells: the same bits
    EXPECT_EQ(cache_snapshot(ctx.get()), cache_snapshot(clean.get()));
}

TEST(DecodeStopsEarly, NoFreeSlotRestoresTheCache) {
    quiet_log();
    // 32 cells; the batch's fifth micro-batch finds none (n_batch is at least 64, so the batch is accepted).
    Ctx ctx(ctx_with([](llama_context_params &p) { p.n_ctx = 32; }));
    ASSERT_EQ(decode_seq(ctx.get(), tokenize("Once"), 0, 0), 0);
    const std::vector<uint8_t> before = cache_snapshot(ctx.get());
    std::vector<llama_token> toks(40, 300);
    EXPECT_EQ(decode_seq(ctx.get(), toks, 10, 0), 1);
    EXPECT_EQ(cache_snapshot(ctx.get()), before);
    // What fits still goes in, in the same cells as in a context that never saw the failed call.
    Ctx clean(ctx_with([](llama_context_params &p) { p.n_ctx = 32; }));
    ASSERT_EQ(decode_seq(clean.get(), tokenize("Once"), 0, 0), 0);
    const std::vector<llama_token> some(20, 300);
    ASSERT_EQ(decode_seq(ctx.get(), some, 10, 0), 0);
    ASSERT_EQ(decode_seq(clean.get(), some, 10, 0), 0);
    EXPECT_EQ(cache_snapshot(ctx.get()), cache_snapshot(clean.get()));
    EXPECT_EQ(logits_at(ctx.get(), -1), logits_at(clean.get(), -1));
}

// ---- 3. Sequence ids beyond n_seq_max ----

TEST(SequenceIds, AnyIdACellCanHoldIsAcceptedWhateverNSeqMax) {
    quiet_log();
    // examples/embedding's pattern: n prompts as sequences 0..n-1 with n_seq_max = 1.
    Ctx ctx(ctx_with([](llama_context_params &p) { p.n_seq_max = 1; }));
    const std::vector<llama_token> a = tokenize("Once upon a time"), b = tokenize("Lily and Tom");
    ASSERT_EQ(decode_seq(ctx.get(), a, 0, 3), 0);
    const std::vector<float> la = logits_at(ctx.get(), -1);
    ASSERT_EQ(decode_seq(ctx.get(), b, 0, LCTX_MAX_SEQ - 1), 0);
    const std::vector<float> lb = logits_at(ctx.get(), -1);
    // Each equals the sequence decoded alone on sequence 0.
    for (const auto &[toks, want] : {std::pair{a, la}, std::pair{b, lb}}) {
        Ctx alone(ctx_with([](llama_context_params &) {}));
        ASSERT_EQ(decode_seq(alone.get(), toks, 0, 0), 0);
        EXPECT_LT(max_abs_diff(logits_at(alone.get(), -1), want), 1e-4f);
    }
    // seq_cp / seq_keep / per-sequence state take the same range.
    llama_kv_cache_seq_cp(ctx.get(), 3, 7, -1, -1);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx.get(), 7), static_cast<llama_pos>(a.size()) - 1);
    EXPECT_GT(llama_state_seq_get_size(ctx.get(), 7), 0u);
    std::vector<uint8_t> seq(llama_state_seq_get_size(ctx.get(), 7));
    ASSERT_EQ(llama_state_seq_get_data(ctx.get(), seq.data(), seq.size(), 7), seq.size());
    EXPECT_EQ(llama_state_seq_set_data(ctx.get(), seq.data(), seq.size(), 200), seq.size());
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx.get(), 200), static_cast<llama_pos>(a.size()) - 1);
    llama_kv_cache_seq_keep(ctx.get(), 200);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx.get(), 200), static_cast<llama_pos>(a.size()) - 1);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx.get(), 3), -1);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx.get(), LCTX_MAX_SEQ - 1), -1);

    // An id no cell can hold is refused and changes nothing.
    const std::vector<uint8_t> before = cache_snapshot(ctx.get());
    EXPECT_EQ(decode_seq(ctx.get(), a, 0, LCTX_MAX_SEQ), -1);
    llama_kv_cache_seq_cp(ctx.get(), 3, LCTX_MAX_SEQ, -1, -1);
    EXPECT_EQ(llama_state_seq_get_size(ctx.get(), LCTX_MAX_SEQ), 0u);
    EXPECT_EQ(cache_snapshot(ctx.get()), before);
}

// ---- 4 and 5. Non-causal attention ----

// Two sequences of 8 tokens each, one after the other in the batch; every token asks for logits.
llama_batch two_sequences(const std::vector<llama_token> &t0, const std::vector<llama_token> &t1,
                          bool interleave) {
    const int32_t n = static_cast<int32_t>(t0.size() + t1.size());
    llama_batch b = llama_batch_init(n, 0, 1);
    b.n_tokens = n;
    for (int32_t i = 0; i < n; ++i) {
        const bool second = interleave ? (i % 2 == 1) : i >= static_cast<int32_t>(t0.size());
        const int32_t k = interleave ? i / 2 : (second ? i - static_cast<int32_t>(t0.size()) : i);
        b.token[i] = second ? t1[k] : t0[k];
        b.pos[i] = k;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = second ? 1 : 0;
        b.logits[i] = 1;
    }
    return b;
}

TEST(NonCausal, ASequenceSplitAcrossMicroBatchesIsRefused) {
    quiet_log();
    Ctx ctx(ctx_with([](llama_context_params &p) { p.n_seq_max = 2; }));
    ASSERT_EQ(decode_seq(ctx.get(), tokenize("Once"), 0, 1), 0);  // a non-empty cache
    llama_set_causal_attn(ctx.get(), false);
    const std::vector<uint8_t> before = cache_snapshot(ctx.get());
    std::vector<llama_token> toks(16);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<llama_token>(200 + i);
    EXPECT_EQ(decode_seq(ctx.get(), toks, 0, 0), -1);  // 16 tokens of one sequence, n_ubatch 8
    const std::vector<llama_token> t0(toks.begin(), toks.begin() + 8), t1(toks.begin() + 8, toks.end());
    llama_batch mixed = two_sequences(t0, t1, /*interleave=*/true);  // no cut keeps both whole
    EXPECT_EQ(llama_decode(ctx.get(), mixed), -1);
    llama_batch_free(mixed);
    EXPECT_EQ(cache_snapshot(ctx.get()), before);
}

TEST(NonCausal, WholeSequencesGoInTheirOwnMicroBatches) {
    quiet_log();
    std::vector<llama_token> t0(8), t1(8);
    for (int i = 0; i < 8; ++i) t0[i] = 200 + i, t1[i] = 300 + 3 * i;
    auto run = [&](uint32_t n_ubatch) {
        Ctx ctx(ctx_with([&](llama_context_params &p) {
            p.n_seq_max = 2;
            p.n_ubatch = n_ubatch;
        }));
        llama_set_causal_attn(ctx.get(), false);
        llama_batch b = two_sequences(t0, t1, false);
        EXPECT_EQ(llama_decode(ctx.get(), b), 0);
        llama_batch_free(b);
        std::vector<std::vector<float>> rows;
        for (int i = 0; i < 16; ++i) rows.push_back(logits_at(ctx.get(), i));
        return rows;
    };
    const auto split = run(8), whole = run(64);
    // Different micro-batch shapes take the same kernels over different tile counts: float rounding only.
    for (int i = 0; i < 16; ++i) EXPECT_LT(max_abs_diff(split[i], whole[i]), 1e-4f) << i;
}

TEST(NonCausal, AttentionTypeOfTheContextParamsIsHonoured) {
    quiet_log();
    const std::vector<llama_token> toks = tokenize("Once upon a time");
    auto first_token_logits = [&](enum llama_attention_type type, bool set_non_causal) {
        Ctx ctx(ctx_with([&](llama_context_params &p) { p.attention_type = type; }));
        if (set_non_causal) llama_set_causal_attn(ctx.get(), false);
        llama_batch b = llama_batch_init(static_cast<int32_t>(toks.size()), 0, 1);
        b.n_tokens = static_cast<int32_t>(toks.size());
        for (size_t i = 0; i < toks.size(); ++i) {
            b.token[i] = toks[i];
            b.pos[i] = static_cast<llama_pos>(i);
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = 1;
        }
        EXPECT_EQ(llama_decode(ctx.get(), b), 0);
        llama_batch_free(b);
        return logits_at(ctx.get(), 0);
    };
    const auto causal = first_token_logits(LLAMA_ATTENTION_TYPE_CAUSAL, false);
    const auto unspecified = first_token_logits(LLAMA_ATTENTION_TYPE_UNSPECIFIED, false);
    const auto non_causal = first_token_logits(LLAMA_ATTENTION_TYPE_NON_CAUSAL, false);
    const auto set_later = first_token_logits(LLAMA_ATTENTION_TYPE_UNSPECIFIED, true);
    EXPECT_EQ(causal, unspecified);  // a decoder's own attention is causal
    EXPECT_EQ(non_causal, set_later);
    EXPECT_GT(max_abs_diff(causal, non_causal), 1e-2f);  // the first token now sees the later ones
    llama_context_params p = llama_context_default_params();
    int32_t bad = 7;
    std::memcpy(&p.attention_type, &bad, sizeof bad);
    EXPECT_EQ(llama_init_from_model(model(), p), nullptr);
}

// ---- 6 and 7. Pooled embeddings belong to the last batch ----

Ctx pooled(enum llama_pooling_type pooling) {
    return Ctx(ctx_with([&](llama_context_params &p) {
        p.embeddings = true;
        p.pooling_type = pooling;
        p.n_seq_max = 2;
    }));
}

TEST(Pooling, ASequenceMissingFromTheLastBatchHasNoVector) {
    quiet_log();
    Ctx ctx = pooled(LLAMA_POOLING_TYPE_MEAN);
    ASSERT_EQ(decode_seq(ctx.get(), tokenize("Once upon a time"), 0, 0), 0);
    EXPECT_NE(llama_get_embeddings_seq(ctx.get(), 0), nullptr);
    ASSERT_EQ(decode_seq(ctx.get(), tokenize("Lily"), 0, 1), 0);
    EXPECT_EQ(llama_get_embeddings_seq(ctx.get(), 0), nullptr);
    EXPECT_NE(llama_get_embeddings_seq(ctx.get(), 1), nullptr);
}

TEST(Pooling, ClsWithoutPositionZeroInTheBatchHasNoVector) {
    quiet_log();
    Ctx ctx = pooled(LLAMA_POOLING_TYPE_CLS);
    const std::vector<llama_token> toks = tokenize("Once upon a time");
    ASSERT_EQ(decode_seq(ctx.get(), toks, 0, 0), 0);
    const float *cls = llama_get_embeddings_seq(ctx.get(), 0);
    ASSERT_NE(cls, nullptr);
    EXPECT_GT(std::fabs(cls[0]) + std::fabs(cls[1]), 0.0f);
    std::string logged;
    llama_log_set(
        [](enum ggml_log_level, const char *text, void *d) { *static_cast<std::string *>(d) += text; },
        &logged);
    ASSERT_EQ(decode_seq(ctx.get(), {300, 301}, static_cast<llama_pos>(toks.size()), 0), 0);
    EXPECT_EQ(llama_get_embeddings_seq(ctx.get(), 0), nullptr);
    EXPECT_NE(logged.find("position 0"), std::string::npos) << logged;
    quiet_log();
}

// ---- 8. KV edge cases ----

TEST(KvEdges, SeqKeepOfNoSequenceDropsEveryCell) {
    quiet_log();
    Ctx ctx(ctx_with([](llama_context_params &) {}));
    ASSERT_EQ(decode_seq(ctx.get(), tokenize("Once upon a time"), 0, 0), 0);
    llama_kv_cache_seq_keep(ctx.get(), -1);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx.get()), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx.get(), 0), -1);
}

TEST(KvEdges, SeqRmOfAnIdNoCellHoldsIsTrueAndRemovesNothing) {
    quiet_log();
    Ctx ctx(ctx_with([](llama_context_params &) {}));
    ASSERT_EQ(decode_seq(ctx.get(), tokenize("Once upon a time"), 0, 0), 0);
    const std::vector<uint8_t> before = cache_snapshot(ctx.get());
    EXPECT_TRUE(llama_kv_cache_seq_rm(ctx.get(), LCTX_MAX_SEQ + 10, -1, -1));
    EXPECT_TRUE(llama_kv_cache_seq_rm(ctx.get(), 5, -1, -1));
    EXPECT_EQ(cache_snapshot(ctx.get()), before);
}

TEST(KvEdges, SeqDivBelowOneIsRefusedAndOneChangesNothing) {
    quiet_log();
    Ctx ctx(ctx_with([](llama_context_params &) {}));
    const std::vector<llama_token> toks = tokenize("Once upon a time");
    ASSERT_EQ(decode_seq(ctx.get(), toks, 0, 0), 0);
    const std::vector<uint8_t> before = cache_snapshot(ctx.get());
    for (int d : {1, 0, -1, -3, INT32_MIN}) {
        llama_kv_cache_seq_div(ctx.get(), 0, 0, -1, d);
        llama_kv_cache_update(ctx.get());
        EXPECT_EQ(cache_snapshot(ctx.get()), before) << d;
    }
    EXPECT_TRUE(llama_kv_cache_seq_rm(ctx.get(), 0, -1, -1));
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx.get()), 0);
}

// ---- 9. Attached thread pools ----

TEST(ThreadPool, AContextRunsOnTheAttachedPool) {
    quiet_log();
    ggml_threadpool_params tpp = ggml_threadpool_params_default(2);
    EXPECT_EQ(tpp.n_threads, 2);
    EXPECT_EQ(tpp.poll, 50u);
    ggml_threadpool_params other = ggml_threadpool_params_default(2);
    EXPECT_TRUE(ggml_threadpool_params_match(&tpp, &other));
    other.poll = 0;
    EXPECT_FALSE(ggml_threadpool_params_match(&tpp, &other));
    tpp.paused = true;
    ggml_threadpool_t tp = ggml_threadpool_new(&tpp);
    ASSERT_NE(tp, nullptr);
    EXPECT_EQ(ggml_threadpool_get_n_threads(tp), 2);
    lctx::kernels::ThreadPool *pool = lctx::capi::pool_of(tp);
    EXPECT_TRUE(pool->paused());

    // The synthetic llama model: large enough that a prompt's products are split over threads.
    llama_model_params mp = llama_model_default_params();
    llama_model *m = llama_model_load_from_file(
        (std::string(LCTX_FIXTURES_DIR) + "/golden/models/llama-F16.gguf").c_str(), mp);
    ASSERT_NE(m, nullptr);
    Ctx own(ctx_with([](llama_context_params &p) { p.n_threads = p.n_threads_batch = 2; }, m));
    Ctx ctx(ctx_with([](llama_context_params &p) { p.n_threads = p.n_threads_batch = 2; }, m));
    llama_attach_threadpool(ctx.get(), tp, nullptr);
    const std::vector<llama_token> toks = kToks;
    const uint64_t sections0 = pool->sections();
    ASSERT_EQ(decode_seq(ctx.get(), toks, 0, 0), 0);
    ASSERT_EQ(decode_seq(own.get(), toks, 0, 0), 0);
    EXPECT_GT(pool->sections(), sections0);  // the prompt ran its parallel sections there
    EXPECT_FALSE(pool->paused());            // new work resumes a paused pool
    EXPECT_EQ(logits_at(ctx.get(), -1), logits_at(own.get(), -1));
    ggml_threadpool_pause(tp);
    EXPECT_TRUE(pool->paused());
    ggml_threadpool_resume(tp);
    EXPECT_FALSE(pool->paused());

    llama_detach_threadpool(ctx.get());
    const uint64_t sections1 = pool->sections();
    ASSERT_EQ(decode_seq(ctx.get(), toks, static_cast<llama_pos>(toks.size()), 1), 0);
    EXPECT_EQ(pool->sections(), sections1);  // back on the context's own pool
    ctx.reset();
    own.reset();
    llama_model_free(m);
    ggml_threadpool_free(tp);

    ggml_threadpool_params bad = ggml_threadpool_params_default(0);
    EXPECT_EQ(ggml_threadpool_new(&bad), nullptr);
    bad = ggml_threadpool_params_default(GGML_MAX_N_THREADS + 1);
    EXPECT_EQ(ggml_threadpool_new(&bad), nullptr);
}

// ---- 10. Flash-attention contexts keep V by rows ----

TEST(FlashAttn, StateFilesHaveVByRowsAndRoundTrip) {
    quiet_log();
    auto make = [](bool fa) { return Ctx(ctx_with([&](llama_context_params &p) { p.flash_attn = fa; })); };
    Ctx fa = make(true), plain = make(false);
    EXPECT_FALSE(fa->impl->kv().view().v_trans);
    const std::vector<llama_token> toks = tokenize("Once upon a time");
    ASSERT_EQ(decode_seq(fa.get(), toks, 0, 0), 0);
    ASSERT_EQ(decode_seq(plain.get(), toks, 0, 0), 0);
    // The same attention over another V layout. The transposed layout rounds the probabilities to V's F16
    // dot type, the by-rows one sums them in F32: 2^-11 relative per probability (measured 0.0025 here).
    EXPECT_LT(max_abs_diff(logits_at(fa.get(), -1), logits_at(plain.get(), -1)), 0.02f);

    std::vector<uint8_t> buf(llama_state_get_size(fa.get()));
    ASSERT_EQ(llama_state_get_data(fa.get(), buf.data(), buf.size()), buf.size());
    Ctx fa2 = make(true), plain2 = make(false);
    EXPECT_EQ(llama_state_set_data(fa2.get(), buf.data(), buf.size()), buf.size());
    EXPECT_EQ(llama_state_set_data(plain2.get(), buf.data(), buf.size()), 0u);  // v_trans differs
    EXPECT_EQ(llama_get_kv_cache_used_cells(plain2.get()), 0);
    ASSERT_EQ(decode_seq(fa.get(), {300}, static_cast<llama_pos>(toks.size()), 0), 0);
    ASSERT_EQ(decode_seq(fa2.get(), {300}, static_cast<llama_pos>(toks.size()), 0), 0);
    EXPECT_EQ(logits_at(fa.get(), -1), logits_at(fa2.get(), -1));
}

}  // namespace

// ---- control vectors (llama_apply_adapter_cvec) ----

namespace {

TEST(ControlVector, AddsToTheResidualStreamOfTheLayersInRange) {
    quiet_log();
    const int32_t n_embd = llama_model_n_embd(model());
    const int32_t n_layer = llama_model_n_layer(model());
    const std::vector<llama_token> toks = tokenize("Once upon a time");
    auto run = [&](const std::function<void(llama_context *)> &setup, bool embeddings) {
        Ctx ctx(ctx_with([&](llama_context_params &p) { p.embeddings = embeddings; }));
        setup(ctx.get());
        EXPECT_EQ(decode_seq(ctx.get(), toks, 0, 0), 0);
        const float *o =
            embeddings ? llama_get_embeddings_ith(ctx.get(), -1) : llama_get_logits_ith(ctx.get(), -1);
        const int32_t n = embeddings ? n_embd : kVocab;
        return o ? std::vector<float>(o, o + n) : std::vector<float>();
    };
    const auto plain = run([](llama_context *) {}, false);
    // Layer il's vector sits at (il - 1) * n_embd; layer 0 never has one.
    std::vector<float> v(static_cast<size_t>(n_embd) * (n_layer - 1), 0.0f);
    EXPECT_EQ(run(
                  [&](llama_context *c) {
                      EXPECT_EQ(llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, 0, n_layer), 0);
                  },
                  false),
              plain);  // zeros change nothing
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>(i % 7) - 0.1f;
    EXPECT_EQ(
        run([&](llama_context *c) { llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, n_layer, 99); },
            false),
        plain);  // no layer in range
    EXPECT_EQ(run([&](llama_context *c) { llama_apply_adapter_cvec(c, v.data(), n_embd - 1, n_embd, 0, 99); },
                  false),
              plain);  // too short to cover layer 1
    EXPECT_GT(
        max_abs_diff(
            run([&](llama_context *c) { llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, 1, 99); },
                false),
            plain),
        1e-3f);
    EXPECT_EQ(run(
                  [&](llama_context *c) {
                      llama_apply_adapter_cvec(c, v.data(), v.size(), n_embd, 1, 99);
                      EXPECT_EQ(llama_apply_adapter_cvec(c, nullptr, 0, 0, 0, 0), 0);  // off again
                  },
                  false),
              plain);
    Ctx ctx(ctx_with([](llama_context_params &) {}));
    EXPECT_EQ(llama_apply_adapter_cvec(ctx.get(), v.data(), v.size(), n_embd + 1, 1, 99), 1);  // wrong width

    // A huge vector along one axis on the last layer dominates the final norm: the normalized hidden state
    // becomes sqrt(n_embd) * output_norm[k] on that axis and ~0 elsewhere.
    const int k = 5;
    std::vector<float> axis(static_cast<size_t>(n_embd) * (n_layer - 1), 0.0f);
    axis[static_cast<size_t>(n_layer - 2) * n_embd + k] = 1e6f;
    const auto h = run(
        [&](llama_context *c) {
            llama_apply_adapter_cvec(c, axis.data(), axis.size(), n_embd, n_layer - 1, n_layer - 1);
        },
        true);
    ASSERT_EQ(h.size(), static_cast<size_t>(n_embd));
    const float w_k = model()->impl->weights().output_norm[k];
    EXPECT_NEAR(h[k], std::sqrt(static_cast<float>(n_embd)) * w_k, 1e-3f * std::fabs(w_k) * 8);
    for (int j = 0; j < n_embd; ++j) {
        if (j != k) {
            EXPECT_LT(std::fabs(h[j]), 1e-3f) << j;
        }
    }
}

}  // namespace
}  // namespace context_b4748_test
