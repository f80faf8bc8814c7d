#include "gguf/control_vector.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/error.h"

namespace lctx::gguf {

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

ControlVector read_control_vector(const File &file, float scale, const std::string &name) {
    ControlVector cv;
    if (file.tensors().empty()) throw Error(name + ": no direction tensors (direction.1, direction.2, ...)");
    for (const TensorInfo &t : file.tensors()) {
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
    if (const Value *v = file.find("controlvector.model_hint"))
        if (auto s = v->as_string()) cv.model_hint = *s;
    return cv;
}

}  // namespace lctx::gguf
