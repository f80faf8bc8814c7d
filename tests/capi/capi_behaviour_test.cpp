// C API behaviour on stories260K: model and context queries, decode validation, output access, KV
// operations, tokenization buffer contracts, the stubs of unsupported features, and perf counters.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "capi/capi_test_util.h"
#include "kernels/dot.h"
#include "kernels/isa_request.h"
#include "lctx/lctx_ext.h"

namespace capi_behaviour_test {
using namespace capi_test;

namespace {

class Capi : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_NE(model(), nullptr); }
    void TearDown() override { llama_log_set(nullptr, nullptr); }
};

TEST_F(Capi, DefaultParamsMatchTheReference) {
    const llama_context_params c = llama_context_default_params();
    EXPECT_EQ(c.n_ctx, 512u);
    EXPECT_EQ(c.n_batch, 2048u);
    EXPECT_EQ(c.n_ubatch, 512u);
    EXPECT_EQ(c.n_seq_max, 1u);
    EXPECT_EQ(c.n_threads, GGML_DEFAULT_N_THREADS);
    EXPECT_EQ(c.type_k, GGML_TYPE_F16);
    EXPECT_EQ(c.pooling_type, LLAMA_POOLING_TYPE_UNSPECIFIED);
    EXPECT_FLOAT_EQ(c.yarn_ext_factor, -1.0f);
    EXPECT_FLOAT_EQ(c.defrag_thold, -1.0f);
    EXPECT_TRUE(c.no_perf);
    EXPECT_TRUE(c.offload_kqv);
    const llama_model_params m = llama_model_default_params();
    EXPECT_TRUE(m.use_mmap);
    EXPECT_EQ(m.split_mode, LLAMA_SPLIT_MODE_LAYER);
    EXPECT_TRUE(llama_sampler_chain_default_params().no_perf);
    EXPECT_EQ(llama_model_quantize_default_params().ftype, LLAMA_FTYPE_MOSTLY_Q5_1);
}

TEST_F(Capi, ModelQueries) {
    const llama_model *m = model();
    EXPECT_EQ(llama_vocab_n_tokens(vocab()), 512);
    EXPECT_EQ(llama_model_n_layer(m), 5);
    EXPECT_GT(llama_model_n_embd(m), 0);
    EXPECT_GT(llama_model_n_head(m), 0);
    EXPECT_GT(llama_model_n_ctx_train(m), 0);
    EXPECT_GT(llama_model_size(m), 0u);
    EXPECT_GT(llama_model_n_params(m), 200000u);
    EXPECT_FALSE(llama_model_has_encoder(m));
    EXPECT_TRUE(llama_model_has_decoder(m));
    EXPECT_FALSE(llama_model_is_recurrent(m));
    EXPECT_EQ(llama_model_rope_type(m), LLAMA_ROPE_TYPE_NORM);
    EXPECT_EQ(llama_model_decoder_start_token(m), LLAMA_TOKEN_NULL);
    EXPECT_EQ(llama_vocab_type(vocab()), LLAMA_VOCAB_TYPE_SPM);

    char desc[128];
    const int32_t n = llama_model_desc(m, desc, sizeof desc);
    EXPECT_EQ(n, static_cast<int32_t>(std::strlen(desc)));
    EXPECT_EQ(std::string(desc).rfind("llama", 0), 0u) << desc;
}

TEST_F(Capi, MetadataHasSnprintfSemantics) {
    const llama_model *m = model();
    char buf[64];
    EXPECT_EQ(llama_model_meta_val_str(m, "general.architecture", buf, sizeof buf), 5);
    EXPECT_STREQ(buf, "llama");
    char small[3];
    EXPECT_EQ(llama_model_meta_val_str(m, "general.architecture", small, sizeof small), 5);  // full length
    EXPECT_STREQ(small, "ll");                                                               // truncated, NUL
    EXPECT_EQ(llama_model_meta_val_str(m, "general.architecture", nullptr, 0), 5);
    EXPECT_EQ(llama_model_meta_val_str(m, "no.such.key", buf, sizeof buf), -1);
    EXPECT_STREQ(buf, "");

    const int32_t count = llama_model_meta_count(m);
    ASSERT_GT(count, 0);
    bool found = false;
    for (int32_t i = 0; i < count; ++i) {
        char key[128], val[128];
        ASSERT_GE(llama_model_meta_key_by_index(m, i, key, sizeof key), 0);
        ASSERT_GE(llama_model_meta_val_str_by_index(m, i, val, sizeof val), 0);
        EXPECT_NE(std::string(key), "tokenizer.ggml.tokens") << "arrays are not visible";
        if (std::string(key) == "llama.block_count") {
            EXPECT_STREQ(val, "5");
            found = true;
        }
    }
    EXPECT_TRUE(found);
    EXPECT_EQ(llama_model_meta_key_by_index(m, count, buf, sizeof buf), -1);
    EXPECT_STREQ(buf, "");
    EXPECT_EQ(llama_model_meta_key_by_index(m, -1, buf, sizeof buf), -1);
}

