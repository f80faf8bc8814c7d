// Save, restore into a fresh context, continue: the same tokens as without the round trip. Covers the
// whole-context state (memory and files), per-sequence state moved between sequences, restore into a
// fragmented cache, and empty sequences.
#include <gtest/gtest.h>

#include <cstdio>

#include "capi/capi_test_util.h"
#include "state/state_layout.h"

namespace state_roundtrip_test {
using namespace capi_test;

namespace {

std::string temp_path(const char *name) {
    return ::testing::TempDir() + "lctx_state_" + name;
}

class StateRoundTrip : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_NE(model(), nullptr); }
};

TEST_F(StateRoundTrip, SizeIsExactAndBufferTooSmallIsRefused) {
    quiet_log();
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    fixture_run(ctx);
    const size_t n = llama_state_get_size(ctx);
    ASSERT_GT(n, 0u);
    std::vector<uint8_t> buf(n + 16, 0xAB);
    EXPECT_EQ(llama_state_get_data(ctx, buf.data(), buf.size()), n);
    EXPECT_EQ(buf[n], 0xAB);  // nothing written past the reported size
    std::vector<uint8_t> small(n - 1);
    EXPECT_EQ(llama_state_get_data(ctx, small.data(), small.size()), 0u);
    // The layout parses to exactly n bytes.
    EXPECT_EQ(state_test::parse_layout(buf.data(), n, false).end, n);
    llama_free(ctx);
    llama_log_set(nullptr, nullptr);
}

TEST_F(StateRoundTrip, MemoryRoundTripContinuesIdentically) {
    llama_context *a = make_ctx();
    ASSERT_NE(a, nullptr);
    fixture_run(a);
    const std::vector<uint8_t> saved = state_bytes(a);
    const std::vector<float> last(llama_get_logits_ith(a, -1), llama_get_logits_ith(a, -1) + 512);
    const std::vector<llama_token> expect = greedy(a, 20, 0, 12);

    llama_context *b = make_ctx();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(llama_state_set_data(b, saved.data(), saved.size()), saved.size());
    const float *restored = llama_get_logits_ith(b, -1);
    ASSERT_NE(restored, nullptr);
    EXPECT_EQ(std::vector<float>(restored, restored + 512), last);
    EXPECT_EQ(state_bytes(b), saved);  // restoring then saving reproduces the bytes
    EXPECT_EQ(greedy(b, 20, 0, 12), expect);
    llama_free(a);
    llama_free(b);
}

TEST_F(StateRoundTrip, SessionFileRoundTripContinuesIdentically) {
    llama_context *a = make_ctx();
    ASSERT_NE(a, nullptr);
    const std::vector<llama_token> tokens = fixture_run(a);
    const std::string path = temp_path("roundtrip.bin");
    ASSERT_TRUE(llama_state_save_file(a, path.c_str(), tokens.data(), tokens.size()));
    const std::vector<llama_token> expect = greedy(a, 20, 0, 10);

    llama_context *b = make_ctx();
    ASSERT_NE(b, nullptr);
    std::vector<llama_token> got(tokens.size());
    size_t n = 0;
    ASSERT_TRUE(llama_state_load_file(b, path.c_str(), got.data(), got.size(), &n));
    EXPECT_EQ(n, tokens.size());
    EXPECT_EQ(got, tokens);
    EXPECT_EQ(greedy(b, 20, 0, 10), expect);
    std::remove(path.c_str());
    llama_free(a);
    llama_free(b);
}

