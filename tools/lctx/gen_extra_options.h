// The engine-side form of run's and chat's RoPE options, for the commands still over the internal classes:
// the context's overrides.
#pragma once
#include <string>
#include <vector>

#include "model/forward.h"
#include "tools/lctx/gen_args.h"

namespace lctx::cli {

// The overrides a context takes from them; the first problem as one line, or "".
std::string rope_overrides(const RopeArgs &r, RopeOverrides *out);

}  // namespace lctx::cli
