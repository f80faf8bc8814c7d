// Pooling over a batch that a decoder model runs in several micro-batches: lctx pools every token of each
// sequence in the batch, so the pooled vector is the one a single micro-batch gives. b4748 kept the vector
// of a sequence's first micro-batch only (a deliberate difference, listed in include/llama.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "capi/capi_test_util.h"
#include "llama.h"

namespace capi_pooling_split_test {
namespace {

// Two sequences of 10 tokens back to back; every token an output (pooling reads them all).
llama_batch two_sequences() {
    llama_batch b = llama_batch_init(20, 0, 1);
    for (int s = 0; s < 2; ++s)
        for (int i = 0; i < 10; ++i) {
            const int k = b.n_tokens++;
            b.token[k] = i == 0 ? 1 : 20 + (s * 53 + i * 29) % 480;
            b.pos[k] = i;
            b.n_seq_id[k] = 1;
            b.seq_id[k][0] = s;
            b.logits[k] = 1;
        }
    return b;
}

std::vector<float> pooled(llama_context *ctx, llama_seq_id seq) {
    const float *e = llama_get_embeddings_seq(ctx, seq);
    EXPECT_NE(e, nullptr) << "sequence " << seq;
    const int32_t n_embd = llama_model_n_embd(capi_test::model());
    return e ? std::vector<float>(e, e + n_embd) : std::vector<float>();
}

float max_diff(const std::vector<float> &a, const std::vector<float> &b) {
    float d = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

TEST(CapiPoolingSplit, PooledVectorIsTheSingleMicroBatchOne) {
    capi_test::quiet_log();
    for (enum llama_pooling_type pooling : {LLAMA_POOLING_TYPE_MEAN, LLAMA_POOLING_TYPE_LAST}) {
        capi_test::CtxOptions split;
        split.n_ubatch = 4;  // 20 tokens: five micro-batches, each sequence over three of them
        split.n_seq_max = 2;
        split.embeddings = true;
        split.pooling = pooling;
        capi_test::CtxOptions whole = split;
        whole.n_ubatch = 64;
        llama_context *a = capi_test::make_ctx(split), *b = capi_test::make_ctx(whole);
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        llama_batch batch = two_sequences();
        ASSERT_EQ(llama_decode(a, batch), 0);
        ASSERT_EQ(llama_decode(b, batch), 0);
        for (llama_seq_id s = 0; s < 2; ++s) {
            const std::vector<float> got = pooled(a, s), want = pooled(b, s);
            ASSERT_EQ(got.size(), want.size());
            // Rows of 4 and of 20 tokens take other matmul tiles: measured 1.6e-5 apart (the context tests'
            // pooling bound, 1e-4); the first micro-batch's pool (b4748's) is more than 1e-3 away (below).
            EXPECT_LE(max_diff(got, want), 1e-4f) << "pooling " << pooling << " sequence " << s;
        }

        // What b4748 returns, the pool of the first micro-batch of sequence 0 (its tokens 0..3) alone, is
        // another vector.
        llama_batch first = llama_batch_init(4, 0, 1);
        for (int i = 0; i < 4; ++i) {
            first.token[i] = batch.token[i];
            first.pos[i] = i;
            first.n_seq_id[i] = 1;
            first.seq_id[i][0] = 0;
            first.logits[i] = 1;
        }
        first.n_tokens = 4;
        llama_kv_cache_clear(b);
        ASSERT_EQ(llama_decode(b, first), 0);
        EXPECT_GT(max_diff(pooled(b, 0), pooled(a, 0)), 1e-3f);
        llama_batch_free(first);
        llama_batch_free(batch);
        llama_free(a);
        llama_free(b);
    }
}

}  // namespace
}  // namespace capi_pooling_split_test
