// T5 through the context, as llama.cpp's harness ran it (fixtures/golden-t5/FORMAT-T5.md): the prompt
// tokenized with </s>, encoded (Context::encode), its rows read back as embeddings; the decoder tokens
// decoded in one or two calls, every logit compared; greedy generation from the decoder start token, token
// for token.
#include <gtest/gtest.h>

#include <cmath>

#include "golden_runner.h"
#include "vocab/vocab.h"

namespace lctx::t5_golden_test {
namespace {

std::string t5_dir() {
    return testing::fixtures_dir() + "/golden-t5/";
}

float max_abs_diff(const std::vector<float> &got, const std::vector<float> &want) {
    EXPECT_EQ(got.size(), want.size());
    float d = 0.0f;
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
        if (std::isnan(got[i])) return INFINITY;
        d = std::max(d, std::fabs(got[i] - want[i]));
    }
    return d;
}

// Tokenizes an encode step's text as the harness did (add_special: </s> appended), checks the ids against
// the recorded ones, encodes them as sequence seq_id and returns the encoder rows [n][n_embd].
std::vector<float> encode_step(const Model &m, Context &ctx, const nlohmann::json &step, const char *text_key,
                               const char *tokens_key) {
    std::vector<int32_t> tokens = m.vocab().tokenize(step[text_key].get<std::string>(), true, false);
    EXPECT_EQ(tokens, step[tokens_key].get<std::vector<int32_t>>()) << "tokenizer";
    const auto n = static_cast<int32_t>(tokens.size());
    BatchBuilder bb;
    for (int32_t i = 0; i < n; ++i) bb.add(tokens[i], i, step["seq_id"].get<int32_t>(), true);
    EXPECT_EQ(ctx.encode(bb.view()), DecodeStatus::Ok);
    std::vector<float> rows;
    for (int32_t i = 0; i < n; ++i) {
        const float *e = ctx.embeddings_ith(i);
        if (!e) {
            ADD_FAILURE() << "no encoder row " << i;
            return rows;
        }
        rows.insert(rows.end(), e, e + m.hparams().n_embd);
    }
    return rows;
}

struct Case {
    const char *name;
    float logits_tol;
    const char *why;
};

// The tolerances of t5_model_test.cpp (FORMAT-T5.md's for an engine with llama.cpp's CPU roundings); the
// context adds nothing but the cells, masks and positions it hands the same passes.
const Case kCases[] = {
    {"t5_encdec_kvf16", 2e-2f, "f16 self-attention cache"},
    {"t5_encdec_kvf32", 1e-2f, "f32 cache"},
    {"t5_encdec_2step_kvf16", 2e-2f, "f16 cache, the decoder fed in two calls"},
};

class T5Golden : public ::testing::TestWithParam<Case> {};

TEST_P(T5Golden, EncodeThenDecodeMatchesLlamaCpp) {
    const Case &tc = GetParam();
    const nlohmann::json c = testing::read_json(t5_dir() + "cases/" + tc.name + ".json");
    auto model = Model::load(t5_dir() + c["model"].get<std::string>());
    Context ctx(*model, testing::context_params(c));
    ASSERT_TRUE(ctx.is_encoder_decoder());

    std::vector<float> enc, logits;
    for (const nlohmann::json &step : c["steps"]) {
        if (step["op"] == "encode") {
            const std::vector<float> rows = encode_step(*model, ctx, step, "text", "tokens");
            enc.insert(enc.end(), rows.begin(), rows.end());
            continue;
        }
        ASSERT_EQ(step["op"], "decode");
        const nlohmann::json &batch = step["batch"];
        const auto n = static_cast<int32_t>(batch.size());
        ASSERT_EQ(step["logits"], "all");  // every case asks for all logits
        BatchBuilder bb;
        for (int32_t i = 0; i < n; ++i) bb.add(batch[i][0], batch[i][1], batch[i][2], true);
        ASSERT_EQ(ctx.decode(bb.view()), DecodeStatus::Ok);
        for (int32_t i = 0; i < n; ++i) {
            const float *l = ctx.logits_ith(i);
            ASSERT_NE(l, nullptr);
            logits.insert(logits.end(), l, l + model->hparams().n_vocab);
        }
    }
    const float enc_diff =
        max_abs_diff(enc, testing::read_f32(t5_dir() + "cases/" + c["encoder_out_file"].get<std::string>()));
    const float diff =
        max_abs_diff(logits, testing::read_f32(t5_dir() + "cases/" + c["data_file"].get<std::string>()));
    std::printf("[ %s ] encoder max |diff| = %.3g, logits max |diff| = %.3g (tolerance %.3g: %s)\n", tc.name,
                enc_diff, diff, tc.logits_tol, tc.why);
    EXPECT_LE(enc_diff, 5e-4f) << "encoder output";
    EXPECT_LE(diff, tc.logits_tol);
}

INSTANTIATE_TEST_SUITE_P(Cases, T5Golden, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                             return std::string(info.param.name);
                         });

