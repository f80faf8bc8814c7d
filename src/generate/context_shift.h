// What a generation does when its sequence fills the context: llama.cpp's context shift over llama.h. The
// first n_keep tokens stay, half of the rest (the oldest) go, and the remainder moves back to follow the
// kept ones; or, with shifting off or impossible, the generation stops.
#pragma once
#include <cstdint>

#include "llama.h"

namespace lctx::generate {

struct ContextShift {
    bool enabled = true;
    int32_t n_keep = 0;  // tokens at the start of the sequence that are never dropped
};

// Shifts sequence `seq` of ctx by the policy: returns how many tokens were dropped (the positions after the
// kept ones are now that many lower), or 0 when nothing could go: shifting is off, the cache cannot shift
// (a recurrent state), or the kept tokens fill the sequence. 0 means the generation must stop.
int32_t shift_context(llama_context *ctx, llama_seq_id seq, const ContextShift &policy);

}  // namespace lctx::generate
