// Binds a model family's tensors by name. A family declares each tensor it knows as required or optional
// with its expected shape; finish() then refuses a file holding tensors that no declaration bound, naming
// them (b4748 refuses such files too: "wrong number of tensors"). A missing required tensor, a mis-shaped
// one or one of a type lctx cannot compute with is refused at its declaration, by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/matmul.h"

namespace lctx {

// A 1-D parameter vector (norm weight, bias) in f32; empty when an optional tensor is absent.
using ParamVector = std::vector<float>;

enum class Need { Required, Optional };

class WeightBinder {
  public:
    explicit WeightBinder(const gguf::File &f);

    // A matrix of `rows` rows of `cols` elements (ne = [cols, rows]) in its stored type; an absent optional
    // one is an empty view (data == nullptr).
    kernels::WeightView matrix(const std::string &name, int64_t cols, int64_t rows,
                               Need need = Need::Required);
    // A vector of n elements converted to f32; an absent optional one is empty. Declaring the same tensor
    // again (one rope_freqs shared by every layer) binds it again.
    ParamVector vector(const std::string &name, int64_t n, Need need = Need::Required);
    // A small matrix of `rows` rows of `cols` elements converted to f32 row-major (a depthwise convolution's
    // taps, mamba's A): like matrix() for its shape, like vector() for its values.
    ParamVector matrix_f32(const std::string &name, int64_t cols, int64_t rows, Need need = Need::Required);

    // Throws lctx::Error naming the tensors of the file that no declaration bound.
    void finish() const;

    // Refuses a block_count the file cannot back (each layer has at least `per_layer` tensors) before
    // anything is sized from it.
    void check_layer_count(const std::string &arch, uint32_t n_layer, size_t per_layer) const;

  private:
    const gguf::TensorInfo *claim(const std::string &name, Need need);

    const gguf::File &f_;
    std::vector<bool> bound_;  // by index in f_.tensors()
};

// Rows [first, first + n) of a matrix in the file's row layout, as a matrix of its own (a part of a fused
// tensor: attn_qkv's q, k and v rows).
kernels::WeightView row_range(const kernels::WeightView &w, int64_t first, int64_t n);
// Elements [first, first + n) of a vector (a part of a fused bias); empty when v is.
ParamVector vector_range(const ParamVector &v, int64_t first, int64_t n);

}  // namespace lctx