// greedy_encdec: the stream must match token for token (its smallest top-1/top-2 gap is 0.198, far above the
// logits' tolerance).
TEST(T5Golden, GreedyStreamMatchesLlamaCpp) {
    const nlohmann::json c = testing::read_json(t5_dir() + "cases/t5_greedy.json");
    auto model = Model::load(t5_dir() + c["model"].get<std::string>());
    Context ctx(*model, testing::context_params(c));
    const nlohmann::json &step = c["steps"][0];
    ASSERT_EQ(step["op"], "greedy_encdec");
    const std::vector<float> enc = encode_step(*model, ctx, step, "prompt", "prompt_tokens");
    EXPECT_LE(
        max_abs_diff(enc, testing::read_f32(t5_dir() + "cases/" + c["encoder_out_file"].get<std::string>())),
        5e-4f);

    const int32_t start = step["decoder_start_token"];
    EXPECT_EQ(model->hparams().dec_start_token, start);
    const auto is_eog = [](const Model &m, int32_t t) { return m.vocab().is_eog(t); };
    std::vector<int32_t> got;
    int32_t tok = start, pos = 0;
    for (int i = 0; i < step["n_predict"].get<int>(); ++i) {
        Batch one;
        one.n_tokens = 1;
        one.token = &tok;
        one.pos = &pos;
        ASSERT_EQ(ctx.decode(one), DecodeStatus::Ok);
        const float *l = ctx.logits_ith(-1);
        int32_t best = 0;  // ties: the lowest id
        for (int32_t t = 1; t < static_cast<int32_t>(model->hparams().n_vocab); ++t)
            if (l[t] > l[best]) best = t;
        got.push_back(best);
        if (is_eog(*model, best)) break;
        tok = best;
        ++pos;
    }
    EXPECT_EQ(got, step["generated_tokens"].get<std::vector<int32_t>>());
    EXPECT_EQ(model->vocab().detokenize(got, false, false), step["generated_text"].get<std::string>());
}

// Two sequences in one encode and one decode: each decoder token cross-attends only to its own sequence's
// encoder rows and sees only its own sequence's cells, so each gives what it gives alone (the kvf32 case's
// logits; the greedy case's next tokens).
TEST(T5Golden, TwoSequencesInOneBatchEachMatchTheirOwnCase) {
    const nlohmann::json a = testing::read_json(t5_dir() + "cases/t5_encdec_kvf32.json");
    const nlohmann::json g = testing::read_json(t5_dir() + "cases/t5_greedy.json");
    auto model = Model::load(t5_dir() + "models/t5.gguf");
    const HParams &hp = model->hparams();
    ContextParams p = testing::context_params(a);
    p.n_seq_max = 2;
    Context ctx(*model, p);

    const std::vector<int32_t> enc_a = a["steps"][0]["tokens"], enc_b = g["steps"][0]["prompt_tokens"];
    const std::vector<int32_t> gen = g["steps"][0]["generated_tokens"];
    // One batch: entries (token, pos, seq).
    struct Entry {
        int32_t tok, pos, seq;
    };
    auto run = [&](const std::vector<Entry> &es, bool encode) {
        const auto n = static_cast<int32_t>(es.size());
        std::vector<int32_t> tok(n), pos(n), nseq(n, 1), sid(n);
        std::vector<int32_t *> sids(n);
        std::vector<int8_t> want(n, 1);
        for (int32_t i = 0; i < n; ++i) {
            tok[i] = es[i].tok;
            pos[i] = es[i].pos;
            sid[i] = es[i].seq;
            sids[i] = &sid[i];
        }
        Batch b;
        b.n_tokens = n;
        b.token = tok.data();
        b.pos = pos.data();
        b.n_seq_id = nseq.data();
        b.seq_id = sids.data();
        b.logits = want.data();
        return encode ? ctx.encode(b) : ctx.decode(b);
    };
    std::vector<Entry> enc;
    for (size_t i = 0; i < enc_a.size(); ++i) enc.push_back({enc_a[i], static_cast<int32_t>(i), 0});
    for (size_t i = 0; i < enc_b.size(); ++i) enc.push_back({enc_b[i], static_cast<int32_t>(i), 1});
    ASSERT_EQ(run(enc, true), DecodeStatus::Ok);
    std::vector<float> rows_a, rows_b;
    for (size_t i = 0; i < enc.size(); ++i) {
        const float *e = ctx.embeddings_ith(static_cast<int32_t>(i));
        ASSERT_NE(e, nullptr);
        (i < enc_a.size() ? rows_a : rows_b)
            .insert((i < enc_a.size() ? rows_a : rows_b).end(), e, e + hp.n_embd);
    }
    EXPECT_LE(max_abs_diff(rows_a,
                           testing::read_f32(t5_dir() + "cases/" + a["encoder_out_file"].get<std::string>())),
              5e-4f);
    EXPECT_LE(max_abs_diff(rows_b,
                           testing::read_f32(t5_dir() + "cases/" + g["encoder_out_file"].get<std::string>())),
              5e-4f);

    // Decoder: sequence 1's start token and first three greedy tokens interleaved with sequence 0's eight.
    const nlohmann::json &batch = a["steps"][1]["batch"];
    std::vector<Entry> dec;
    std::vector<int32_t> b_rows;
    for (size_t i = 0; i < batch.size(); ++i) {
        dec.push_back({batch[i][0], batch[i][1], 0});
        if (i < 4) {
            b_rows.push_back(static_cast<int32_t>(dec.size()));
            dec.push_back({i == 0 ? hp.dec_start_token : gen[i - 1], static_cast<int32_t>(i), 1});
        }
    }
    ASSERT_EQ(run(dec, false), DecodeStatus::Ok);
    std::vector<float> logits_a;
    for (size_t i = 0; i < dec.size(); ++i) {
        const float *l = ctx.logits_ith(static_cast<int32_t>(i));
        ASSERT_NE(l, nullptr);
        if (dec[i].seq == 0) {
            logits_a.insert(logits_a.end(), l, l + hp.n_vocab);
            continue;
        }
        int32_t best = 0;
        for (int32_t t = 1; t < static_cast<int32_t>(hp.n_vocab); ++t)
            if (l[t] > l[best]) best = t;
        EXPECT_EQ(best, gen[static_cast<size_t>(dec[i].pos)]) << "sequence 1, position " << dec[i].pos;
    }
    EXPECT_LE(
        max_abs_diff(logits_a, testing::read_f32(t5_dir() + "cases/" + a["data_file"].get<std::string>())),
        1e-2f);
}

