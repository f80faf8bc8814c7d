// C++ ownership helpers for the llama.h handles: std::unique_ptr types whose deleters call the matching
// free function. Same names as llama.cpp's llama-cpp.h, so C++ code written for it compiles unchanged.
#pragma once

#ifndef __cplusplus
#error "llama-cpp.h is for C++ only; C code uses llama.h directly"
#endif

#include <memory>

#include "llama.h"

struct llama_model_deleter {
    void operator()(llama_model *model) { llama_model_free(model); }
};

struct llama_context_deleter {
    void operator()(llama_context *context) { llama_free(context); }
};

struct llama_sampler_deleter {
    void operator()(llama_sampler *sampler) { llama_sampler_free(sampler); }
};

struct llama_adapter_lora_deleter {
    void operator()(llama_adapter_lora *adapter) { llama_adapter_lora_free(adapter); }
};

typedef std::unique_ptr<llama_model, llama_model_deleter> llama_model_ptr;
typedef std::unique_ptr<llama_context, llama_context_deleter> llama_context_ptr;
typedef std::unique_ptr<llama_sampler, llama_sampler_deleter> llama_sampler_ptr;
typedef std::unique_ptr<llama_adapter_lora, llama_adapter_lora_deleter> llama_adapter_lora_ptr;
