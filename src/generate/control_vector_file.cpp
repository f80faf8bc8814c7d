#include "generate/control_vector_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "generate/capi_log.h"
#include "lctx/lctx_ext.h"

namespace lctx::generate {

namespace {

// One file through the engine; false with *why set.
bool load_one(const ControlVectorSource &src, ControlVector *out, std::string *why) {
    lctx_control_vector cv{};
    if (!capi_call([&] { return lctx_control_vector_load(src.path.c_str(), src.scale, &cv) == 0; }, why))
        return false;
    out->n_embd = cv.n_embd;
    out->data.assign(cv.data, cv.data + cv.len);
    out->model_hint = cv.model_hint;
    out->layer_count = cv.layer_count;
    lctx_control_vector_free(&cv);
    return true;
}

}  // namespace

bool control_vector_load(const std::vector<ControlVectorSource> &sources, ControlVector *out,
                         std::string *why) {
    ControlVector sum;
    for (const ControlVectorSource &src : sources) {
        ControlVector one;
        if (!load_one(src, &one, why)) return false;
        if (sum.n_embd == 0) {
            sum = std::move(one);
            continue;
        }
        if (one.n_embd != sum.n_embd) {
            *why = src.path + ": its directions have " + std::to_string(one.n_embd) +
                   " values, those of the files before it " + std::to_string(sum.n_embd);
            return false;
        }
        if (sum.data.size() < one.data.size()) sum.data.resize(one.data.size(), 0.0f);
        for (size_t i = 0; i < one.data.size(); ++i) sum.data[i] += one.data[i];
        sum.layer_count = std::max(sum.layer_count, one.layer_count);
        if (sum.model_hint.empty()) sum.model_hint = one.model_hint;
    }
    *out = std::move(sum);
    return true;
}

bool parse_control_vector_arg(const std::string &arg, ControlVectorSource *out, std::string *why) {
    out->path = arg;
    out->scale = 1.0f;
    const size_t colon = arg.rfind(':');
    struct stat st {};
    if (colon == std::string::npos || stat(arg.c_str(), &st) == 0) return true;
    const std::string tail = arg.substr(colon + 1);
    char *end = nullptr;
    const float v = std::strtof(tail.c_str(), &end);
    if (tail.empty() || end != tail.c_str() + tail.size()) return true;  // not a number: part of the path
    if (!std::isfinite(v)) {
        *why = "'" + arg + "': the scale after ':' must be a finite number";
        return false;
    }
    out->path = arg.substr(0, colon);
    out->scale = v;
    return true;
}

}  // namespace lctx::generate
