// What the commands written over llama.h share: owning handles for its model, context and samplers, and its
// log silenced except for the last error line, which a command adds to its one-line report.
#pragma once
#include <memory>
#include <string>

#include "llama.h"

namespace lctx::cli {

struct ModelFree {
    void operator()(llama_model *m) const { llama_model_free(m); }
};
struct ContextFree {
    void operator()(llama_context *c) const { llama_free(c); }
};
struct SamplerFree {
    void operator()(llama_sampler *s) const { llama_sampler_free(s); }
};
using ModelPtr = std::unique_ptr<llama_model, ModelFree>;
using ContextPtr = std::unique_ptr<llama_context, ContextFree>;
using SamplerPtr = std::unique_ptr<llama_sampler, SamplerFree>;

// Routes llama.h's log to a sink that prints nothing and keeps the last error line.
void capture_capi_errors();
// ": " and the last error line llama.h logged, or "" when none.
std::string capi_error_suffix();
// The last error line llama.h logged without the function that logged it ("llama_x: REASON" gives
// REASON), or "unknown error" when none.
std::string capi_last_error();

}  // namespace lctx::cli
