// The control-vector options installed on the internal context, for chat (run: control_vector_options.cpp,
// through llama.h).
#include "context/context.h"
#include "model/model.h"
#include "tools/lctx/control_vector_options.h"

namespace lctx::cli {

std::string apply_control_vector_options(const ControlVectorOptions &o, const Model &model, Context &ctx,
                                         bool quiet, const char *cmd) {
    ControlVectorPlan p;
    if (std::string e = plan_control_vector(o, static_cast<int32_t>(model.hparams().n_layer),
                                            static_cast<int32_t>(model.hparams().n_embd), quiet, cmd, &p);
        !e.empty() || p.data.empty())
        return e;
    ctx.set_control_vector(p.data.data(), p.data.size(), p.n_embd, p.start, p.end);
    return "";
}

}  // namespace lctx::cli
