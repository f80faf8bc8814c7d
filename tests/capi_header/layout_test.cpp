// Struct fields (type, order, x86-64 offset), struct sizes, scalar typedefs, enum values and macros of
// llama.h against the b4748 facts in /work/shared/LLAMA-API.md §1-§4. Layout mismatches fail the build of
// this test (static_assert); enum and constant mismatches fail at run time with the name.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "llama.h"

namespace layout_test {
namespace {

// Field type always; field offset only on the ABI the reference table was measured on (x86-64 LP64).
#if defined(__x86_64__) && defined(__LP64__)
#define LCTX_FIELD(S, f, T, off)                                                        \
    static_assert(std::is_same_v<decltype(S::f), T>, #S "::" #f " has the wrong type"); \
    static_assert(offsetof(S, f) == (off), #S "::" #f " is at the wrong offset")
#define LCTX_SIZE(S, n) static_assert(sizeof(S) == (n), "sizeof(" #S ") differs from b4748")
#else
#define LCTX_FIELD(S, f, T, off) \
    static_assert(std::is_same_v<decltype(S::f), T>, #S "::" #f " has the wrong type")
#define LCTX_SIZE(S, n) static_assert(sizeof(S) > 0)
#endif

// §2 scalar typedefs and callback types
static_assert(std::is_same_v<llama_pos, int32_t>);
static_assert(std::is_same_v<llama_token, int32_t>);
static_assert(std::is_same_v<llama_seq_id, int32_t>);
static_assert(std::is_same_v<llama_sampler_context_t, void *>);
static_assert(std::is_same_v<llama_progress_callback, bool (*)(float, void *)>);
static_assert(std::is_same_v<ggml_abort_callback, bool (*)(void *)>);
static_assert(std::is_same_v<ggml_log_callback, void (*)(enum ggml_log_level, const char *, void *)>);
static_assert(std::is_same_v<ggml_backend_sched_eval_callback, bool (*)(struct ggml_tensor *, bool, void *)>);
static_assert(std::is_same_v<ggml_threadpool_t, struct ggml_threadpool *>);
static_assert(std::is_same_v<ggml_backend_dev_t, struct ggml_backend_device *>);

// §4.1 / §4.2
LCTX_FIELD(llama_token_data, id, llama_token, 0);
LCTX_FIELD(llama_token_data, logit, float, 4);
LCTX_FIELD(llama_token_data, p, float, 8);
LCTX_SIZE(llama_token_data, 12);

LCTX_FIELD(llama_token_data_array, data, llama_token_data *, 0);
LCTX_FIELD(llama_token_data_array, size, size_t, 8);
LCTX_FIELD(llama_token_data_array, selected, int64_t, 16);
LCTX_FIELD(llama_token_data_array, sorted, bool, 24);
LCTX_SIZE(llama_token_data_array, 32);

// §4.3
LCTX_FIELD(llama_batch, n_tokens, int32_t, 0);
LCTX_FIELD(llama_batch, token, llama_token *, 8);
LCTX_FIELD(llama_batch, embd, float *, 16);
LCTX_FIELD(llama_batch, pos, llama_pos *, 24);
LCTX_FIELD(llama_batch, n_seq_id, int32_t *, 32);
LCTX_FIELD(llama_batch, seq_id, llama_seq_id **, 40);
LCTX_FIELD(llama_batch, logits, int8_t *, 48);
LCTX_SIZE(llama_batch, 56);

// §4.4: the union is anonymous, so its members are reached directly.
LCTX_FIELD(llama_model_kv_override, tag, enum llama_model_kv_override_type, 0);
LCTX_FIELD(llama_model_kv_override, key, char[128], 4);
LCTX_FIELD(llama_model_kv_override, val_i64, int64_t, 136);
LCTX_FIELD(llama_model_kv_override, val_f64, double, 136);
LCTX_FIELD(llama_model_kv_override, val_bool, bool, 136);
LCTX_FIELD(llama_model_kv_override, val_str, char[128], 136);
LCTX_SIZE(llama_model_kv_override, 264);

// §4.5
LCTX_FIELD(llama_model_params, devices, ggml_backend_dev_t *, 0);
LCTX_FIELD(llama_model_params, n_gpu_layers, int32_t, 8);
LCTX_FIELD(llama_model_params, split_mode, enum llama_split_mode, 12);
LCTX_FIELD(llama_model_params, main_gpu, int32_t, 16);
LCTX_FIELD(llama_model_params, tensor_split, const float *, 24);
LCTX_FIELD(llama_model_params, progress_callback, llama_progress_callback, 32);
LCTX_FIELD(llama_model_params, progress_callback_user_data, void *, 40);
LCTX_FIELD(llama_model_params, kv_overrides, const struct llama_model_kv_override *, 48);
LCTX_FIELD(llama_model_params, vocab_only, bool, 56);
LCTX_FIELD(llama_model_params, use_mmap, bool, 57);
LCTX_FIELD(llama_model_params, use_mlock, bool, 58);
LCTX_FIELD(llama_model_params, check_tensors, bool, 59);
LCTX_SIZE(llama_model_params, 64);

// §4.6: 28 fields; the floats pack at 4-byte steps from rope_freq_base (36) to defrag_thold (64).
LCTX_FIELD(llama_context_params, n_ctx, uint32_t, 0);
LCTX_FIELD(llama_context_params, n_batch, uint32_t, 4);
LCTX_FIELD(llama_context_params, n_ubatch, uint32_t, 8);
LCTX_FIELD(llama_context_params, n_seq_max, uint32_t, 12);
LCTX_FIELD(llama_context_params, n_threads, int32_t, 16);
LCTX_FIELD(llama_context_params, n_threads_batch, int32_t, 20);
LCTX_FIELD(llama_context_params, rope_scaling_type, enum llama_rope_scaling_type, 24);
LCTX_FIELD(llama_context_params, pooling_type, enum llama_pooling_type, 28);
LCTX_FIELD(llama_context_params, attention_type, enum llama_attention_type, 32);
LCTX_FIELD(llama_context_params, rope_freq_base, float, 36);
LCTX_FIELD(llama_context_params, rope_freq_scale, float, 40);
LCTX_FIELD(llama_context_params, yarn_ext_factor, float, 44);
LCTX_FIELD(llama_context_params, yarn_attn_factor, float, 48);
LCTX_FIELD(llama_context_params, yarn_beta_fast, float, 52);
LCTX_FIELD(llama_context_params, yarn_beta_slow, float, 56);
LCTX_FIELD(llama_context_params, yarn_orig_ctx, uint32_t, 60);
LCTX_FIELD(llama_context_params, defrag_thold, float, 64);
LCTX_FIELD(llama_context_params, cb_eval, ggml_backend_sched_eval_callback, 72);
LCTX_FIELD(llama_context_params, cb_eval_user_data, void *, 80);
LCTX_FIELD(llama_context_params, type_k, enum ggml_type, 88);
LCTX_FIELD(llama_context_params, type_v, enum ggml_type, 92);
LCTX_FIELD(llama_context_params, logits_all, bool, 96);
LCTX_FIELD(llama_context_params, embeddings, bool, 97);
LCTX_FIELD(llama_context_params, offload_kqv, bool, 98);
LCTX_FIELD(llama_context_params, flash_attn, bool, 99);
LCTX_FIELD(llama_context_params, no_perf, bool, 100);
LCTX_FIELD(llama_context_params, abort_callback, ggml_abort_callback, 104);
LCTX_FIELD(llama_context_params, abort_callback_data, void *, 112);
LCTX_SIZE(llama_context_params, 120);

// §4.7
LCTX_FIELD(llama_model_quantize_params, nthread, int32_t, 0);
LCTX_FIELD(llama_model_quantize_params, ftype, enum llama_ftype, 4);
LCTX_FIELD(llama_model_quantize_params, output_tensor_type, enum ggml_type, 8);
LCTX_FIELD(llama_model_quantize_params, token_embedding_type, enum ggml_type, 12);
LCTX_FIELD(llama_model_quantize_params, allow_requantize, bool, 16);
LCTX_FIELD(llama_model_quantize_params, quantize_output_tensor, bool, 17);
LCTX_FIELD(llama_model_quantize_params, only_copy, bool, 18);
LCTX_FIELD(llama_model_quantize_params, pure, bool, 19);
LCTX_FIELD(llama_model_quantize_params, keep_split, bool, 20);
LCTX_FIELD(llama_model_quantize_params, imatrix, void *, 24);
LCTX_FIELD(llama_model_quantize_params, kv_overrides, void *, 32);
LCTX_SIZE(llama_model_quantize_params, 40);

// §4.8
LCTX_FIELD(llama_logit_bias, token, llama_token, 0);
LCTX_FIELD(llama_logit_bias, bias, float, 4);
LCTX_SIZE(llama_logit_bias, 8);
LCTX_FIELD(llama_sampler_chain_params, no_perf, bool, 0);
LCTX_SIZE(llama_sampler_chain_params, 1);
LCTX_FIELD(llama_chat_message, role, const char *, 0);
LCTX_FIELD(llama_chat_message, content, const char *, 8);
LCTX_SIZE(llama_chat_message, 16);

// §4.9
LCTX_FIELD(llama_kv_cache_view_cell, pos, llama_pos, 0);
LCTX_FIELD(llama_kv_cache_view, n_cells, int32_t, 0);
LCTX_FIELD(llama_kv_cache_view, n_seq_max, int32_t, 4);
LCTX_FIELD(llama_kv_cache_view, token_count, int32_t, 8);
LCTX_FIELD(llama_kv_cache_view, used_cells, int32_t, 12);
LCTX_FIELD(llama_kv_cache_view, max_contiguous, int32_t, 16);
LCTX_FIELD(llama_kv_cache_view, max_contiguous_idx, int32_t, 20);
LCTX_FIELD(llama_kv_cache_view, cells, struct llama_kv_cache_view_cell *, 24);
LCTX_FIELD(llama_kv_cache_view, cells_sequences, llama_seq_id *, 32);
LCTX_SIZE(llama_kv_cache_view, 40);

// §4.10: user code fills this table positionally, so order and exact pointer types matter.
LCTX_FIELD(llama_sampler_i, name, const char *(*)(const struct llama_sampler *), 0);
LCTX_FIELD(llama_sampler_i, accept, void (*)(struct llama_sampler *, llama_token), 8);
LCTX_FIELD(llama_sampler_i, apply, void (*)(struct llama_sampler *, llama_token_data_array *), 16);
LCTX_FIELD(llama_sampler_i, reset, void (*)(struct llama_sampler *), 24);
LCTX_FIELD(llama_sampler_i, clone, struct llama_sampler *(*)(const struct llama_sampler *), 32);
LCTX_FIELD(llama_sampler_i, free, void (*)(struct llama_sampler *), 40);
LCTX_SIZE(llama_sampler_i, 48);
LCTX_FIELD(llama_sampler, iface, const struct llama_sampler_i *, 0);
LCTX_FIELD(llama_sampler, ctx, llama_sampler_context_t, 8);
LCTX_SIZE(llama_sampler, 16);

// §4.11
LCTX_FIELD(llama_perf_context_data, t_start_ms, double, 0);
LCTX_FIELD(llama_perf_context_data, t_load_ms, double, 8);
LCTX_FIELD(llama_perf_context_data, t_p_eval_ms, double, 16);
LCTX_FIELD(llama_perf_context_data, t_eval_ms, double, 24);
LCTX_FIELD(llama_perf_context_data, n_p_eval, int32_t, 32);
LCTX_FIELD(llama_perf_context_data, n_eval, int32_t, 36);
LCTX_SIZE(llama_perf_context_data, 40);
LCTX_FIELD(llama_perf_sampler_data, t_sample_ms, double, 0);
LCTX_FIELD(llama_perf_sampler_data, n_sample, int32_t, 8);
LCTX_SIZE(llama_perf_sampler_data, 16);

// §3: every enum has int-sized storage.
static_assert(sizeof(enum llama_vocab_type) == 4 && sizeof(enum llama_vocab_pre_type) == 4);
static_assert(sizeof(enum llama_rope_type) == 4 && sizeof(enum llama_token_type) == 4);
static_assert(sizeof(enum llama_token_attr) == 4 && sizeof(enum llama_ftype) == 4);
static_assert(sizeof(enum llama_rope_scaling_type) == 4 && sizeof(enum llama_pooling_type) == 4);
static_assert(sizeof(enum llama_attention_type) == 4 && sizeof(enum llama_split_mode) == 4);
static_assert(sizeof(enum llama_model_kv_override_type) == 4 && sizeof(enum ggml_type) == 4);
static_assert(sizeof(enum ggml_log_level) == 4 && sizeof(enum ggml_numa_strategy) == 4);

#undef LCTX_FIELD
#undef LCTX_SIZE

// A four-character file magic as the big-endian u32 the file formats use.
constexpr uint32_t fourcc(const char (&s)[5]) {
    return (uint32_t(uint8_t(s[0])) << 24) | (uint32_t(uint8_t(s[1])) << 16) |
           (uint32_t(uint8_t(s[2])) << 8) | uint32_t(uint8_t(s[3]));
}

TEST(CapiConstants, MacrosHaveTheReferenceValues) {
    EXPECT_EQ(LLAMA_DEFAULT_SEED, 0xFFFFFFFFu);
    EXPECT_EQ(LLAMA_TOKEN_NULL, -1);
    // LLAMA_TOKEN_NULL must work as a llama_token and in a comparison with one.
    const llama_token none = LLAMA_TOKEN_NULL;
    EXPECT_LT(none, 0);

    EXPECT_EQ(LLAMA_FILE_MAGIC_GGLA, 0x67676c61u);
    EXPECT_EQ(LLAMA_FILE_MAGIC_GGSN, 0x6767736eu);
    EXPECT_EQ(LLAMA_FILE_MAGIC_GGSQ, 0x67677371u);
    EXPECT_EQ(LLAMA_FILE_MAGIC_GGLA, fourcc("ggla"));
    EXPECT_EQ(LLAMA_FILE_MAGIC_GGSN, fourcc("ggsn"));
    EXPECT_EQ(LLAMA_FILE_MAGIC_GGSQ, fourcc("ggsq"));

    EXPECT_EQ(LLAMA_SESSION_MAGIC, fourcc("ggsn"));
    EXPECT_EQ(LLAMA_SESSION_VERSION, 9);
    EXPECT_EQ(LLAMA_STATE_SEQ_MAGIC, fourcc("ggsq"));
    EXPECT_EQ(LLAMA_STATE_SEQ_VERSION, 2);

    // Unsigned like the reference: these are compared with u32 values read from files.
    static_assert(std::is_unsigned_v<decltype(LLAMA_DEFAULT_SEED)>);
    static_assert(std::is_unsigned_v<decltype(LLAMA_SESSION_MAGIC)>);
    static_assert(std::is_unsigned_v<decltype(LLAMA_STATE_SEQ_MAGIC)>);
}

TEST(CapiConstants, GgmlMacrosHaveTheReferenceValues) {
    EXPECT_EQ(GGML_ROPE_TYPE_NEOX, 2);
    EXPECT_EQ(GGML_ROPE_TYPE_MROPE, 8);
    EXPECT_EQ(GGML_ROPE_TYPE_VISION, 24);
    EXPECT_EQ(GGML_DEFAULT_N_THREADS, 4);
}

TEST(CapiEnums, VocabType) {
    EXPECT_EQ(LLAMA_VOCAB_TYPE_NONE, 0);
    EXPECT_EQ(LLAMA_VOCAB_TYPE_SPM, 1);
    EXPECT_EQ(LLAMA_VOCAB_TYPE_BPE, 2);
    EXPECT_EQ(LLAMA_VOCAB_TYPE_WPM, 3);
    EXPECT_EQ(LLAMA_VOCAB_TYPE_UGM, 4);
    EXPECT_EQ(LLAMA_VOCAB_TYPE_RWKV, 5);
}

TEST(CapiEnums, VocabPreType) {
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_DEFAULT, 0);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_LLAMA3, 1);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM, 2);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_CODER, 3);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_FALCON, 4);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_MPT, 5);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_STARCODER, 6);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_GPT2, 7);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_REFACT, 8);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_COMMAND_R, 9);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_STABLELM2, 10);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_QWEN2, 11);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_OLMO, 12);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_DBRX, 13);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_SMAUG, 14);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_PORO, 15);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_CHATGLM3, 16);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_CHATGLM4, 17);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_VIKING, 18);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_JAIS, 19);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_TEKKEN, 20);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_SMOLLM, 21);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_CODESHELL, 22);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_BLOOM, 23);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_GPT3_FINNISH, 24);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_EXAONE, 25);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_CHAMELEON, 26);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_MINERVA, 27);
    EXPECT_EQ(LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM, 28);
}