TEST_F(StateRoundTrip, SequenceMovedFromZeroToOneContinuesIdentically) {
    CtxOptions o;
    o.n_seq_max = 2;
    llama_context *a = make_ctx(o);
    ASSERT_NE(a, nullptr);
    fixture_run(a, 0);
    const std::vector<uint8_t> seq = seq_state_bytes(a, 0);
    const std::vector<uint8_t> empty = seq_state_bytes(a, 1);  // an empty sequence has a valid layout too
    EXPECT_EQ(state_test::parse_layout(empty.data(), empty.size(), true).end, empty.size());
    const llama_token next = argmax(llama_get_logits_ith(a, -1));
    ASSERT_EQ(decode_seq(a, {next}, 20, 0), 0);
    const std::vector<llama_token> expect = greedy(a, 21, 0, 10);

    llama_context *b = make_ctx(o);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(llama_state_seq_set_data(b, seq.data(), seq.size(), 1), seq.size());
    EXPECT_EQ(llama_kv_cache_seq_pos_max(b, 1), 19);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(b, 0), -1);
    ASSERT_EQ(decode_seq(b, {next}, 20, 1), 0);
    EXPECT_EQ(greedy(b, 21, 1, 10), expect);
    llama_free(a);
    llama_free(b);
}

TEST_F(StateRoundTrip, SequenceSeqFileRoundTrip) {
    CtxOptions o;
    o.n_seq_max = 2;
    llama_context *a = make_ctx(o);
    ASSERT_NE(a, nullptr);
    const std::vector<llama_token> tokens = fixture_run(a, 1);
    const std::string path = temp_path("seq.bin");
    const size_t written = llama_state_seq_save_file(a, path.c_str(), 1, tokens.data(), tokens.size());
    ASSERT_GT(written, 0u);

    llama_context *b = make_ctx(o);
    ASSERT_NE(b, nullptr);
    std::vector<llama_token> got(32);
    size_t n = 0;
    EXPECT_EQ(llama_state_seq_load_file(b, path.c_str(), 0, got.data(), got.size(), &n), written);
    got.resize(n);
    EXPECT_EQ(got, tokens);
    EXPECT_EQ(seq_state_bytes(b, 0), seq_state_bytes(a, 1));
    std::remove(path.c_str());
    llama_free(a);
    llama_free(b);
}

// The restored sequence needs 20 cells, but the largest hole is 10: cells are placed wherever free.
TEST_F(StateRoundTrip, SequenceRestoresIntoFragmentedCache) {
    CtxOptions o;
    o.n_ctx = 64;
    o.n_seq_max = 3;
    llama_context *ref = make_ctx(o);
    ASSERT_NE(ref, nullptr);
    fixture_run(ref, 0);
    const std::vector<uint8_t> seq = seq_state_bytes(ref, 0);
    const llama_token next = argmax(llama_get_logits_ith(ref, -1));
    ASSERT_EQ(decode_seq(ref, {next}, 20, 0), 0);
    const std::vector<llama_token> expect = greedy(ref, 21, 0, 8);

    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    // Sequence 2 fills 54 cells, then four holes of 5 cells open inside it: 30 free cells, none 20 in a row.
    std::vector<llama_token> filler;
    for (int i = 0; i < 54; ++i) filler.push_back(300 + i % 50);
    ASSERT_EQ(decode_seq(ctx, filler, 0, 2), 0);
    for (int h = 0; h < 4; ++h) ASSERT_TRUE(llama_kv_cache_seq_rm(ctx, 2, 5 + 12 * h, 10 + 12 * h));
    ASSERT_EQ(llama_get_kv_cache_used_cells(ctx), 34);
    llama_kv_cache_view view = llama_kv_cache_view_init(ctx, 3);
    llama_kv_cache_view_update(ctx, &view);
    EXPECT_LT(view.max_contiguous, 20);
    llama_kv_cache_view_free(&view);

    const std::vector<uint8_t> other_before = seq_state_bytes(ctx, 2);
    EXPECT_EQ(llama_state_seq_set_data(ctx, seq.data(), seq.size(), 1), seq.size());
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 54);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 1), 19);
    EXPECT_EQ(seq_state_bytes(ctx, 2), other_before);  // sequence 2 untouched
    EXPECT_EQ(seq_state_bytes(ctx, 1), seq);           // the same cells and K/V, saved back in position order
    ASSERT_EQ(decode_seq(ctx, {next}, 20, 1), 0);
    EXPECT_EQ(greedy(ctx, 21, 1, 8), expect);
    llama_free(ref);
    llama_free(ctx);
}

