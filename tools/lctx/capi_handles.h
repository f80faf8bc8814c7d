// What the commands written over llama.h share: owning handles for its model, context and samplers, and its
// log silenced except for the last error line (generate/capi_log.h), which a command adds to its one-line
// report.
#pragma once
#include <memory>
#include <string>

#include "generate/capi_log.h"
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

// llama.h's log silenced but for the last error line (generate/capi_log.h).
using generate::capi_error_suffix;
using generate::capi_last_error;
using generate::capture_capi_errors;

}  // namespace lctx::cli
