// State files written by llama.cpp b4748 (fixtures/state/README.md) load into lctx and continue with the
// tokens llama.cpp produced; lctx's own session file of the same run has llama.cpp's layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "capi/capi_test_util.h"
#include "state/state_layout.h"

namespace state_fixture_test {
using namespace capi_test;
using namespace state_test;

namespace {

std::vector<uint8_t> read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

float half_to_float(uint16_t h) {
    const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = std::ldexp(static_cast<float>(mant), -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

std::string temp_path(const char *name) {
    return ::testing::TempDir() + "lctx_state_" + name;
}

class StateFixture : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_NE(model(), nullptr); }
};

TEST_F(StateFixture, PromptTokensMatchTheFixtureRun) {
    const std::vector<llama_token> prompt = tokenize("Once upon a time, there was a little girl named Lily.");
    ASSERT_EQ(prompt.size(), 16u);
    EXPECT_EQ(prompt, std::vector<llama_token>(fixture_tokens().begin(), fixture_tokens().begin() + 16));
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(fixture_run(ctx), fixture_tokens());
    llama_free(ctx);
}

TEST_F(StateFixture, SessionFileFromLlamaCppContinuesLikeLlamaCpp) {
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> tokens(64, -1);
    size_t n_tokens = 0;
    ASSERT_TRUE(llama_state_load_file(ctx, state_fixture("session.bin").c_str(), tokens.data(), tokens.size(),
                                      &n_tokens));
    tokens.resize(n_tokens);
    EXPECT_EQ(tokens, fixture_tokens());
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 20);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), 19);
    // The first token comes from the restored logits, without another decode.
    EXPECT_EQ(greedy(ctx, 20, 0, 16), fixture_continuation());
    llama_free(ctx);
}

TEST_F(StateFixture, SessionFileRefusesTooSmallTokenCapacity) {
    quiet_log();
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    const std::vector<uint8_t> before = state_bytes(ctx);
    std::vector<llama_token> tokens(19);
    size_t n = 0;
    EXPECT_FALSE(
        llama_state_load_file(ctx, state_fixture("session.bin").c_str(), tokens.data(), tokens.size(), &n));
    EXPECT_EQ(state_bytes(ctx), before);
    llama_free(ctx);
    llama_log_set(nullptr, nullptr);
}

TEST_F(StateFixture, SequenceFileFromLlamaCppLoadsIntoAnotherSequence) {
    CtxOptions o;
    o.n_seq_max = 2;
    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> tokens(64, -1);
    size_t n_tokens = 0;
    const std::string path = state_fixture("seq0.bin");
    const size_t n_read =
        llama_state_seq_load_file(ctx, path.c_str(), 1, tokens.data(), tokens.size(), &n_tokens);
    EXPECT_EQ(n_read, read_file(path).size());
    tokens.resize(n_tokens);
    EXPECT_EQ(tokens, fixture_tokens());
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 1), 19);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), -1);

    // The sequence file holds no logits: decode 337 at position 20 on sequence 1, then continue greedily.
    std::vector<llama_token> out = {fixture_continuation()[0]};
    ASSERT_EQ(decode_seq(ctx, {out[0]}, 20, 1), 0);
    const std::vector<llama_token> rest = greedy(ctx, 21, 1, 15);
    out.insert(out.end(), rest.begin(), rest.end());
    EXPECT_EQ(out, fixture_continuation());
    llama_free(ctx);
}

