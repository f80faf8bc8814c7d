// Hostile state: state saved by a context of another model (other layer count, other K/V width), cut at
// every length, sequence ids out of range, state whose positions leave no next position, paths that are not
// state files. Each is refused (0 / false) with the context byte-for-byte unchanged, or accepted with a
// context that stays consistent. (tests/state/state_corrupt_test.cpp covers field-by-field corruption,
// other KV types and foreign architectures.)
#include <gtest/gtest.h>

#include <climits>

#include "capi/capi_test_util.h"
#include "hostile/hostile_util.h"
#include "llama.h"

namespace state_hostile_test {
using namespace capi_test;

namespace {

class HostileState : public ::testing::Test {
  protected:
    void SetUp() override {
        quiet_log();
        ASSERT_NE(model(), nullptr);
        CtxOptions o;
        o.n_ctx = 64;
        o.n_seq_max = 2;
        ctx_ = make_ctx(o);
        ASSERT_NE(ctx_, nullptr);
        ASSERT_EQ(decode_seq(ctx_, {1, 403, 407, 261}, 0, 0), 0);
        ASSERT_EQ(decode_seq(ctx_, {1, 298}, 0, 1), 0);
        before_ = state_bytes(ctx_);
    }
    void TearDown() override { llama_free(ctx_); }

    void expect_unchanged(const std::string &what) { EXPECT_EQ(state_bytes(ctx_), before_) << what; }

