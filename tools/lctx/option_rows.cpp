#include "tools/lctx/option_rows.h"

#include <cmath>
#include <sstream>

namespace lctx::cli {

std::string check_float(const char *name, float v, float lo, float hi, const char *range) {
    if (!std::isfinite(v)) return std::string(name) + ": " + std::to_string(v) + " is not a finite number";
    if (v < lo || v > hi) {
        std::ostringstream s;
        s << name << ": " << v << " is out of range (" << range << ")";
        return s.str();
    }
    return "";
}

std::string check_int(const char *name, int64_t v, int64_t lo, int64_t hi, const char *range) {
    if (v < lo || v > hi)
        return std::string(name) + ": " + std::to_string(v) + " is out of range (" + range + ")";
    return "";
}

}  // namespace lctx::cli