// lctx's session file of the same run has llama.cpp's structure byte for byte; the numbers (logits, K, V)
// agree within the rounding of a different kernel implementation.
TEST_F(StateFixture, OwnSessionFileMatchesLlamaCppLayout) {
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    const std::vector<llama_token> tokens = fixture_run(ctx);
    const std::string path = temp_path("own_session.bin");
    ASSERT_TRUE(llama_state_save_file(ctx, path.c_str(), tokens.data(), tokens.size()));
    const std::vector<uint8_t> ours = read_file(path);
    const std::vector<uint8_t> ref = read_file(state_fixture("session.bin"));
    std::remove(path.c_str());
    ASSERT_EQ(ours.size(), ref.size());

    // Header: magic, version, token count and tokens.
    const size_t head = 12 + 4 * tokens.size();
    EXPECT_TRUE(std::equal(ours.begin(), ours.begin() + head, ref.begin()));
    const Layout lo = parse_layout(ours.data() + head, ours.size() - head, false);
    const Layout lr = parse_layout(ref.data() + head, ref.size() - head, false);
    EXPECT_EQ(lo.end, ours.size() - head);
    EXPECT_EQ(lo.arch, lr.arch);
    EXPECT_EQ(lo.n_outputs, lr.n_outputs);
    EXPECT_EQ(lo.n_logits, lr.n_logits);
    EXPECT_EQ(lo.n_embd, lr.n_embd);
    EXPECT_EQ(lo.cell_count, lr.cell_count);
    EXPECT_EQ(lo.v_trans, lr.v_trans);
    EXPECT_EQ(lo.n_layer, lr.n_layer);
    EXPECT_EQ(lo.k_row, lr.k_row);

    const uint8_t *o = ours.data() + head;
    const uint8_t *r = ref.data() + head;
    // Everything but the float payloads must be identical: compare the metadata ranges exactly.
    auto same = [&](size_t b, size_t e, const char *what) {
        EXPECT_EQ(std::memcmp(o + b, r + b, e - b), 0) << what;
    };
    same(0, lo.logits_off, "arch and output map");
    same(lo.embd_count_off, lo.v_trans_off, "embeddings count and cells");
    same(lo.v_trans_off, lo.k_data_off[0], "v_trans, n_layer, first K header");
    for (uint32_t il = 0; il < lo.n_layer; ++il) {
        same(lo.k_type_off[il], lo.k_data_off[il], "K header");
        same(lo.v_type_off[il], lo.v_data_off[il], "V header");
    }

    // Logits: the tolerance the golden-logits tests use for an f16 KV cache against llama.cpp (1e-2 abs,
    // fixtures/golden/FORMAT.md "Tolerance observed": a cached key or value may round to the neighbouring
    // half).
    double max_logit_diff = 0;
    for (uint64_t i = 0; i < lo.n_logits; ++i) {
        float a, b;
        std::memcpy(&a, o + lo.logits_off + 4 * i, 4);
        std::memcpy(&b, r + lo.logits_off + 4 * i, 4);
        max_logit_diff = std::max(max_logit_diff, static_cast<double>(std::fabs(a - b)));
    }
    EXPECT_LT(max_logit_diff, 1e-2) << "logits differ from llama.cpp's";

    // K and V: f16; a different summation order may flip the last bits of an element.
    double max_kv_diff = 0;
    size_t n_diff = 0, n_elems = 0;
    auto cmp_f16 = [&](size_t off, size_t bytes) {
        for (size_t i = 0; i < bytes; i += 2) {
            uint16_t a, b;
            std::memcpy(&a, o + off + i, 2);
            std::memcpy(&b, r + off + i, 2);
            n_elems++;
            if (a == b) continue;
            n_diff++;
            const double fa = half_to_float(a), fb = half_to_float(b);
            max_kv_diff = std::max(max_kv_diff, std::fabs(fa - fb) / std::max(1.0, std::fabs(fb)));
        }
    };
    for (uint32_t il = 0; il < lo.n_layer; ++il) {
        cmp_f16(lo.k_data_off[il], lo.k_row * lo.cell_count);
        cmp_f16(lo.v_data_off[il], lo.v_data_bytes[il]);
    }
    // One f16 ulp is 2^-10 relative; allow two.
    EXPECT_LE(max_kv_diff, 2.0 / 1024) << n_diff << " of " << n_elems << " K/V elements differ";
    std::printf("[ info ] max |logit diff| %.3g; %zu of %zu K/V f16 elements differ (max rel %.3g)\n",
                max_logit_diff, n_diff, n_elems, max_kv_diff);
    llama_free(ctx);
}

}  // namespace
}  // namespace state_fixture_test
