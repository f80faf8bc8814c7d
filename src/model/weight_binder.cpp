#include "model/weight_binder.h"

#include "kernels/dot.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx {

WeightBinder::WeightBinder(const gguf::File &f) : f_(f), bound_(f.tensors().size(), false) {}

const gguf::TensorInfo *WeightBinder::claim(const std::string &name, Need need) {
    const gguf::TensorInfo *t = f_.find_tensor(name);
    if (!t) {
        if (need == Need::Required) throw Error("model is missing tensor '" + name + "'");
        return nullptr;
    }
    bound_[static_cast<size_t>(t - f_.tensors().data())] = true;
    return t;
}

kernels::WeightView WeightBinder::matrix(const std::string &name, int64_t cols, int64_t rows, Need need) {
    const gguf::TensorInfo *t = claim(name, need);
    if (!t) return {};
    if (t->ne.size() > 2 && t->n_elements() != t->ne[0] * t->ne[1])
        throw Error("tensor '" + name + "' has more than 2 dimensions");
    const int64_t ne1 = t->ne.size() > 1 ? t->ne[1] : 1;
    if (t->ne[0] != cols || ne1 != rows)
        throw Error("tensor '" + name + "' has shape [" + std::to_string(t->ne[0]) + ", " +
                    std::to_string(ne1) + "], expected [" + std::to_string(cols) + ", " +
                    std::to_string(rows) + "]");
    // has_compute alone also admits activation-only types (q8_1) that no weight product reads.
    if (!type_traits(t->type).has_compute || !kernels::has_kernels(t->type))
        throw Error("tensor '" + name + "' has type " + type_name(t->type) +
                    ", which lctx cannot compute with yet");
    kernels::WeightView w;
    w.type = t->type;
    w.data = f_.tensor_data(*t);
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = row_size(t->type, cols);
    return w;
}

ParamVector WeightBinder::vector(const std::string &name, int64_t n, Need need) {
    const gguf::TensorInfo *t = claim(name, need);
    if (!t) return {};
    if (t->n_elements() != n)
        throw Error("tensor '" + name + "' has " + std::to_string(t->n_elements()) + " elements, expected " +
                    std::to_string(n));
    if (!type_traits(t->type).has_compute || n % type_traits(t->type).block_size != 0)
        throw Error("tensor '" + name + "' has unsupported type " + type_name(t->type));
    ParamVector v(static_cast<size_t>(n));
    dequantize_row(t->type, f_.tensor_data(*t), v.data(), n);
    return v;
}

ParamVector WeightBinder::matrix_f32(const std::string &name, int64_t cols, int64_t rows, Need need) {
    const kernels::WeightView w = matrix(name, cols, rows, need);
    if (!w.data) return {};
    if (cols % type_traits(w.type).block_size != 0)
        throw Error("tensor '" + name + "' has unsupported type " + type_name(w.type));
    ParamVector v(static_cast<size_t>(cols * rows));
    for (int64_t r = 0; r < rows; ++r)
        dequantize_row(w.type, w.data + r * w.row_bytes, v.data() + r * cols, cols);
    return v;
}

void WeightBinder::finish() const {
    std::string names;
    size_t n_unbound = 0;
    for (size_t i = 0; i < bound_.size(); ++i) {
        if (bound_[i]) continue;
        if (++n_unbound <= 8) names += (names.empty() ? "'" : ", '") + f_.tensors()[i].name + "'";
    }
    if (n_unbound == 0) return;
    if (n_unbound > 8) names += " and " + std::to_string(n_unbound - 8) + " more";
    throw Error("model has " + std::to_string(n_unbound) + " tensor" + (n_unbound == 1 ? "" : "s") +
                " that its architecture does not use: " + names);
}

void WeightBinder::check_layer_count(const std::string &arch, uint32_t n_layer, size_t per_layer) const {
    if (n_layer > f_.tensors().size() / per_layer)
        throw Error(arch + ".block_count = " + std::to_string(n_layer) + " but the file holds only " +
                    std::to_string(f_.tensors().size()) + " tensors");
}

kernels::WeightView row_range(const kernels::WeightView &w, int64_t first, int64_t n) {
    if (w.interleaved() || first < 0 || n < 0 || first + n > w.rows)
        throw Error("row range [" + std::to_string(first) + ", " + std::to_string(first + n) +
                    ") does not lie in a matrix of " + std::to_string(w.rows) + " rows");
    kernels::WeightView r = w;
    r.data = w.data + static_cast<size_t>(first) * w.row_bytes;
    r.rows = n;
    return r;
}

ParamVector vector_range(const ParamVector &v, int64_t first, int64_t n) {
    if (v.empty()) return {};
    if (first < 0 || n < 0 || static_cast<size_t>(first + n) > v.size())
        throw Error("element range [" + std::to_string(first) + ", " + std::to_string(first + n) +
                    ") does not lie in a vector of " + std::to_string(v.size()) + " elements");
    return ParamVector(v.begin() + first, v.begin() + first + n);
}

}  // namespace lctx