// b4748 raises n_batch to at least GGML_KQ_MASK_PAD (64); n_ubatch stays as asked (it is below n_batch).
TEST_F(Capi, SmallNBatchIsRaisedTo64) {
    CtxOptions o;
    o.n_ctx = 128;
    o.n_batch = 8;
    o.n_ubatch = 4;
    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_n_batch(ctx), 64u);
    EXPECT_EQ(llama_n_ubatch(ctx), 4u);
    llama_free(ctx);
}

TEST_F(Capi, ContextQueriesReturnConfiguredValues) {
    CtxOptions o;
    o.n_ctx = 100;  // padded to 128
    o.n_batch = 512;
    o.n_ubatch = 16;
    o.n_seq_max = 3;
    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_n_ctx(ctx), 128u);
    EXPECT_EQ(llama_n_batch(ctx), 128u);  // clamped to n_ctx for a causal model
    EXPECT_EQ(llama_n_ubatch(ctx), 16u);
    EXPECT_EQ(llama_n_seq_max(ctx), 3u);
    EXPECT_EQ(llama_get_model(ctx), model());
    EXPECT_EQ(llama_pooling_type(ctx), LLAMA_POOLING_TYPE_NONE);
    EXPECT_EQ(llama_n_threads(ctx), 1);
    llama_set_n_threads(ctx, 2, 2);
    EXPECT_EQ(llama_n_threads(ctx), 2);
    EXPECT_EQ(llama_n_threads_batch(ctx), 2);
    EXPECT_TRUE(llama_kv_cache_can_shift(ctx));
    llama_free(ctx);
}

TEST_F(Capi, BadContextParamsGiveNull) {
    quiet_log();
    llama_context_params p = llama_context_default_params();
    p.n_batch = 0;
    p.n_ubatch = 0;
    EXPECT_EQ(llama_init_from_model(model(), p), nullptr);
    p = llama_context_default_params();
    p.type_k = GGML_TYPE_Q4_K;  // not a supported cache type
    EXPECT_EQ(llama_init_from_model(model(), p), nullptr);
    EXPECT_EQ(llama_init_from_model(nullptr, llama_context_default_params()), nullptr);
    EXPECT_EQ(llama_model_load_from_file("/nonexistent/model.gguf", llama_model_default_params()), nullptr);
}

TEST_F(Capi, LogitsIthHandlesNegativeOutOfRangeAndNonOutputIndices) {
    quiet_log();
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_get_logits_ith(ctx, -1), nullptr);  // nothing decoded yet

    const std::vector<llama_token> toks = tokenize("Once upon a time");
    ASSERT_GE(toks.size(), 4u);
    llama_batch b = llama_batch_init(4, 0, 1);
    b.n_tokens = 4;
    for (int i = 0; i < 4; ++i) {
        b.token[i] = toks[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = (i == 1 || i == 3);
    }
    ASSERT_EQ(llama_decode(ctx, b), 0);
    llama_batch_free(b);

    float *l1 = llama_get_logits_ith(ctx, 1);
    float *l3 = llama_get_logits_ith(ctx, 3);
    ASSERT_NE(l1, nullptr);
    ASSERT_NE(l3, nullptr);
    EXPECT_NE(l1, l3);
    EXPECT_EQ(llama_get_logits_ith(ctx, -1), l3);
    EXPECT_EQ(llama_get_logits_ith(ctx, -2), l1);
    EXPECT_EQ(llama_get_logits(ctx), l1);              // rows in batch order
    EXPECT_EQ(llama_get_logits_ith(ctx, 0), nullptr);  // did not ask for output
    EXPECT_EQ(llama_get_logits_ith(ctx, 2), nullptr);
    EXPECT_EQ(llama_get_logits_ith(ctx, -3), nullptr);
    EXPECT_EQ(llama_get_logits_ith(ctx, 4), nullptr);
    EXPECT_EQ(llama_get_logits_ith(ctx, 1000), nullptr);
    EXPECT_EQ(llama_get_logits_ith(ctx, INT32_MIN), nullptr);
    EXPECT_EQ(llama_get_embeddings_ith(ctx, 0), nullptr);  // embeddings off
    llama_free(ctx);
}

