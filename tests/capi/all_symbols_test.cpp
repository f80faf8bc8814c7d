// Every function llama.h declares (and the ggml functions programs call): the test binary takes each one's
// address, so it fails to link if any lacks a definition, and the shared library programs link (liblctx.so)
// must export each name.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "llama.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
namespace all_symbols_test {
namespace {
using AnyFn = void (*)();
struct Fn {
    const char *name;
    AnyFn address;
};
// clang-format off
#define LCTX_FN(f) Fn{#f, reinterpret_cast<AnyFn>(&f)}
// clang-format on
const Fn kAll[] = {
    LCTX_FN(llama_model_default_params),
    LCTX_FN(llama_context_default_params),
    LCTX_FN(llama_sampler_chain_default_params),
    LCTX_FN(llama_model_quantize_default_params),
    LCTX_FN(llama_backend_init),
    LCTX_FN(llama_backend_free),
    LCTX_FN(llama_numa_init),
    LCTX_FN(llama_attach_threadpool),
    LCTX_FN(llama_detach_threadpool),
    LCTX_FN(llama_load_model_from_file),
    LCTX_FN(llama_model_load_from_file),
    LCTX_FN(llama_model_load_from_splits),
    LCTX_FN(llama_free_model),
    LCTX_FN(llama_model_free),
    LCTX_FN(llama_init_from_model),
    LCTX_FN(llama_new_context_with_model),
    LCTX_FN(llama_free),
    LCTX_FN(llama_time_us),
    LCTX_FN(llama_max_devices),
    LCTX_FN(llama_supports_mmap),
    LCTX_FN(llama_supports_mlock),
    LCTX_FN(llama_supports_gpu_offload),
    LCTX_FN(llama_supports_rpc),
    LCTX_FN(llama_n_ctx),
    LCTX_FN(llama_n_batch),
    LCTX_FN(llama_n_ubatch),
    LCTX_FN(llama_n_seq_max),
    LCTX_FN(llama_n_ctx_train),
    LCTX_FN(llama_n_embd),
    LCTX_FN(llama_n_layer),
    LCTX_FN(llama_n_head),
    LCTX_FN(llama_n_vocab),
    LCTX_FN(llama_get_model),
    LCTX_FN(llama_pooling_type),
    LCTX_FN(llama_model_get_vocab),
    LCTX_FN(llama_model_rope_type),
    LCTX_FN(llama_model_n_ctx_train),
    LCTX_FN(llama_model_n_embd),
    LCTX_FN(llama_model_n_layer),
    LCTX_FN(llama_model_n_head),
    LCTX_FN(llama_model_rope_freq_scale_train),
    LCTX_FN(llama_vocab_type),
    LCTX_FN(llama_vocab_n_tokens),
    LCTX_FN(llama_model_meta_val_str),
    LCTX_FN(llama_model_meta_count),
    LCTX_FN(llama_model_meta_key_by_index),
    LCTX_FN(llama_model_meta_val_str_by_index),
    LCTX_FN(llama_model_desc),
    LCTX_FN(llama_model_size),
    LCTX_FN(llama_model_chat_template),
    LCTX_FN(llama_model_n_params),
    LCTX_FN(llama_model_has_encoder),
    LCTX_FN(llama_model_has_decoder),
    LCTX_FN(llama_model_decoder_start_token),
    LCTX_FN(llama_model_is_recurrent),
    LCTX_FN(llama_model_quantize),
    LCTX_FN(llama_adapter_lora_init),
    LCTX_FN(llama_adapter_lora_free),
    LCTX_FN(llama_set_adapter_lora),
    LCTX_FN(llama_rm_adapter_lora),
    LCTX_FN(llama_clear_adapter_lora),
    LCTX_FN(llama_apply_adapter_cvec),
    LCTX_FN(llama_kv_cache_view_init),
    LCTX_FN(llama_kv_cache_view_free),
    LCTX_FN(llama_kv_cache_view_update),
    LCTX_FN(llama_get_kv_cache_token_count),
    LCTX_FN(llama_get_kv_cache_used_cells),
    LCTX_FN(llama_kv_cache_clear),
    LCTX_FN(llama_kv_cache_seq_rm),
    LCTX_FN(llama_kv_cache_seq_cp),
    LCTX_FN(llama_kv_cache_seq_keep),
    LCTX_FN(llama_kv_cache_seq_add),
    LCTX_FN(llama_kv_cache_seq_div),
    LCTX_FN(llama_kv_cache_seq_pos_max),
    LCTX_FN(llama_kv_cache_defrag),
    LCTX_FN(llama_kv_cache_update),
    LCTX_FN(llama_kv_cache_can_shift),
    LCTX_FN(llama_state_get_size),
    LCTX_FN(llama_get_state_size),
    LCTX_FN(llama_state_get_data),
    LCTX_FN(llama_copy_state_data),
    LCTX_FN(llama_state_set_data),
    LCTX_FN(llama_set_state_data),
    LCTX_FN(llama_state_load_file),
    LCTX_FN(llama_load_session_file),
    LCTX_FN(llama_state_save_file),
    LCTX_FN(llama_save_session_file),
    LCTX_FN(llama_state_seq_get_size),
    LCTX_FN(llama_state_seq_get_data),
    LCTX_FN(llama_state_seq_set_data),
    LCTX_FN(llama_state_seq_save_file),
    LCTX_FN(llama_state_seq_load_file),
    LCTX_FN(llama_batch_get_one),
    LCTX_FN(llama_batch_init),
    LCTX_FN(llama_batch_free),
    LCTX_FN(llama_encode),
    LCTX_FN(llama_decode),
    LCTX_FN(llama_set_n_threads),
    LCTX_FN(llama_n_threads),
    LCTX_FN(llama_n_threads_batch),
    LCTX_FN(llama_set_embeddings),
    LCTX_FN(llama_set_causal_attn),
    LCTX_FN(llama_set_abort_callback),
    LCTX_FN(llama_synchronize),
    LCTX_FN(llama_get_logits),
    LCTX_FN(llama_get_logits_ith),
    LCTX_FN(llama_get_embeddings),
    LCTX_FN(llama_get_embeddings_ith),
    LCTX_FN(llama_get_embeddings_seq),
    LCTX_FN(llama_vocab_get_text),
    LCTX_FN(llama_vocab_get_score),
    LCTX_FN(llama_vocab_get_attr),
    LCTX_FN(llama_vocab_is_eog),
    LCTX_FN(llama_vocab_is_control),
    LCTX_FN(llama_vocab_bos),
    LCTX_FN(llama_vocab_eos),
    LCTX_FN(llama_vocab_eot),
    LCTX_FN(llama_vocab_sep),
    LCTX_FN(llama_vocab_nl),
    LCTX_FN(llama_vocab_pad),
    LCTX_FN(llama_vocab_get_add_bos),
    LCTX_FN(llama_vocab_get_add_eos),
    LCTX_FN(llama_vocab_fim_pre),
    LCTX_FN(llama_vocab_fim_suf),
    LCTX_FN(llama_vocab_fim_mid),
    LCTX_FN(llama_vocab_fim_pad),
    LCTX_FN(llama_vocab_fim_rep),
    LCTX_FN(llama_vocab_fim_sep),
    LCTX_FN(llama_token_get_text),
    LCTX_FN(llama_token_get_score),
    LCTX_FN(llama_token_get_attr),
    LCTX_FN(llama_token_is_eog),
    LCTX_FN(llama_token_is_control),
    LCTX_FN(llama_token_bos),
    LCTX_FN(llama_token_eos),
    LCTX_FN(llama_token_eot),
    LCTX_FN(llama_token_cls),
    LCTX_FN(llama_token_sep),
    LCTX_FN(llama_token_nl),
    LCTX_FN(llama_token_pad),
    LCTX_FN(llama_add_bos_token),
    LCTX_FN(llama_add_eos_token),
    LCTX_FN(llama_token_fim_pre),
    LCTX_FN(llama_token_fim_suf),
    LCTX_FN(llama_token_fim_mid),
    LCTX_FN(llama_token_fim_pad),
    LCTX_FN(llama_token_fim_rep),
    LCTX_FN(llama_token_fim_sep),
    LCTX_FN(llama_vocab_cls),
    LCTX_FN(llama_tokenize),
    LCTX_FN(llama_token_to_piece),
    LCTX_FN(llama_detokenize),
    LCTX_FN(llama_chat_apply_template),
    LCTX_FN(llama_chat_builtin_templates),
    LCTX_FN(llama_sampler_init),
    LCTX_FN(llama_sampler_name),
    LCTX_FN(llama_sampler_accept),
    LCTX_FN(llama_sampler_apply),
    LCTX_FN(llama_sampler_reset),
    LCTX_FN(llama_sampler_clone),
    LCTX_FN(llama_sampler_free),
    LCTX_FN(llama_sampler_chain_init),
    LCTX_FN(llama_sampler_chain_add),
    LCTX_FN(llama_sampler_chain_get),
    LCTX_FN(llama_sampler_chain_n),
    LCTX_FN(llama_sampler_chain_remove),
    LCTX_FN(llama_sampler_init_greedy),
    LCTX_FN(llama_sampler_init_dist),
    LCTX_FN(llama_sampler_init_softmax),
    LCTX_FN(llama_sampler_init_top_k),
    LCTX_FN(llama_sampler_init_top_p),
    LCTX_FN(llama_sampler_init_min_p),
    LCTX_FN(llama_sampler_init_typical),
    LCTX_FN(llama_sampler_init_temp),
    LCTX_FN(llama_sampler_init_temp_ext),
    LCTX_FN(llama_sampler_init_xtc),
    LCTX_FN(llama_sampler_init_top_n_sigma),
    LCTX_FN(llama_sampler_init_mirostat),
    LCTX_FN(llama_sampler_init_mirostat_v2),
    LCTX_FN(llama_sampler_init_grammar),
    LCTX_FN(llama_sampler_init_grammar_lazy),
    LCTX_FN(llama_sampler_init_penalties),
    LCTX_FN(llama_sampler_init_dry),
    LCTX_FN(llama_sampler_init_logit_bias),
    LCTX_FN(llama_sampler_init_infill),
    LCTX_FN(llama_sampler_get_seed),
    LCTX_FN(llama_sampler_sample),
    LCTX_FN(llama_split_path),
    LCTX_FN(llama_split_prefix),
    LCTX_FN(llama_print_system_info),
    LCTX_FN(llama_log_set),
    LCTX_FN(llama_perf_context),
    LCTX_FN(llama_perf_context_print),
    LCTX_FN(llama_perf_context_reset),
    LCTX_FN(llama_perf_sampler),
    LCTX_FN(llama_perf_sampler_print),
    LCTX_FN(llama_perf_sampler_reset),
    LCTX_FN(ggml_backend_load_all),
    LCTX_FN(ggml_time_us),
    LCTX_FN(ggml_type_name),
};
#undef LCTX_FN
}  // namespace
#pragma GCC diagnostic pop

// The dynamic symbols liblctx.so defines (nm -D), empty when it cannot be read.
std::set<std::string> exported_names(const std::string &lib) {
    std::set<std::string> names;
    FILE *p = popen(("nm -D --defined-only " + lib + " 2>/dev/null").c_str(), "r");
    if (!p) return names;
    char line[1024];
    while (std::fgets(line, sizeof line, p)) {
        std::string l(line);
        while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
        const size_t sp = l.rfind(' ');
        names.insert(sp == std::string::npos ? l : l.substr(sp + 1));
    }
    pclose(p);
    return names;
}

TEST(CapiSymbols, EveryDeclaredFunctionIsExportedByTheSharedLibrary) {
    EXPECT_EQ(sizeof(kAll) / sizeof(kAll[0]), 200u);
    const std::string lib = std::string(LCTX_BIN_DIR) + "/../lib/liblctx.so";
    const std::set<std::string> exported = exported_names(lib);
    ASSERT_FALSE(exported.empty()) << "cannot list the symbols of " << lib << " (nm -D)";
    for (const Fn &f : kAll) EXPECT_EQ(exported.count(f.name), 1u) << f.name << " not exported by " << lib;
}
}  // namespace all_symbols_test