TEST(CapiEnums, RopeType) {
    EXPECT_EQ(LLAMA_ROPE_TYPE_NONE, -1);
    EXPECT_EQ(LLAMA_ROPE_TYPE_NORM, 0);
    EXPECT_EQ(LLAMA_ROPE_TYPE_NEOX, 2);
    EXPECT_EQ(LLAMA_ROPE_TYPE_MROPE, 8);
    EXPECT_EQ(LLAMA_ROPE_TYPE_VISION, 24);
}

TEST(CapiEnums, TokenTypeAndAttr) {
    EXPECT_EQ(LLAMA_TOKEN_TYPE_UNDEFINED, 0);
    EXPECT_EQ(LLAMA_TOKEN_TYPE_NORMAL, 1);
    EXPECT_EQ(LLAMA_TOKEN_TYPE_UNKNOWN, 2);
    EXPECT_EQ(LLAMA_TOKEN_TYPE_CONTROL, 3);
    EXPECT_EQ(LLAMA_TOKEN_TYPE_USER_DEFINED, 4);
    EXPECT_EQ(LLAMA_TOKEN_TYPE_UNUSED, 5);
    EXPECT_EQ(LLAMA_TOKEN_TYPE_BYTE, 6);

    EXPECT_EQ(LLAMA_TOKEN_ATTR_UNDEFINED, 0);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_UNKNOWN, 1);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_UNUSED, 2);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_NORMAL, 4);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_CONTROL, 8);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_USER_DEFINED, 16);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_BYTE, 32);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_NORMALIZED, 64);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_LSTRIP, 128);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_RSTRIP, 256);
    EXPECT_EQ(LLAMA_TOKEN_ATTR_SINGLE_WORD, 512);
}