TEST_F(Capi, InvalidBatchIsRefusedWithoutChange) {
    quiet_log();
    CtxOptions o;
    o.n_seq_max = 2;
    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(decode_seq(ctx, tokenize("Once upon a time"), 0, 0), 0);
    const std::vector<uint8_t> before = state_bytes(ctx);
    const int32_t used = llama_get_kv_cache_used_cells(ctx);

    EXPECT_LT(decode_seq(ctx, {512}, 10, 0), 0) << "token == n_vocab";
    EXPECT_LT(decode_seq(ctx, {-1}, 10, 0), 0) << "negative token";
    EXPECT_LT(decode_seq(ctx, {300}, 10, LCTX_MAX_SEQ), 0) << "seq id == LCTX_MAX_SEQ";
    EXPECT_LT(decode_seq(ctx, {300}, 10, -1), 0) << "negative seq id";
    EXPECT_LT(decode_seq(ctx, {}, 10, 0), 0) << "empty batch";
    llama_token t = 300;
    EXPECT_LT(llama_decode(ctx, llama_batch_get_one(&t, 0)), 0);
    std::vector<llama_token> too_many(65, 300);  // n_batch is 64
    EXPECT_LT(llama_decode(ctx, llama_batch_get_one(too_many.data(), 65)), 0);
    EXPECT_EQ(llama_decode(nullptr, llama_batch_get_one(&t, 1)), -1);

    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), used);
    EXPECT_EQ(state_bytes(ctx), before);
    llama_free(ctx);
}

TEST_F(Capi, BatchGetOneContinuesSequenceZero) {
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> toks = tokenize("Once upon a time");
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()))), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), static_cast<llama_pos>(toks.size()) - 1);
    llama_token next = argmax(llama_get_logits_ith(ctx, -1));
    ASSERT_EQ(llama_decode(ctx, llama_batch_get_one(&next, 1)), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), static_cast<llama_pos>(toks.size()));

    // The same as explicit positions in a fresh context.
    llama_context *ref = make_ctx();
    ASSERT_NE(ref, nullptr);
    ASSERT_EQ(decode_seq(ref, toks, 0, 0), 0);
    ASSERT_EQ(decode_seq(ref, {next}, static_cast<llama_pos>(toks.size()), 0), 0);
    const float *a = llama_get_logits_ith(ctx, -1), *b = llama_get_logits_ith(ref, -1);
    EXPECT_EQ(std::vector<float>(a, a + 512), std::vector<float>(b, b + 512));
    llama_free(ctx);
    llama_free(ref);
}

TEST_F(Capi, KvCacheOperations) {
    CtxOptions o;
    o.n_seq_max = 3;
    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), -1);  // empty
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 0);
    const std::vector<llama_token> toks = tokenize("Once upon a time, there was");
    const int32_t n = static_cast<int32_t>(toks.size());
    ASSERT_EQ(decode_seq(ctx, toks, 0, 0), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), n - 1);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), n);
    EXPECT_EQ(llama_get_kv_cache_token_count(ctx), n);

    llama_kv_cache_seq_cp(ctx, 0, 1, -1, -1);  // shared cells, no new ones
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), n);
    EXPECT_EQ(llama_get_kv_cache_token_count(ctx), 2 * n);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 1), n - 1);

    EXPECT_TRUE(llama_kv_cache_seq_rm(ctx, 0, 2, -1));
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), 1);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), n);  // still held by sequence 1
    llama_kv_cache_seq_keep(ctx, 0);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 2);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 1), -1);

    llama_kv_cache_seq_add(ctx, 0, 0, -1, 5);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), 6);
    llama_kv_cache_seq_div(ctx, 0, 0, -1, 2);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), 3);
    llama_kv_cache_update(ctx);  // applies the pending shift
    llama_kv_cache_defrag(ctx);
    llama_kv_cache_update(ctx);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 2);

    llama_kv_cache_view view = llama_kv_cache_view_init(ctx, 3);
    llama_kv_cache_view_update(ctx, &view);
    EXPECT_EQ(view.n_cells, 256);
    EXPECT_EQ(view.used_cells, 2);
    EXPECT_EQ(view.cells[0].pos, 2);
    EXPECT_EQ(view.cells[1].pos, 3);
    EXPECT_EQ(view.cells_sequences[0], 0);
    EXPECT_EQ(view.cells_sequences[1], -1);
    EXPECT_EQ(view.max_contiguous, 254);
    llama_kv_cache_view_free(&view);

    llama_kv_cache_clear(ctx);
    EXPECT_EQ(llama_get_kv_cache_used_cells(ctx), 0);
    EXPECT_EQ(llama_kv_cache_seq_pos_max(ctx, 0), -1);
    llama_free(ctx);
}

