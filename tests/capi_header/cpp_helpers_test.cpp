// llama-cpp.h: the C++ ownership helpers that C++ code written for b4748 uses (LLAMA-API.md §0.0).
// Only types are checked (at compile time): even destroying a smart pointer would odr-use the deleter and
// so need the library's free functions at link time.
#include <memory>
#include <type_traits>

#include "llama-cpp.h"

namespace cpp_helpers_test {
namespace {

static_assert(std::is_same_v<llama_model_ptr, std::unique_ptr<llama_model, llama_model_deleter>>);
static_assert(std::is_same_v<llama_context_ptr, std::unique_ptr<llama_context, llama_context_deleter>>);
static_assert(std::is_same_v<llama_sampler_ptr, std::unique_ptr<llama_sampler, llama_sampler_deleter>>);
static_assert(
    std::is_same_v<llama_adapter_lora_ptr, std::unique_ptr<llama_adapter_lora, llama_adapter_lora_deleter>>);

static_assert(std::is_invocable_r_v<void, llama_model_deleter, llama_model *>);
static_assert(std::is_invocable_r_v<void, llama_context_deleter, llama_context *>);
static_assert(std::is_invocable_r_v<void, llama_sampler_deleter, llama_sampler *>);
static_assert(std::is_invocable_r_v<void, llama_adapter_lora_deleter, llama_adapter_lora *>);

// The deleters are empty, so the smart pointers cost no more than a raw pointer.
static_assert(sizeof(llama_model_ptr) == sizeof(llama_model *));
static_assert(sizeof(llama_sampler_ptr) == sizeof(llama_sampler *));

}  // namespace
}  // namespace cpp_helpers_test