TEST(CapiEnums, Ftype) {
    EXPECT_EQ(LLAMA_FTYPE_ALL_F32, 0);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_F16, 1);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q4_0, 2);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q4_1, 3);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q8_0, 7);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q5_0, 8);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q5_1, 9);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q2_K, 10);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q3_K_S, 11);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q3_K_M, 12);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q3_K_L, 13);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q4_K_S, 14);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q4_K_M, 15);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q5_K_S, 16);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q5_K_M, 17);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q6_K, 18);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ2_XXS, 19);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ2_XS, 20);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_Q2_K_S, 21);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ3_XS, 22);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ3_XXS, 23);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ1_S, 24);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ4_NL, 25);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ3_S, 26);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ3_M, 27);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ2_S, 28);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ2_M, 29);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ4_XS, 30);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_IQ1_M, 31);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_BF16, 32);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_TQ1_0, 36);
    EXPECT_EQ(LLAMA_FTYPE_MOSTLY_TQ2_0, 37);
    EXPECT_EQ(LLAMA_FTYPE_GUESSED, 1024);
}

TEST(CapiEnums, ContextEnums) {
    EXPECT_EQ(LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED, -1);
    EXPECT_EQ(LLAMA_ROPE_SCALING_TYPE_NONE, 0);
    EXPECT_EQ(LLAMA_ROPE_SCALING_TYPE_LINEAR, 1);
    EXPECT_EQ(LLAMA_ROPE_SCALING_TYPE_YARN, 2);
    EXPECT_EQ(LLAMA_ROPE_SCALING_TYPE_LONGROPE, 3);
    EXPECT_EQ(LLAMA_ROPE_SCALING_TYPE_MAX_VALUE, 3);

    EXPECT_EQ(LLAMA_POOLING_TYPE_UNSPECIFIED, -1);
    EXPECT_EQ(LLAMA_POOLING_TYPE_NONE, 0);
    EXPECT_EQ(LLAMA_POOLING_TYPE_MEAN, 1);
    EXPECT_EQ(LLAMA_POOLING_TYPE_CLS, 2);
    EXPECT_EQ(LLAMA_POOLING_TYPE_LAST, 3);
    EXPECT_EQ(LLAMA_POOLING_TYPE_RANK, 4);

    EXPECT_EQ(LLAMA_ATTENTION_TYPE_UNSPECIFIED, -1);
    EXPECT_EQ(LLAMA_ATTENTION_TYPE_CAUSAL, 0);
    EXPECT_EQ(LLAMA_ATTENTION_TYPE_NON_CAUSAL, 1);

    EXPECT_EQ(LLAMA_SPLIT_MODE_NONE, 0);
    EXPECT_EQ(LLAMA_SPLIT_MODE_LAYER, 1);
    EXPECT_EQ(LLAMA_SPLIT_MODE_ROW, 2);

    EXPECT_EQ(LLAMA_KV_OVERRIDE_TYPE_INT, 0);
    EXPECT_EQ(LLAMA_KV_OVERRIDE_TYPE_FLOAT, 1);
    EXPECT_EQ(LLAMA_KV_OVERRIDE_TYPE_BOOL, 2);
    EXPECT_EQ(LLAMA_KV_OVERRIDE_TYPE_STR, 3);
}