// The decoder's cross-attention K and V are projected once per encode and kept for the next steps: after a
// second encode (another text) the steps give the bits a fresh context gives for that text, not the first
// text's.
TEST(T5Golden, CrossAttentionCacheFollowsEachEncode) {
    auto model = Model::load(t5_dir() + "models/t5.gguf");
    ContextParams p;
    p.n_ctx = 64;
    const std::vector<int32_t> first = {13959, 1566, 12, 2968, 10, 37, 629, 19, 1627, 5, 1};
    const std::vector<int32_t> second = {1525, 10, 363, 19, 8, 1784, 1};
    const auto steps = [&](Context &ctx, const std::vector<int32_t> &enc) {
        ctx.kv().clear();
        BatchBuilder bb;
        for (size_t i = 0; i < enc.size(); ++i) bb.add(enc[i], static_cast<int32_t>(i), 0, true);
        EXPECT_EQ(ctx.encode(bb.view()), DecodeStatus::Ok);
        std::vector<float> logits;
        for (int32_t pos = 0; pos < 4; ++pos) {
            const int32_t tok = std::vector<int32_t>{0, 644, 4598, 229}[static_cast<size_t>(pos)];
            Batch one;
            one.n_tokens = 1;
            one.token = &tok;
            one.pos = &pos;
            EXPECT_EQ(ctx.decode(one), DecodeStatus::Ok);
            const float *l = ctx.logits_ith(-1);
            logits.insert(logits.end(), l, l + model->hparams().n_vocab);
        }
        return logits;
    };
    Context reused(*model, p);
    const std::vector<float> a = steps(reused, first);
    const std::vector<float> b = steps(reused, second);
    Context fresh(*model, p);
    EXPECT_NE(a, b);
    EXPECT_EQ(b, steps(fresh, second));
}

// A decode before any encode has no encoder output to attend to: refused, nothing changes.
TEST(T5Golden, DecodeBeforeEncodeIsRefused) {
    auto model = Model::load(t5_dir() + "models/t5.gguf");
    ContextParams p;
    p.n_ctx = 64;
    Context ctx(*model, p);
    int32_t tok = 0;
    Batch one;
    one.n_tokens = 1;
    one.token = &tok;
    EXPECT_EQ(ctx.decode(one), DecodeStatus::Error);
    EXPECT_EQ(ctx.kv().used(), 0u);
}

}  // namespace
}  // namespace lctx::t5_golden_test
