/* Compiled by c_compile_test.cpp: each of these 35 functions must draw a deprecation warning. */
#include "llama.h"

typedef void (*any_fn)(void);

extern const any_fn lctx_capi_deprecated[];
const any_fn lctx_capi_deprecated[] = {
    (any_fn)llama_add_bos_token,
    (any_fn)llama_add_eos_token,
    (any_fn)llama_copy_state_data,
    (any_fn)llama_free_model,
    (any_fn)llama_get_state_size,
    (any_fn)llama_load_model_from_file,
    (any_fn)llama_load_session_file,
    (any_fn)llama_n_ctx_train,
    (any_fn)llama_n_embd,
    (any_fn)llama_n_head,
    (any_fn)llama_n_layer,
    (any_fn)llama_n_vocab,
    (any_fn)llama_new_context_with_model,
    (any_fn)llama_sampler_init_softmax,
    (any_fn)llama_save_session_file,
    (any_fn)llama_set_state_data,
    (any_fn)llama_token_bos,
    (any_fn)llama_token_cls,
    (any_fn)llama_token_eos,
    (any_fn)llama_token_eot,
    (any_fn)llama_token_fim_mid,
    (any_fn)llama_token_fim_pad,
    (any_fn)llama_token_fim_pre,
    (any_fn)llama_token_fim_rep,
    (any_fn)llama_token_fim_sep,
    (any_fn)llama_token_fim_suf,
    (any_fn)llama_token_get_attr,
    (any_fn)llama_token_get_score,
    (any_fn)llama_token_get_text,
    (any_fn)llama_token_is_control,
    (any_fn)llama_token_is_eog,
    (any_fn)llama_token_nl,
    (any_fn)llama_token_pad,
    (any_fn)llama_token_sep,
    (any_fn)llama_vocab_cls,
};