TEST(CapiEnums, GgmlType) {
    EXPECT_EQ(GGML_TYPE_F32, 0);
    EXPECT_EQ(GGML_TYPE_F16, 1);
    EXPECT_EQ(GGML_TYPE_Q4_0, 2);
    EXPECT_EQ(GGML_TYPE_Q4_1, 3);
    EXPECT_EQ(GGML_TYPE_Q5_0, 6);
    EXPECT_EQ(GGML_TYPE_Q5_1, 7);
    EXPECT_EQ(GGML_TYPE_Q8_0, 8);
    EXPECT_EQ(GGML_TYPE_Q8_1, 9);
    EXPECT_EQ(GGML_TYPE_Q2_K, 10);
    EXPECT_EQ(GGML_TYPE_Q3_K, 11);
    EXPECT_EQ(GGML_TYPE_Q4_K, 12);
    EXPECT_EQ(GGML_TYPE_Q5_K, 13);
    EXPECT_EQ(GGML_TYPE_Q6_K, 14);
    EXPECT_EQ(GGML_TYPE_Q8_K, 15);
    EXPECT_EQ(GGML_TYPE_IQ2_XXS, 16);
    EXPECT_EQ(GGML_TYPE_IQ2_XS, 17);
    EXPECT_EQ(GGML_TYPE_IQ3_XXS, 18);
    EXPECT_EQ(GGML_TYPE_IQ1_S, 19);
    EXPECT_EQ(GGML_TYPE_IQ4_NL, 20);
    EXPECT_EQ(GGML_TYPE_IQ3_S, 21);
    EXPECT_EQ(GGML_TYPE_IQ2_S, 22);
    EXPECT_EQ(GGML_TYPE_IQ4_XS, 23);
    EXPECT_EQ(GGML_TYPE_I8, 24);
    EXPECT_EQ(GGML_TYPE_I16, 25);
    EXPECT_EQ(GGML_TYPE_I32, 26);
    EXPECT_EQ(GGML_TYPE_I64, 27);
    EXPECT_EQ(GGML_TYPE_F64, 28);
    EXPECT_EQ(GGML_TYPE_IQ1_M, 29);
    EXPECT_EQ(GGML_TYPE_BF16, 30);
    EXPECT_EQ(GGML_TYPE_TQ1_0, 34);
    EXPECT_EQ(GGML_TYPE_TQ2_0, 35);
    EXPECT_EQ(GGML_TYPE_COUNT, 39);
}

