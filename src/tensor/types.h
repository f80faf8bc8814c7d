// Tensor element types: the GGUF/ggml type ids, their block layouts, and the scalar reference
// conversions (dequantize, quantize, dot product). Everything here is the reference: portable,
// byte-exact with the GGUF block layouts, and the oracle the SIMD kernels in src/kernels are tested
// against.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lctx {

// Numbering is the GGUF file format's (ggml_type); ids that were retired (4, 5) stay unused.
enum class GgmlType : int32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
};

constexpr int32_t kGgmlTypeCount = 36;  // one past the largest id

struct TypeTraits {
    const char *name;       // "f32", "q4_0", ... (ggml's spelling)
    int64_t block_size;     // elements per block (1 for plain types)
    size_t type_size;       // bytes per block
    bool is_quantized;      // block-quantized (not a plain scalar type)
    bool has_compute;       // lctx can dequantize it and take dot products with it
    GgmlType vec_dot_type;  // the activation type a dot product with this weight type takes
};

// True for ids that name a known type (even one lctx cannot compute with).
bool type_is_known(int32_t id);
// Traits of a known type; throws lctx::Error for an unknown id.
const TypeTraits &type_traits(GgmlType type);
const char *type_name(GgmlType type);
// Parses "q4_0", "Q4_0", "f16", ...; returns false when the name is unknown.
bool type_from_name(const char *name, GgmlType *out);

// Bytes of a row of n elements; n must be a multiple of the block size (throws otherwise).
size_t row_size(GgmlType type, int64_t n);

// ---- scalar reference conversions (implemented in quants_*.cpp) ----
// n is a multiple of the type's block size.
void dequantize_row(GgmlType type, const void *src, float *dst, int64_t n);
// Reference quantization f32 -> type. Supported for every type where can_quantize() is true
// (including the activation types Q8_0, Q8_1 and Q8_K); throws lctx::Error otherwise.
bool can_quantize(GgmlType type);
void quantize_row(GgmlType type, const float *src, void *dst, int64_t n);
// Reference dot product of a weight row x (type) with an activation row y that is already in
// type_traits(type).vec_dot_type; n elements. Same arithmetic as ggml's generic path.
float vec_dot_ref(GgmlType type, int64_t n, const void *x, const void *y);

}  // namespace lctx
