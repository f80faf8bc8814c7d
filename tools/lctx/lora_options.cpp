#include "tools/lctx/lora_options.h"

#include <cstdio>

namespace lctx::cli {

bool load_loras_or_report(const Model &model, const std::vector<LoraOption> &opts, const char *cmd,
                          std::vector<std::shared_ptr<const LoraAdapter>> &out) {
    for (const LoraOption &o : opts) {
        try {
            out.push_back(LoraAdapter::load(model, o.path));
        } catch (const std::exception &e) {
            std::fprintf(stderr, "lctx %s: --lora %s: %s\n", cmd, o.path.c_str(), e.what());
            return false;
        }
    }
    return true;
}

void apply_loras(Context &ctx, const std::vector<LoraOption> &opts,
                 const std::vector<std::shared_ptr<const LoraAdapter>> &adapters) {
    for (size_t i = 0; i < adapters.size() && i < opts.size(); ++i)
        ctx.lora().set(adapters[i], opts[i].scale);
}

}  // namespace lctx::cli