// lctx_ext.h: placement by sequence puts sequence 1's cells in the second half of a 2-sequence cache, where
// llama.cpp's placement puts them right after sequence 0's; a null context is ignored.
TEST_F(Capi, ExtPlaceBySequence) {
    CtxOptions o;
    o.n_seq_max = 2;
    const std::vector<llama_token> toks = tokenize("Once upon a time");
    for (bool by_seq : {false, true}) {
        llama_context *ctx = make_ctx(o);
        ASSERT_NE(ctx, nullptr);
        lctx_kv_cache_place_by_sequence(ctx, by_seq);
        ASSERT_EQ(decode_seq(ctx, toks, 0, 0), 0);
        ASSERT_EQ(decode_seq(ctx, toks, 0, 1), 0);
        llama_kv_cache_view view = llama_kv_cache_view_init(ctx, 1);
        llama_kv_cache_view_update(ctx, &view);
        const int32_t first1 = by_seq ? 128 : static_cast<int32_t>(toks.size());
        EXPECT_EQ(view.cells_sequences[first1], 1) << "by sequence " << by_seq;
        EXPECT_EQ(view.cells[first1].pos, 0) << "by sequence " << by_seq;
        llama_kv_cache_view_free(&view);
        llama_free(ctx);
    }
    lctx_kv_cache_place_by_sequence(nullptr, true);
}

// lctx_ext.h: a JSON schema's GBNF grammar, which llama_sampler_init_grammar takes; the length whatever the
// room (the text cut and ended), -1 for a schema that cannot be converted or is no JSON.
TEST_F(Capi, ExtJsonSchemaToGrammar) {
    const char *schema = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
    const int32_t n = lctx_json_schema_to_grammar(schema, nullptr, 0);
    ASSERT_GT(n, 0);
    std::string g(static_cast<size_t>(n), '\0');
    ASSERT_EQ(lctx_json_schema_to_grammar(schema, g.data(), g.size() + 1), n);
    EXPECT_NE(g.find("root"), std::string::npos) << g;
    llama_sampler *s = llama_sampler_init_grammar(vocab(), g.c_str(), "root");
    EXPECT_NE(s, nullptr);
    llama_sampler_free(s);
    char small[4] = {'x', 'x', 'x', 'x'};
    EXPECT_EQ(lctx_json_schema_to_grammar(schema, small, sizeof small), n);
    EXPECT_EQ(std::string(small), g.substr(0, 3));
    EXPECT_EQ(lctx_json_schema_to_grammar(R"({"type": "kaboom"})", nullptr, 0), -1);
    EXPECT_EQ(lctx_json_schema_to_grammar("not json", nullptr, 0), -1);
    EXPECT_EQ(lctx_json_schema_to_grammar(nullptr, nullptr, 0), -1);
}

// lctx_ext.h: a text model has an output layer and an embedding model none; a KV cache takes every layer's K
// and V rows of n_embd / n_head * n_head_kv values per cell.
TEST_F(Capi, ExtModelOutputAndKvCacheSize) {
    EXPECT_TRUE(lctx_model_has_output(model()));
    const std::string bert_path = std::string(LCTX_FIXTURES_DIR) + "/golden/models/bert.gguf";
    llama_model *bert = llama_model_load_from_file(bert_path.c_str(), llama_model_default_params());
    ASSERT_NE(bert, nullptr);
    EXPECT_FALSE(lctx_model_has_output(bert));
    llama_model_free(bert);
    char buf[32] = {0};
    const uint64_t n_head = static_cast<uint64_t>(llama_model_n_head(model()));
    const uint64_t n_head_kv =
        llama_model_meta_val_str(model(), "llama.attention.head_count_kv", buf, sizeof buf) > 0
            ? std::stoull(buf)
            : n_head;
    const uint64_t row = static_cast<uint64_t>(llama_model_n_embd(model())) / n_head * n_head_kv;
    const uint64_t layers = static_cast<uint64_t>(llama_model_n_layer(model()));
    EXPECT_EQ(lctx_model_kv_cache_size(model(), 256, GGML_TYPE_F16, GGML_TYPE_F16),
              layers * 256 * 2 * row * 2);
    EXPECT_EQ(lctx_model_kv_cache_size(model(), 100, GGML_TYPE_F32, GGML_TYPE_F16),
              layers * 100 * (4 + 2) * row);
}

