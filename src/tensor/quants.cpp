// Dispatchers of the scalar reference conversions declared in types.h: one switch per operation,
// forwarding to the per-type functions in quants_legacy.cpp and quants_k.cpp.
#include <string>

#include "tensor/quants_k.h"
#include "tensor/quants_legacy.h"
#include "tensor/types.h"
#include "util/error.h"

namespace lctx {

namespace {

using DequantizeFn = void (*)(const void *, float *, int64_t);
using QuantizeFn = void (*)(const float *, void *, int64_t);
using VecDotFn = float (*)(int64_t, const void *, const void *);

DequantizeFn dequantize_fn(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
            return dequantize_row_f32;
        case GgmlType::F16:
            return dequantize_row_f16;
        case GgmlType::BF16:
            return dequantize_row_bf16;
        case GgmlType::Q4_0:
            return dequantize_row_q4_0;
        case GgmlType::Q4_1:
            return dequantize_row_q4_1;
        case GgmlType::Q5_0:
            return dequantize_row_q5_0;
        case GgmlType::Q5_1:
            return dequantize_row_q5_1;
        case GgmlType::Q8_0:
            return dequantize_row_q8_0;
        case GgmlType::Q8_1:
            return dequantize_row_q8_1;
        case GgmlType::IQ4_NL:
            return dequantize_row_iq4_nl;
        case GgmlType::Q2_K:
            return dequantize_row_q2_K;
        case GgmlType::Q3_K:
            return dequantize_row_q3_K;
        case GgmlType::Q4_K:
            return dequantize_row_q4_K;
        case GgmlType::Q5_K:
            return dequantize_row_q5_K;
        case GgmlType::Q6_K:
            return dequantize_row_q6_K;
        case GgmlType::Q8_K:
            return dequantize_row_q8_K;
        case GgmlType::IQ4_XS:
            return dequantize_row_iq4_xs;
        default:
            return nullptr;
    }
}

QuantizeFn quantize_fn(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
            return quantize_row_f32_ref;
        case GgmlType::F16:
            return quantize_row_f16_ref;
        case GgmlType::BF16:
            return quantize_row_bf16_ref;
        case GgmlType::Q4_0:
            return quantize_row_q4_0_ref;
        case GgmlType::Q4_1:
            return quantize_row_q4_1_ref;
        case GgmlType::Q5_0:
            return quantize_row_q5_0_ref;
        case GgmlType::Q5_1:
            return quantize_row_q5_1_ref;
        case GgmlType::Q8_0:
            return quantize_row_q8_0_ref;
        case GgmlType::Q8_1:
            return quantize_row_q8_1_ref;
        case GgmlType::IQ4_NL:
            return quantize_row_iq4_nl_ref;
        case GgmlType::Q2_K:
            return quantize_row_q2_K_ref;
        case GgmlType::Q3_K:
            return quantize_row_q3_K_ref;
        case GgmlType::Q4_K:
            return quantize_row_q4_K_ref;
        case GgmlType::Q5_K:
            return quantize_row_q5_K_ref;
        case GgmlType::Q6_K:
            return quantize_row_q6_K_ref;
        case GgmlType::Q8_K:
            return quantize_row_q8_K_ref;
        case GgmlType::IQ4_XS:
            return quantize_row_iq4_xs_ref;
        default:
            return nullptr;
    }
}

// Keyed by the weight type; y is in type_traits(type).vec_dot_type. Q8_1 and Q8_K are activation
// types only (ggml has no dot with them as weights), so they have no entry.
VecDotFn vec_dot_fn(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
            return vec_dot_f32_ref;
        case GgmlType::F16:
            return vec_dot_f16_ref;
        case GgmlType::BF16:
            return vec_dot_bf16_ref;
        case GgmlType::Q4_0:
            return vec_dot_q4_0_q8_0_ref;
        case GgmlType::Q4_1:
            return vec_dot_q4_1_q8_1_ref;
        case GgmlType::Q5_0:
            return vec_dot_q5_0_q8_0_ref;
        case GgmlType::Q5_1:
            return vec_dot_q5_1_q8_1_ref;
        case GgmlType::Q8_0:
            return vec_dot_q8_0_q8_0_ref;
        case GgmlType::IQ4_NL:
            return vec_dot_iq4_nl_q8_0_ref;
        case GgmlType::Q2_K:
            return vec_dot_q2_K_q8_K_ref;
        case GgmlType::Q3_K:
            return vec_dot_q3_K_q8_K_ref;
        case GgmlType::Q4_K:
            return vec_dot_q4_K_q8_K_ref;
        case GgmlType::Q5_K:
            return vec_dot_q5_K_q8_K_ref;
        case GgmlType::Q6_K:
            return vec_dot_q6_K_q8_K_ref;
        case GgmlType::IQ4_XS:
            return vec_dot_iq4_xs_q8_K_ref;
        default:
            return nullptr;
    }
}

// Throws unless n is a whole, non-negative number of blocks (row_size does the check).
void check_row(GgmlType type, int64_t n) {
    (void)row_size(type, n);
}

[[noreturn]] void unsupported(const char *what, GgmlType type) {
    throw Error(std::string(what) + " is not supported for tensor type " + type_name(type) + " (id " +
                std::to_string(static_cast<int32_t>(type)) + ")");
}

}  // namespace

void dequantize_row(GgmlType type, const void *src, float *dst, int64_t n) {
    const DequantizeFn fn = dequantize_fn(type);
    if (!fn) unsupported("dequantization", type);
    check_row(type, n);
    fn(src, dst, n);
}

bool can_quantize(GgmlType type) {
    return quantize_fn(type) != nullptr;
}

void quantize_row(GgmlType type, const float *src, void *dst, int64_t n) {
    const QuantizeFn fn = quantize_fn(type);
    if (!fn) unsupported("quantization", type);
    check_row(type, n);
    fn(src, dst, n);
}

float vec_dot_ref(GgmlType type, int64_t n, const void *x, const void *y) {
    const VecDotFn fn = vec_dot_fn(type);
    if (!fn) unsupported("a dot product", type);
    check_row(type, n);
    return fn(n, x, y);
}

}  // namespace lctx