    llama_context *ctx_ = nullptr;
    std::vector<uint8_t> before_;
};

// Saves the whole state and sequence 0 of a context on `model_bytes` (decoded a few tokens).
struct ForeignState {
    std::vector<uint8_t> all, seq;
};
ForeignState foreign_state(const std::vector<uint8_t> &model_bytes, const std::string &tag) {
    hostile::TempFile tmp(tag);
    llama_model *m = llama_model_load_from_file(tmp.write(model_bytes).c_str(), llama_model_default_params());
    EXPECT_NE(m, nullptr) << tag;
    if (!m) return {};
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 64;
    p.n_batch = 64;
    p.n_ubatch = 8;
    p.n_seq_max = 2;
    llama_context *c = llama_init_from_model(m, p);
    EXPECT_NE(c, nullptr) << tag;
    ForeignState s;
    if (c) {
        EXPECT_EQ(decode_seq(c, {1, 403, 407}, 0, 0), 0);
        s.all = state_bytes(c);
        s.seq = seq_state_bytes(c, 0);
        llama_free(c);
    }
    llama_model_free(m);
    return s;
}

// The stories260K file with only the first n layers.
std::vector<uint8_t> stories_layers(uint32_t n) {
    return hostile::stories_with([&](lctx::gguf::Writer &w) { w.set_u32("llama.block_count", n); },
                                 [&](const std::string &name) {
                                     if (name.rfind("blk.", 0) != 0) return true;
                                     return std::stoul(name.substr(4)) < n;
                                 });
}

TEST_F(HostileState, StateOfAModelWithOtherLayersIsRefused) {
    const ForeignState s = foreign_state(stories_layers(3), "3-layers.gguf");
    ASSERT_FALSE(s.all.empty());
    EXPECT_EQ(llama_state_set_data(ctx_, s.all.data(), s.all.size()), 0u);
    expect_unchanged("whole state, 3 layers");
    EXPECT_EQ(llama_state_seq_set_data(ctx_, s.seq.data(), s.seq.size(), 1), 0u);
    expect_unchanged("sequence state, 3 layers");
}

// Same layer count, but K/V rows of another width (8 KV heads instead of 4) and other weights: the row
// sizes differ, so the state is refused.
TEST_F(HostileState, StateOfAModelWithOtherKvWidthIsRefused) {
    auto f = lctx::gguf::File::open(hostile::stories_path());
    lctx::gguf::Writer w;
    for (const lctx::gguf::KeyValue &kv : f->metadata()) w.set(kv.key, kv.value);
    w.set_u32("llama.attention.head_count_kv", 8);
    for (const lctx::gguf::TensorInfo &t : f->tensors()) {
        const bool kv_proj = t.name.find("attn_k.weight") != std::string::npos ||
                             t.name.find("attn_v.weight") != std::string::npos;
        if (!kv_proj) {
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
            continue;
        }
        // Twice the rows: the original ones repeated.
        std::vector<uint8_t> data(t.nbytes * 2);
        std::memcpy(data.data(), f->tensor_data(t), t.nbytes);
        std::memcpy(data.data() + t.nbytes, f->tensor_data(t), t.nbytes);
        w.add_tensor(t.name, t.type, {t.ne[0], t.ne[1] * 2}, data.data(), data.size());
    }
    const ForeignState s = foreign_state(w.to_bytes(), "kv8.gguf");
    ASSERT_FALSE(s.all.empty());
    EXPECT_EQ(llama_state_set_data(ctx_, s.all.data(), s.all.size()), 0u);
    expect_unchanged("whole state, 8 KV heads");
    EXPECT_EQ(llama_state_seq_set_data(ctx_, s.seq.data(), s.seq.size(), 0), 0u);
    expect_unchanged("sequence state, 8 KV heads");
}

// Every length short of the whole, for both layouts.
TEST_F(HostileState, StateCutAtEveryLengthIsRefused) {
    const std::vector<uint8_t> all = before_;
    const std::vector<uint8_t> seq = seq_state_bytes(ctx_, 0);
    for (size_t len = 0; len < all.size(); ++len) {
        const std::vector<uint8_t> cut(all.begin(), all.begin() + static_cast<ptrdiff_t>(len));
        ASSERT_EQ(llama_state_set_data(ctx_, cut.data(), cut.size()), 0u) << len;
    }
    expect_unchanged("whole state cut");
    for (size_t len = 0; len < seq.size(); ++len) {
        const std::vector<uint8_t> cut(seq.begin(), seq.begin() + static_cast<ptrdiff_t>(len));
        ASSERT_EQ(llama_state_seq_set_data(ctx_, cut.data(), cut.size(), 1), 0u) << len;
    }
    expect_unchanged("sequence state cut");
}

TEST_F(HostileState, SequenceIdsOutOfRangeAreRefused) {
    const std::vector<uint8_t> seq = seq_state_bytes(ctx_, 0);
    for (llama_seq_id s : {-1, LCTX_MAX_SEQ, INT32_MAX, INT32_MIN}) {
        EXPECT_EQ(llama_state_seq_set_data(ctx_, seq.data(), seq.size(), s), 0u) << s;
        EXPECT_EQ(llama_state_seq_get_size(ctx_, s), 0u) << s;
        std::vector<uint8_t> buf(seq.size() + 64);
        EXPECT_EQ(llama_state_seq_get_data(ctx_, buf.data(), buf.size(), s), 0u) << s;
    }
    expect_unchanged("sequence ids out of range");
}

// A state whose sequence 0 ends at position INT32_MAX loads (positions are data), but then asking for
// the next default position must be refused rather than wrap to a negative position.
TEST_F(HostileState, RestoredPositionAtInt32MaxHasNoNextPosition) {
    llama_kv_cache_clear(ctx_);
    ASSERT_EQ(decode_seq(ctx_, {1}, INT32_MAX, 0), 0);
    const std::vector<uint8_t> s = state_bytes(ctx_);
    llama_kv_cache_clear(ctx_);
    ASSERT_EQ(llama_state_set_data(ctx_, s.data(), s.size()), s.size());
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx_, 0), INT32_MAX);
    llama_token t = 300;
    EXPECT_LT(llama_decode(ctx_, llama_batch_get_one(&t, 1)), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx_, 0), INT32_MAX);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx_), 1);
}

TEST_F(HostileState, PathsThatAreNotStateFilesAreRefused) {
    std::vector<llama_token> toks(64);
    size_t n = 0;
    const std::string model = hostile::stories_path();
    for (const std::string &path :
         {std::string("/nonexistent/session.bin"), std::string("/tmp"), std::string("/dev/null"),
          std::string("/dev/zero") /* endless: must be refused before reading */, model}) {
        EXPECT_FALSE(llama_state_load_file(ctx_, path.c_str(), toks.data(), toks.size(), &n)) << path;
        EXPECT_EQ(llama_state_seq_load_file(ctx_, path.c_str(), 0, toks.data(), toks.size(), &n), 0u) << path;
    }
    expect_unchanged("bad paths");
}

}  // namespace
}  // namespace state_hostile_test