TEST_F(Capi, TokenizeBufferContract) {
    const std::string text = "Once upon a time, there was a little girl named Lily.";
    const int32_t len = static_cast<int32_t>(text.size());
    const int32_t need = llama_tokenize(vocab(), text.data(), len, nullptr, 0, true, false);
    ASSERT_EQ(need, -16);
    std::vector<llama_token> buf(16, -7);
    EXPECT_EQ(llama_tokenize(vocab(), text.data(), len, buf.data(), 15, true, false), -16);
    EXPECT_EQ(buf, std::vector<llama_token>(16, -7)) << "nothing written when it does not fit";
    EXPECT_EQ(llama_tokenize(vocab(), text.data(), len, buf.data(), 16, true, false), 16);
    EXPECT_EQ(buf[0], llama_vocab_bos(vocab()));
    EXPECT_EQ(llama_tokenize(vocab(), text.data(), len, buf.data(), 16, false, false), 15);
    EXPECT_EQ(llama_tokenize(vocab(), "", 0, buf.data(), 16, false, false), 0);

    // token_to_piece: -(bytes needed) when too small, no NUL terminator.
    char piece[32];
    const llama_token t = buf[1];
    const int32_t np = llama_token_to_piece(vocab(), t, piece, sizeof piece, 0, false);
    ASSERT_GT(np, 1);
    char tiny[1] = {'#'};
    EXPECT_EQ(llama_token_to_piece(vocab(), t, tiny, 1, 0, false), -np);
    EXPECT_EQ(tiny[0], '#');
    std::vector<char> exact(static_cast<size_t>(np), '#');  // exactly the piece's bytes: it fits
    EXPECT_EQ(llama_token_to_piece(vocab(), t, exact.data(), np, 0, false), np);
    EXPECT_EQ(std::string(exact.data(), exact.size()), std::string(piece, static_cast<size_t>(np)));
    EXPECT_EQ(llama_token_to_piece(vocab(), llama_vocab_bos(vocab()), piece, sizeof piece, 0, false), 0);
    EXPECT_GT(llama_token_to_piece(vocab(), llama_vocab_bos(vocab()), piece, sizeof piece, 0, true), 0);

    // detokenize round trip (without BOS the space-prefix is removed from the first piece).
    const std::vector<llama_token> ids = tokenize(text, false);
    char out[128];
    const int32_t nd = llama_detokenize(vocab(), ids.data(), static_cast<int32_t>(ids.size()), out,
                                        sizeof out, false, false);
    ASSERT_EQ(nd, len);
    EXPECT_EQ(std::string(out, nd), text);
    std::memset(out, '#', sizeof out);
    EXPECT_LT(llama_detokenize(vocab(), ids.data(), static_cast<int32_t>(ids.size()), out, 5, false, false),
              -5);
    EXPECT_EQ(out[0], '#');
}

TEST_F(Capi, VocabGetters) {
    quiet_log();
    const llama_vocab *v = vocab();
    EXPECT_EQ(llama_vocab_bos(v), 1);
    EXPECT_EQ(llama_vocab_eos(v), 2);
    EXPECT_TRUE(llama_vocab_is_eog(v, llama_vocab_eos(v)));
    EXPECT_FALSE(llama_vocab_is_eog(v, 300));
    EXPECT_TRUE(llama_vocab_is_control(v, llama_vocab_bos(v)));
    EXPECT_TRUE(llama_vocab_get_add_bos(v));
    EXPECT_NE(llama_vocab_get_text(v, 300), nullptr);
    EXPECT_EQ(llama_vocab_get_text(v, 512), nullptr);  // out of range: logged, no abort
    EXPECT_EQ(llama_vocab_get_attr(v, -1), LLAMA_TOKEN_ATTR_UNDEFINED);
    EXPECT_FALSE(llama_vocab_is_eog(v, 100000));
    char buf[8];
    EXPECT_EQ(llama_token_to_piece(v, 9999, buf, sizeof buf, 0, true), 0);
}