TEST_F(StateRoundTrip, SequenceRestoreRefusedWhenCellsRunOut) {
    quiet_log();
    CtxOptions o;
    o.n_ctx = 32;
    o.n_seq_max = 2;
    llama_context *ref = make_ctx(o);
    ASSERT_NE(ref, nullptr);
    fixture_run(ref, 0);  // 20 cells
    const std::vector<uint8_t> seq = seq_state_bytes(ref, 0);

    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> filler(20, 300);
    ASSERT_EQ(decode_seq(ctx, filler, 0, 0), 0);  // 12 cells left: too few for 20
    const std::vector<uint8_t> before = state_bytes(ctx);
    EXPECT_EQ(llama_state_seq_set_data(ctx, seq.data(), seq.size(), 1), 0u);
    EXPECT_EQ(state_bytes(ctx), before);
    // Restoring over sequence 0 itself frees its cells first, so it fits.
    EXPECT_EQ(llama_state_seq_set_data(ctx, seq.data(), seq.size(), 0), seq.size());
    EXPECT_EQ(seq_state_bytes(ctx, 0), seq);
    llama_free(ref);
    llama_free(ctx);
    llama_log_set(nullptr, nullptr);
}

TEST_F(StateRoundTrip, EmptySequenceSavesAndRestores) {
    CtxOptions o;
    o.n_seq_max = 2;
    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    fixture_run(ctx, 0);
    const std::vector<uint8_t> empty = seq_state_bytes(ctx, 1);
    ASSERT_GT(empty.size(), 0u);
    EXPECT_EQ(state_test::peek<uint32_t>(empty, 0), 0u);  // cell_count
    // Restoring the empty sequence into sequence 0 empties it.
    EXPECT_EQ(llama_state_seq_set_data(ctx, empty.data(), empty.size(), 0), empty.size());
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), -1);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 0);
    llama_free(ctx);
}

TEST_F(StateRoundTrip, EmptyContextRoundTrips) {
    llama_context *a = make_ctx();
    ASSERT_NE(a, nullptr);
    const std::vector<uint8_t> saved = state_bytes(a);
    llama_context *b = make_ctx();
    ASSERT_NE(b, nullptr);
    fixture_run(b);
    EXPECT_EQ(llama_state_set_data(b, saved.data(), saved.size()), saved.size());
    EXPECT_EQ(llama_get_kv_cache_used_cells(b), 0);
    EXPECT_EQ(state_bytes(b), saved);
    llama_free(a);
    llama_free(b);
}

TEST_F(StateRoundTrip, PendingShiftIsAppliedBeforeSaving) {
    // Shift the cached positions by +3 and save: the restored context must continue exactly like the
    // original continuing after the shift.
    llama_context *a = make_ctx();
    ASSERT_NE(a, nullptr);
    fixture_run(a);
    llama_kv_cache_seq_add(a, 0, 0, -1, 3);
    const std::vector<uint8_t> saved = state_bytes(a);
    const llama_token t = 337;
    ASSERT_EQ(decode_seq(a, {t}, 23, 0), 0);
    const std::vector<llama_token> expect = greedy(a, 24, 0, 6);

    llama_context *b = make_ctx();
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(llama_state_set_data(b, saved.data(), saved.size()), saved.size());
    EXPECT_EQ(llama_kv_cache_seq_pos_max(b, 0), 22);
    ASSERT_EQ(decode_seq(b, {t}, 23, 0), 0);
    EXPECT_EQ(greedy(b, 24, 0, 6), expect);
    llama_free(a);
    llama_free(b);
}

}  // namespace
}  // namespace state_roundtrip_test
