// Hostile context parameters and batches: sizes of 0, sizes that cannot be allocated, micro-batches larger
// than batches, batches larger than n_batch, sequence ids and positions out of range or going backwards.
// Each is refused with a message (lctx::Error from lctx::Context, null or a negative status from the C API)
// and leaves what existed unchanged, or is accepted with a defined, checked result.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>

#include "context/context.h"
#include "hostile/hostile_util.h"
#include "llama.h"
#include "model/model.h"
#include "state_snapshot.h"

namespace lctx::context_hostile_test {
namespace {

using hostile::expect_error;

const Model &stories() {
    static std::unique_ptr<Model> m = Model::load(hostile::stories_path());
    return *m;
}

llama_model *stories_c() {
    static llama_model *m =
        llama_model_load_from_file(hostile::stories_path().c_str(), llama_model_default_params());
    return m;
}

ContextParams small_params() {
    ContextParams p;
    p.n_ctx = 64;
    p.n_batch = 32;
    p.n_ubatch = 8;
    p.n_seq_max = 2;
    return p;
}

// One token per entry: (token, pos, seq); logits for the last.
struct Toks {
    std::vector<int32_t> token, pos, n_seq;
    std::vector<int32_t> seq_store;
    std::vector<int32_t *> seq;
    std::vector<int8_t> logits;
    Toks(std::initializer_list<std::array<int32_t, 3>> items) {
        for (const auto &t : items) {
            token.push_back(t[0]);
            pos.push_back(t[1]);
            seq_store.push_back(t[2]);
            n_seq.push_back(1);
        }
        for (int32_t &s : seq_store) seq.push_back(&s);
        logits.assign(token.size(), 0);
        if (!logits.empty()) logits.back() = 1;
    }
    Batch batch() const {
        Batch b;
        b.n_tokens = static_cast<int32_t>(token.size());
        b.token = token.data();
        b.pos = pos.data();
        b.n_seq_id = n_seq.data();
        b.seq_id = seq.data();
        b.logits = logits.data();
        return b;
    }
};

// A context with cells of both sequences and the outputs of its last decode, so that a refused batch has
// something to change.
void prefill(Context &ctx) {
    ASSERT_EQ(ctx.decode(Toks({{1, 0, 0}, {300, 1, 0}, {1, 0, 1}, {301, 1, 1}, {302, 2, 1}}).batch()),
              DecodeStatus::Ok);
    ASSERT_EQ(ctx.kv().used(), 5u);
}

// Address space the allocation tests leave the process beyond what it maps when they start: enough for a
// small context, far below the terabytes they ask for.
constexpr uint64_t kAllocationBudget = uint64_t{4} << 30;

// ---- context sizes ----

TEST(HostileContext, NctxZeroTakesTheTrainingContextOrIsRefused) {
    hostile::quiet();
    ContextParams p = small_params();
    p.n_ctx = 0;
    Context ctx(stories(), p);
    EXPECT_EQ(ctx.kv().size(), stories().hparams().n_ctx_train);

    // A model that gives no training context: n_ctx 0 has nothing to fall back to.
    hostile::TempFile tmp("ctx0.gguf");
    tmp.write(hostile::stories_with([](gguf::Writer &w) { w.set_u32("llama.context_length", 0); }));
    const auto m = Model::load(tmp.path());
    expect_error([&] { Context c(*m, p); }, {"n_ctx is 0"});
    llama_model *cm = llama_model_load_from_file(tmp.path().c_str(), llama_model_default_params());
    ASSERT_NE(cm, nullptr);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 0;
    EXPECT_EQ(llama_init_from_model(cm, cp), nullptr);
    llama_model_free(cm);
}

// "A context that cannot be allocated": 2^31 cells of stories260K's cache need 1.3 TiB of K/V (and the
// cell table alone 80 GiB). It must be a lctx::Error naming the KV cache, not std::bad_alloc or an abort.
TEST(HostileContext, KvCacheThatCannotBeAllocatedIsAnError) {
    hostile::quiet();
    (void)stories();  // loaded before the cap
    (void)stories_c();
    const hostile::AddressSpaceCap cap(kAllocationBudget);
    ASSERT_TRUE(cap.ok());
    for (uint32_t n_ctx : {1u << 31, 0xffffffe0u}) {
        ContextParams p = small_params();
        p.n_ctx = n_ctx;
        expect_error([&] { Context c(stories(), p); }, {"KV cache"}, "n_ctx " + std::to_string(n_ctx));
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = n_ctx;
        EXPECT_EQ(llama_init_from_model(stories_c(), cp), nullptr) << n_ctx;
    }
}

// n_ctx near 2^32: rounding up to a multiple of 32 must not wrap around to a small (or zero, meaning
// "the training context") size. The request is refused or yields at least what was asked for.
TEST(HostileContext, NctxNearTwoToThe32DoesNotWrap) {
    hostile::quiet();
    (void)stories_c();
    const hostile::AddressSpaceCap cap(kAllocationBudget);
    ASSERT_TRUE(cap.ok());
    for (uint32_t n_ctx : {0xffffffffu, 0xfffffff0u, 0xffffffe1u}) {
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = n_ctx;
        llama_context *ctx = llama_init_from_model(stories_c(), cp);
        if (ctx) {
            EXPECT_GE(llama_n_ctx(ctx), n_ctx) << "asked for " << n_ctx << ", got " << llama_n_ctx(ctx);
            llama_free(ctx);
        }
    }
}

TEST(HostileContext, ZeroBatchSizesAndSequenceCountsAreRefused) {
    hostile::quiet();
    ContextParams p = small_params();
    p.n_batch = 0;
    expect_error([&] { Context c(stories(), p); }, {"n_batch"});
    p = small_params();
    p.n_ubatch = 0;
    expect_error([&] { Context c(stories(), p); }, {"n_ubatch"});
    p = small_params();
    p.n_seq_max = 0;
    expect_error([&] { Context c(stories(), p); }, {"n_seq_max"});
    p.n_seq_max = 257;
    expect_error([&] { Context c(stories(), p); }, {"n_seq_max"});
    llama_context_params cp = llama_context_default_params();
    cp.n_seq_max = 100000;
    EXPECT_EQ(llama_init_from_model(stories_c(), cp), nullptr);
    cp = llama_context_default_params();
    cp.type_k = static_cast<ggml_type>(9999);  // not a type at all
    EXPECT_EQ(llama_init_from_model(stories_c(), cp), nullptr);
    cp = llama_context_default_params();
    cp.type_v = static_cast<ggml_type>(-1);
    EXPECT_EQ(llama_init_from_model(stories_c(), cp), nullptr);
}

// n_ubatch larger than n_batch is clamped to n_batch (as llama.cpp does); a full batch then decodes.
TEST(HostileContext, UbatchLargerThanBatchIsClamped) {
    hostile::quiet();
    ContextParams p = small_params();
    p.n_batch = 16;
    p.n_ubatch = 4096;
    Context ctx(stories(), p);
    EXPECT_EQ(ctx.params().n_ubatch, 16u);
    std::vector<int32_t> tok(16, 300);
    Batch b;
    b.n_tokens = 16;
    b.token = tok.data();
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Ok);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 128;
    cp.n_batch = 64;
    cp.n_ubatch = 100000;
    llama_context *c = llama_init_from_model(stories_c(), cp);
    ASSERT_NE(c, nullptr);
    EXPECT_LE(llama_n_ubatch(c), llama_n_batch(c));
    llama_free(c);
}

// ---- batches ----

TEST(HostileBatch, TooLargeOrEmptyBatchIsRefusedWithoutChange) {
    hostile::quiet();
    Context ctx(stories(), small_params());
    prefill(ctx);
    const std::vector<uint8_t> before = state_test::snapshot(ctx);
    std::vector<int32_t> many(33, 300);  // n_batch is 32
    for (int32_t n : {33, INT32_MAX, -1, INT32_MIN, 0}) {
        Batch b;
        b.n_tokens = n;
        b.token = many.data();  // only read when n passes the checks, which it must not
        EXPECT_EQ(ctx.decode(b), DecodeStatus::Error) << n;
        EXPECT_EQ(state_test::snapshot(ctx), before) << n;
    }
    EXPECT_NE(ctx.logits_ith(-1), nullptr);
}

TEST(HostileBatch, TokenAndSequenceIdsOutOfRangeAreRefused) {
    hostile::quiet();
    Context ctx(stories(), small_params());
    prefill(ctx);
    const std::vector<uint8_t> before = state_test::snapshot(ctx);
    const int32_t n_vocab = static_cast<int32_t>(stories().hparams().n_vocab);
    // A valid token first in each batch: the refusal must come before any of the batch is decoded.
    for (int32_t tok : {-1, n_vocab, INT32_MAX, INT32_MIN}) {
        EXPECT_EQ(ctx.decode(Toks({{1, 3, 0}, {tok, 4, 0}}).batch()), DecodeStatus::Error) << tok;
        EXPECT_EQ(state_test::snapshot(ctx), before) << tok;
    }
    // Ids a cell cannot hold ([0, kMaxSeqs) are accepted whatever n_seq_max, as b4748).
    for (int32_t seq : {-1, kMaxSeqs, INT32_MAX, INT32_MIN}) {
        EXPECT_EQ(ctx.decode(Toks({{1, 3, 0}, {1, 0, seq}}).batch()), DecodeStatus::Error) << seq;
        EXPECT_EQ(state_test::snapshot(ctx), before) << seq;
    }
    // n_seq_id outside [1, kMaxSeqs]
    for (int32_t ns : {0, -1, kMaxSeqs + 1, INT32_MAX}) {
        Toks t({{1, 3, 0}, {1, 4, 0}});
        t.n_seq[1] = ns;
        EXPECT_EQ(ctx.decode(t.batch()), DecodeStatus::Error) << ns;
        EXPECT_EQ(state_test::snapshot(ctx), before) << ns;
    }
}

TEST(HostileBatch, NegativePositionsAreRefused) {
    hostile::quiet();
    Context ctx(stories(), small_params());
    prefill(ctx);
    const std::vector<uint8_t> before = state_test::snapshot(ctx);
    for (int32_t pos : {-1, INT32_MIN}) {
        EXPECT_EQ(ctx.decode(Toks({{1, 3, 0}, {300, pos, 0}}).batch()), DecodeStatus::Error) << pos;
        EXPECT_EQ(state_test::snapshot(ctx), before) << pos;
    }
}

// Positions going backwards within a sequence are accepted (llama.cpp b4748 accepts them too): the
// token attends to the cells at positions not after its own, and the result is finite.
TEST(HostileBatch, PositionsGoingBackwardsDecodeToFiniteLogits) {
    hostile::quiet();
    Context ctx(stories(), small_params());
    ASSERT_EQ(ctx.decode(Toks({{1, 0, 0}, {300, 1, 0}, {301, 2, 0}, {302, 3, 0}}).batch()), DecodeStatus::Ok);
    ASSERT_EQ(ctx.decode(Toks({{303, 1, 0}, {304, 0, 0}}).batch()), DecodeStatus::Ok);
    EXPECT_EQ(ctx.kv().used(), 6u);
    const float *l = ctx.logits_ith(-1);
    ASSERT_NE(l, nullptr);
    for (uint32_t i = 0; i < stories().hparams().n_vocab; ++i) ASSERT_TRUE(std::isfinite(l[i])) << i;
}

// A sequence whose last position is INT32_MAX has no next position: a batch that asks for the default
// position must be refused, not wrap around to a negative one.
TEST(HostileBatch, DefaultPositionAfterInt32MaxIsRefused) {
    hostile::quiet();
    Context ctx(stories(), small_params());
    ASSERT_EQ(ctx.decode(Toks({{1, 0, 1}, {1, INT32_MAX, 0}}).batch()), DecodeStatus::Ok);
    const std::vector<uint8_t> before = state_test::snapshot(ctx);
    int32_t tok = 300;
    Batch b;
    b.n_tokens = 1;
    b.token = &tok;  // pos = null: continue sequence 0
    EXPECT_EQ(ctx.decode(b), DecodeStatus::Error);
    EXPECT_EQ(state_test::snapshot(ctx), before);
    for (const KvCell &c : ctx.kv().cells()) EXPECT_TRUE(c.pos >= 0 || c.empty());
}

// Shifting positions past INT32_MAX / below INT32_MIN through the C API must not overflow: a cell that would
// leave [0, INT32_MAX] is dropped (as one shifted below 0 is), the others move by exactly the delta, and the
// cache keeps decoding.
TEST(HostileBatch, SequenceShiftsNearInt32LimitsDoNotOverflow) {
    hostile::quiet();
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 32;
    llama_context *c = llama_init_from_model(stories_c(), cp);
    ASSERT_NE(c, nullptr);
    llama_token toks[2] = {1, 300};
    ASSERT_EQ(llama_decode(c, llama_batch_get_one(toks, 2)), 0);  // positions 0, 1
    llama_kv_cache_seq_add(c, 0, 0, -1, INT32_MAX);               // 0 -> INT32_MAX; 1 would pass it: dropped
    EXPECT_EQ(llama_get_kv_cache_used_cells(c), 1);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(c, 0), INT32_MAX);
    // A cell at INT32_MAX lies outside every range [p0, p1) (p1 < 0 stands for INT32_MAX, as in llama.cpp):
    // further shifts leave it where it is.
    llama_kv_cache_seq_add(c, 0, 0, -1, INT32_MAX);
    llama_kv_cache_seq_add(c, 0, 0, -1, INT32_MIN);
    EXPECT_EQ(llama_get_kv_cache_used_cells(c), 1);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(c, 0), INT32_MAX);
    llama_kv_cache_clear(c);

    ASSERT_EQ(llama_decode(c, llama_batch_get_one(toks, 2)), 0);  // positions 0, 1 again
    llama_kv_cache_seq_add(c, 0, 0, -1, INT32_MAX - 2);           // INT32_MAX - 2, INT32_MAX - 1: both fit
    EXPECT_EQ(llama_get_kv_cache_used_cells(c), 2);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(c, 0), INT32_MAX - 1);
    llama_kv_cache_seq_add(c, 0, 0, -1, INT32_MIN + 2);  // -1 (dropped) and 0
    EXPECT_EQ(llama_get_kv_cache_used_cells(c), 1);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(c, 0), 0);
    llama_kv_cache_seq_add(c, 0, 0, -1, INT32_MIN);  // below 0: dropped
    EXPECT_EQ(llama_get_kv_cache_used_cells(c), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(c, 0), -1);

    ASSERT_EQ(llama_decode(c, llama_batch_get_one(toks, 2)), 0);
    llama_kv_cache_seq_div(c, 0, 0, -1, 0);  // division by zero is refused: positions stay 0, 1
    EXPECT_EQ(llama_kv_cache_seq_pos_max(c, 0), 1);
    EXPECT_EQ(llama_get_kv_cache_used_cells(c), 2);
    // The shifted keys are re-rotated by the accumulated deltas on the next decode, which must stay finite.
    llama_kv_cache_seq_add(c, 0, 0, -1, INT32_MAX - 2);
    llama_kv_cache_seq_add(c, 0, 0, -1, -(INT32_MAX - 2));
    llama_token t = 301;
    ASSERT_EQ(llama_decode(c, llama_batch_get_one(&t, 1)), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(c, 0), 2);
    const float *l = llama_get_logits_ith(c, -1);
    ASSERT_NE(l, nullptr);
    for (int32_t i = 0; i < llama_vocab_n_tokens(llama_model_get_vocab(stories_c())); ++i)
        ASSERT_TRUE(std::isfinite(l[i])) << i;
    llama_free(c);
}

}  // namespace
}  // namespace lctx::context_hostile_test