// The samplers that once stood here as unsupported exist now (tests/grammar, tests/sampling/test_dry_infill).
TEST_F(Capi, GrammarDryAndInfillSamplersExist) {
    quiet_log();
    for (llama_sampler *s : {llama_sampler_init_grammar(vocab(), "root ::= \"a\"", "root"),
                             llama_sampler_init_grammar(vocab(), "", "root"),
                             llama_sampler_init_dry(vocab(), 128, 0.8f, 1.75f, 2, -1, nullptr, 0),
                             llama_sampler_init_infill(vocab())}) {
        ASSERT_NE(s, nullptr);
        llama_sampler_free(s);
    }
}

TEST_F(Capi, UnsupportedFeaturesReturnErrorValues) {
    quiet_log();
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_adapter_lora_init(const_cast<llama_model *>(model()), "/tmp/x.gguf"), nullptr);
    EXPECT_EQ(llama_set_adapter_lora(ctx, nullptr, 1.0f), -1);
    EXPECT_EQ(llama_rm_adapter_lora(ctx, nullptr), -1);
    llama_clear_adapter_lora(ctx);
    const float cvec[4] = {0, 0, 0, 0};
    EXPECT_EQ(llama_apply_adapter_cvec(ctx, cvec, 4, 1, 1, 1), 1);
    EXPECT_EQ(llama_apply_adapter_cvec(ctx, nullptr, 0, 0, 0, 0), 0);
    // Chat templates are supported now (tests/chat/builtin_templates_test.cpp); an unknown one is the error.
    llama_chat_message msg = {"user", "hi"};
    char buf[64];
    EXPECT_EQ(llama_chat_apply_template("no such template", &msg, 1, true, buf, sizeof buf), -1);
    EXPECT_EQ(llama_model_quantize("/tmp/a.gguf", "/tmp/b.gguf", nullptr), 1u);
    llama_token t = 300;
    EXPECT_LT(llama_encode(ctx, llama_batch_get_one(&t, 1)), 0);
    llama_free(ctx);
}

TEST_F(Capi, SplitPathHelpers) {
    char buf[128];
    EXPECT_EQ(llama_split_path(buf, sizeof buf, "/m/x", 2, 4), 24);
    EXPECT_STREQ(buf, "/m/x-00003-of-00004.gguf");
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/m/x-00003-of-00004.gguf", 2, 4), 4);
    EXPECT_STREQ(buf, "/m/x");
    EXPECT_EQ(llama_split_prefix(buf, sizeof buf, "/m/x-00003-of-00004.gguf", 1, 4), 0);
}

