#include "generate/control_vector_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "gguf/gguf.h"
#include "util/error.h"

namespace lctx::generate {

namespace {

// N of "direction.N": decimal digits only, 1 .. kMaxControlVectorLayer; -1 otherwise.
int64_t direction_layer(const std::string &name) {
    static const std::string prefix = "direction.";
    if (name.compare(0, prefix.size(), prefix) != 0 || name.size() == prefix.size()) return -1;
    int64_t n = 0;
    for (size_t i = prefix.size(); i < name.size(); ++i) {
        const char c = name[i];
        if (c < '0' || c > '9') return -1;
        n = n * 10 + (c - '0');
        if (n > kMaxControlVectorLayer) return -1;
    }
    return n;
}

}  // namespace

ControlVector control_vector_read(const gguf::File &file, float scale, const std::string &name) {
    ControlVector cv;
    if (file.tensors().empty()) throw Error(name + ": no direction tensors (direction.1, direction.2, ...)");
    for (const gguf::TensorInfo &t : file.tensors()) {
        const int64_t layer = direction_layer(t.name);
        if (layer < 1)
            throw Error(name + ": tensor '" + t.name +
                        "' is not a direction: control-vector tensors are named "
                        "direction.N with N a layer from 1 to " +
                        std::to_string(kMaxControlVectorLayer));
        if (t.type != GgmlType::F32) throw Error(name + ": tensor '" + t.name + "' is not F32");
        for (size_t d = 1; d < t.ne.size(); ++d)
            if (t.ne[d] != 1) throw Error(name + ": tensor '" + t.name + "' is not one-dimensional");
        const int64_t n = t.ne.empty() ? 0 : t.ne[0];
        if (n < 1 || n > (int64_t{1} << 20))
            throw Error(name + ": tensor '" + t.name + "' has " + std::to_string(n) + " values");
        if (cv.n_embd == 0) {
            cv.n_embd = static_cast<int32_t>(n);
        } else if (n != cv.n_embd) {
            throw Error(name + ": tensor '" + t.name + "' has " + std::to_string(n) + " values, the others " +
                        std::to_string(cv.n_embd));
        }
        const size_t off = static_cast<size_t>(layer - 1) * static_cast<size_t>(n);
        if (cv.data.size() < off + static_cast<size_t>(n)) cv.data.resize(off + static_cast<size_t>(n), 0.0f);
        // The bytes may sit at any offset of the file: copy them out rather than read them in place.
        const uint8_t *src = file.tensor_data(t);
        for (int64_t j = 0; j < n; ++j) {
            float v;
            std::memcpy(&v, src + j * sizeof(float), sizeof v);
            if (!std::isfinite(v))
                throw Error(name + ": tensor '" + t.name + "' holds a non-finite value at " +
                            std::to_string(j));
            cv.data[off + static_cast<size_t>(j)] += v * scale;
        }
        cv.layer_count = std::max(cv.layer_count, layer);
    }
    // Optional metadata: kept when it has the expected type, ignored otherwise (llama.cpp never reads it).
    if (const gguf::Value *v = file.find("controlvector.model_hint"))
        if (auto s = v->as_string()) cv.model_hint = *s;
    return cv;
}

ControlVector control_vector_load(const std::vector<ControlVectorSource> &sources) {
    ControlVector sum;
    for (const ControlVectorSource &src : sources) {
        if (!std::isfinite(src.scale))
            throw Error(src.path + ": the scale " + std::to_string(src.scale) + " is not a finite number");
        std::unique_ptr<gguf::File> f;
        try {
            f = gguf::File::open(src.path);
        } catch (const Error &e) {
            throw Error(std::string("control vector ") + e.what());
        }
        ControlVector one = control_vector_read(*f, src.scale, src.path);
        if (sum.n_embd == 0) {
            sum = std::move(one);
            continue;
        }
        if (one.n_embd != sum.n_embd)
            throw Error(src.path + ": its directions have " + std::to_string(one.n_embd) +
                        " values, those of the files before it " + std::to_string(sum.n_embd));
        if (sum.data.size() < one.data.size()) sum.data.resize(one.data.size(), 0.0f);
        for (size_t i = 0; i < one.data.size(); ++i) sum.data[i] += one.data[i];
        sum.layer_count = std::max(sum.layer_count, one.layer_count);
        if (sum.model_hint.empty()) sum.model_hint = one.model_hint;
    }
    return sum;
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