TEST(CapiEnums, GgmlLogLevelAndNuma) {
    EXPECT_EQ(GGML_LOG_LEVEL_NONE, 0);
    EXPECT_EQ(GGML_LOG_LEVEL_DEBUG, 1);
    EXPECT_EQ(GGML_LOG_LEVEL_INFO, 2);
    EXPECT_EQ(GGML_LOG_LEVEL_WARN, 3);
    EXPECT_EQ(GGML_LOG_LEVEL_ERROR, 4);
    EXPECT_EQ(GGML_LOG_LEVEL_CONT, 5);

    EXPECT_EQ(GGML_NUMA_STRATEGY_DISABLED, 0);
    EXPECT_EQ(GGML_NUMA_STRATEGY_DISTRIBUTE, 1);
    EXPECT_EQ(GGML_NUMA_STRATEGY_ISOLATE, 2);
    EXPECT_EQ(GGML_NUMA_STRATEGY_NUMACTL, 3);
    EXPECT_EQ(GGML_NUMA_STRATEGY_MIRROR, 4);
    EXPECT_EQ(GGML_NUMA_STRATEGY_COUNT, 5);

    EXPECT_EQ(GGML_BACKEND_DEVICE_TYPE_CPU, 0);
    EXPECT_EQ(GGML_BACKEND_DEVICE_TYPE_GPU, 1);
    EXPECT_EQ(GGML_BACKEND_DEVICE_TYPE_ACCEL, 2);
}

}  // namespace
}  // namespace layout_test