TEST_F(Capi, EmbeddingsModeAndMeanPooling) {
    const std::vector<llama_token> toks = tokenize("Once upon a time");
    const int32_t n_embd = llama_model_n_embd(model());
    // Per-token embeddings (pooling NONE).
    CtxOptions o;
    o.embeddings = true;
    o.pooling = LLAMA_POOLING_TYPE_NONE;
    llama_context *none = make_ctx(o);
    ASSERT_NE(none, nullptr);
    llama_batch b = llama_batch_init(static_cast<int32_t>(toks.size()), 0, 1);
    b.n_tokens = static_cast<int32_t>(toks.size());
    for (int32_t i = 0; i < b.n_tokens; ++i) {
        b.token[i] = toks[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    ASSERT_EQ(llama_decode(none, b), 0);
    EXPECT_EQ(llama_get_logits(none), nullptr);
    EXPECT_EQ(llama_get_embeddings_seq(none, 0), nullptr);
    ASSERT_NE(llama_get_embeddings(none), nullptr);
    std::vector<double> mean(n_embd, 0.0);
    for (int32_t i = 0; i < b.n_tokens; ++i) {
        const float *e = llama_get_embeddings_ith(none, i);
        ASSERT_NE(e, nullptr);
        for (int32_t j = 0; j < n_embd; ++j) mean[j] += e[j] / b.n_tokens;
    }
    // Mean pooling gives their average.
    o.pooling = LLAMA_POOLING_TYPE_MEAN;
    llama_context *pooled = make_ctx(o);
    ASSERT_NE(pooled, nullptr);
    EXPECT_EQ(llama_pooling_type(pooled), LLAMA_POOLING_TYPE_MEAN);
    ASSERT_EQ(llama_decode(pooled, b), 0);
    const float *p = llama_get_embeddings_seq(pooled, 0);
    ASSERT_NE(p, nullptr);
    for (int32_t j = 0; j < n_embd; ++j) EXPECT_NEAR(p[j], mean[j], 1e-5);
    EXPECT_EQ(llama_get_embeddings_seq(pooled, 1), nullptr);
    EXPECT_EQ(llama_get_embeddings(pooled), nullptr);

    // Switching embeddings off brings logits back.
    llama_set_embeddings(none, false);
    ASSERT_EQ(llama_decode(none, b), 0);
    EXPECT_NE(llama_get_logits_ith(none, 0), nullptr);
    llama_batch_free(b);
    llama_free(none);
    llama_free(pooled);
}

TEST_F(Capi, AbortCallbackStopsDecode) {
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    int calls = 0;
    llama_set_abort_callback(
        ctx, [](void *data) { return ++*static_cast<int *>(data) > 0; }, &calls);
    std::vector<llama_token> toks = tokenize("Once upon a time, there was a little girl");
    EXPECT_EQ(llama_decode(ctx, llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()))), 2);
    EXPECT_GT(calls, 0);
    llama_set_abort_callback(ctx, nullptr, nullptr);
    EXPECT_EQ(llama_decode(ctx, llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size()))), 0);
    llama_free(ctx);
}

TEST_F(Capi, NoKvSlotReturnsOne) {
    quiet_log();
    CtxOptions o;
    o.n_ctx = 32;
    o.n_ubatch = 32;
    llama_context *ctx = make_ctx(o);
    ASSERT_NE(ctx, nullptr);
    std::vector<llama_token> toks(30, 300);
    ASSERT_EQ(decode_seq(ctx, toks, 0, 0), 0);
    EXPECT_EQ(decode_seq(ctx, std::vector<llama_token>(5, 300), 30, 0), 1);
    llama_free(ctx);
}

TEST_F(Capi, PerfCountersCount) {
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    fixture_run(ctx);
    const llama_perf_context_data d = llama_perf_context(ctx);
    EXPECT_EQ(d.n_p_eval, 16);
    EXPECT_EQ(d.n_eval, 4);
    EXPECT_EQ(d.t_eval_ms, 0.0);  // no_perf (the default) hides the times, counts still advance
    EXPECT_GE(d.t_load_ms, 0.0);
    llama_perf_context_reset(ctx);
    EXPECT_EQ(llama_perf_context(ctx).n_eval, 1);  // reported as at least 1
    const llama_perf_context_data z = llama_perf_context(nullptr);
    EXPECT_EQ(z.n_eval, 0);
    EXPECT_GT(llama_time_us(), 0);
    // The kernel level it names is a level (on any CPU, ARM64's scalar one included) this CPU has.
    const std::string info = llama_print_system_info();
    const size_t at = info.find("KERNELS = ");
    ASSERT_NE(at, std::string::npos) << info;
    const std::string level = info.substr(at + 10, info.find(' ', at + 10) - (at + 10));
    lctx::kernels::Isa isa;
    ASSERT_TRUE(lctx::kernels::detail::isa_requested(level.c_str(), &isa)) << info;
    EXPECT_TRUE(lctx::kernels::isa_at_least(lctx::kernels::isa_detected(), isa)) << info;
    llama_free(ctx);
}

TEST_F(Capi, ModelDescFollowsB4748) {
    // stories260K: 5 layers (no size class), no general.file_type, all tensors f32.
    char desc[128];
    EXPECT_EQ(llama_model_desc(model(), desc, sizeof desc), 26);
    EXPECT_STREQ(desc, "llama ?B all F32 (guessed)");
}

