// Everything the sampling layer offers, in one include: the interface and chain, the candidate
// helpers, and every built-in sampler.
#pragma once
#include "sampling/candidates.h"   // IWYU pragma: export
#include "sampling/logit_bias.h"   // IWYU pragma: export
#include "sampling/mirostat.h"     // IWYU pragma: export
#include "sampling/penalties.h"    // IWYU pragma: export
#include "sampling/sampler.h"      // IWYU pragma: export
#include "sampling/selectors.h"    // IWYU pragma: export
#include "sampling/temperature.h"  // IWYU pragma: export
#include "sampling/token_data.h"   // IWYU pragma: export
#include "sampling/truncation.h"   // IWYU pragma: export
