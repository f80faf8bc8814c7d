// Importance-weighted quantizers (see weighted_quants.h).
#include "quantize/weighted_quants.h"

namespace lctx::quantize {

WeightedRowFn weighted_quantizer(GgmlType) { return nullptr; }

}  // namespace lctx::quantize