TEST_F(Capi, VocabOnlyLoadCountsTensorsLeavesDescEmptyAndNeverCallsProgress) {
    llama_model_params p = llama_model_default_params();
    p.vocab_only = true;
    int calls = 0;
    p.progress_callback = [](float, void *ud) {
        ++*static_cast<int *>(ud);
        return false;  // would cancel a load that asked
    };
    p.progress_callback_user_data = &calls;
    llama_model *m = llama_model_load_from_file(model_path().c_str(), p);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(llama_model_size(m), llama_model_size(model()));
    EXPECT_EQ(llama_model_n_params(m), llama_model_n_params(model()));
    EXPECT_GT(llama_model_n_params(m), 200000u);
    char desc[64] = "x";
    EXPECT_EQ(llama_model_desc(m, desc, sizeof desc), 0);
    EXPECT_STREQ(desc, "");
    EXPECT_EQ(llama_model_n_layer(m), 0);  // b4748 reads no hyper-parameter but the vocabulary size
    EXPECT_EQ(llama_model_rope_type(m), LLAMA_ROPE_TYPE_NORM);  // by architecture, as b4748
    EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(m)), 512);
    llama_model_free(m);
}

TEST_F(Capi, IsEogOfAnIdOutsideTheVocabularyIsFalseAndSilent) {
    // Programs call is_eog(vocab, llama_vocab_eot(vocab)) on models without EOT: b4748 answers false and
    // logs nothing.
    std::string got;
    llama_log_set(
        [](enum ggml_log_level level, const char *text, void *ud) {
            if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN)
                *static_cast<std::string *>(ud) += text;
        },
        &got);
    for (llama_token t : {LLAMA_TOKEN_NULL, -100, llama_vocab_n_tokens(vocab()), 1 << 30}) {
        EXPECT_FALSE(llama_vocab_is_eog(vocab(), t)) << t;
    }
    EXPECT_TRUE(llama_vocab_is_eog(vocab(), llama_vocab_eos(vocab())));
    EXPECT_TRUE(got.empty()) << got;
}

// Sequence ids outside [0, LCTX_MAX_SEQ) are reported as errors and change nothing.
TEST_F(Capi, SeqCpWithAnIdOutsideTheRangeIsReported) {
    std::string got;
    llama_log_set(
        [](enum ggml_log_level level, const char *text, void *ud) {
            if (level == GGML_LOG_LEVEL_ERROR) *static_cast<std::string *>(ud) += text;
        },
        &got);
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(decode_seq(ctx, tokenize("Once upon a time"), 0, 0), 0);
    const std::vector<uint8_t> before = state_bytes(ctx);
    for (const auto &[src, dst] :
         {std::pair{0, LCTX_MAX_SEQ}, std::pair{LCTX_MAX_SEQ, 0}, std::pair{0, -1}}) {
        got.clear();
        llama_kv_cache_seq_cp(ctx, src, dst, -1, -1);
        EXPECT_NE(got.find("llama_kv_cache_seq_cp"), std::string::npos) << src << " -> " << dst;
        EXPECT_EQ(state_bytes(ctx), before) << src << " -> " << dst;
    }
    llama_free(ctx);
}

TEST_F(Capi, LogCallbackReceivesMessages) {
    std::string got;
    llama_log_set(
        [](enum ggml_log_level level, const char *text, void *ud) {
            if (level == GGML_LOG_LEVEL_ERROR) *static_cast<std::string *>(ud) += text;
        },
        &got);
    llama_context *ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(llama_get_logits_ith(ctx, 5), nullptr);
    EXPECT_NE(got.find("get_logits_ith"), std::string::npos) << got;
    got.clear();
    llama_perf_context_print(ctx);  // INFO lines: not collected by this callback
    EXPECT_TRUE(got.empty());
    llama_free(ctx);
}

// ggml_type_name, which `lctx run -ctk` uses to tell a type that is not a cache type from no type at all.
TEST(CapiGgml, TypeNamesAreGgmls) {
    EXPECT_STREQ(ggml_type_name(GGML_TYPE_F32), "f32");
    EXPECT_STREQ(ggml_type_name(GGML_TYPE_F16), "f16");
    EXPECT_STREQ(ggml_type_name(GGML_TYPE_BF16), "bf16");
    EXPECT_STREQ(ggml_type_name(GGML_TYPE_Q8_0), "q8_0");
    EXPECT_STREQ(ggml_type_name(GGML_TYPE_IQ4_NL), "iq4_nl");
    EXPECT_STREQ(ggml_type_name(GGML_TYPE_Q4_K), "q4_K");
    EXPECT_STREQ(ggml_type_name(static_cast<ggml_type>(4)), "unknown");  // Q4_2, removed
    EXPECT_STREQ(ggml_type_name(GGML_TYPE_COUNT), "unknown");
}

}  // namespace
}  // namespace capi_behaviour_test
