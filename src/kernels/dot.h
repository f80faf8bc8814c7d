// Dot products of one weight row with one activation row, per weight type, with the best
// implementation for the CPU chosen at run time (scalar reference; x86: AVX2, AVX-512, AMX; ARM64: NEON,
// dotprod, i8mm).
//
// Use: once per weight type, `const TypeKernels &k = type_kernels(t);` then quantize the activation
// row with k.quantize_act and call k.vec_dot for each weight row.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/types.h"

namespace lctx::kernels {

// Amx: the AVX-512 kernels, with prompt tiles of the interleaved int8 types on AMX tile multiplies.
// ARM64: Neon (armv8.0 Advanced SIMD) < Dotprod (SDOT/UDOT) < I8mm (SMMLA). The x86 levels and the ARM
// levels are not ordered against each other (a CPU has one family); Scalar is below both. Compare levels
// with isa_at_least, never by their numbers.
enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2, Amx = 3, Neon = 4, Dotprod = 5, I8mm = 6 };

// True when code for level `want` may run at level `have`: want is Scalar, or both are of one family and
// want is not above have.
bool isa_at_least(Isa have, Isa want);

// Best level the CPU and OS support.
Isa isa_detected();
// isa_detected(), lowered by the environment variable LCTX_ISA=scalar|avx2|avx512|amx|neon|dotprod|i8mm (a
// request above the detected level, or of the other architecture's family, is ignored). Throws lctx::Error
// for any other LCTX_ISA value.
Isa isa_active();
const char *isa_name(Isa isa);

// Dot product of one weight row (type t, n elements) with one activation row already converted to
// type_traits(t).vec_dot_type. Same result as vec_dot_ref up to float summation order. n is a
// multiple of the block size (not checked). Rows need only the alignment of their block struct
// (2 bytes, 4 for F32 and Q8_K), as GGUF tensor data and any heap buffer have; no vector alignment.
using VecDotFn = float (*)(int64_t n, const void *x, const void *y);
// Converts n floats to the activation type. For Q8_0, Q8_1 and Q8_K the bytes are the same as
// quantize_row's reference on every ISA, so results do not depend on the ISA.
using QuantizeActFn = void (*)(const float *x, void *y, int64_t n);

// A block of dot products: y[c * ldy + r] = dot(weight row r, activation row c) for r < n_rows, c < n_act;
// weight rows w_stride bytes apart, activation rows (already act_type) act_stride bytes apart. Tiles of
// several rows x several activations reuse each unpacked block. An output's value depends only on its
// two rows (one accumulation order per type and ISA), not on n_rows / n_act or its place in the block,
// so matmul results do not change with the batch size or the thread split. The order may differ from
// vec_dot's (float summation order only).
using GemmFn = void (*)(int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                        size_t act_stride, int64_t n_act, float *y, int64_t ldy);

struct TypeKernels {
    GgmlType act_type;           // = type_traits(t).vec_dot_type
    VecDotFn vec_dot;            // best for the requested ISA
    QuantizeActFn quantize_act;  // f32 -> act_type, best for the requested ISA
    GemmFn gemm = nullptr;       // best for the requested ISA (set for every type with kernels)
    // The same over interleaved weights (kernels/interleave.h) in groups of group_rows rows: w at a group
    // start, n_rows a multiple of group_rows, w_stride the interleaved row bytes. Set only for types with an
    // interleaved layout; group_rows is this level's lane count for the type (8 or 16).
    GemmFn gemm_interleaved = nullptr;
    int group_rows = 0;
    // gemm_interleaved copies operands on every call (the AMX kernels into tile order, from 16 activations;
    // the 512-bit F16 kernel widens its activations to f32): it wants calls of many rows and activations.
    bool gemm_interleaved_stages = false;
    // Where set, the level's interleaved kernel also comes in a form that takes activations already widened
    // to f32 (quantize_act_wide: act_type's values, e.g. rounded to halves, stored as f32), with the same
    // values: matmul converts a call's activations to that form once, where the plain kernel widens them
    // again in every call (the 512-bit F16 kernel: once per target and 128-token chunk, 1-2% of an
    // embedding model's pass).
    QuantizeActFn quantize_act_wide = nullptr;
    GemmFn gemm_interleaved_wide = nullptr;
};

// Kernels for weight type `weight_type` at level `isa` (falling back to a lower level for a type
// that has no kernel at that level). Throws lctx::Error if lctx cannot compute with the type, or if
// `isa` is above isa_detected().
const TypeKernels &type_kernels(GgmlType weight_type, Isa isa = isa_active());

// F16 weight rows against F32 activation rows (attention's F16 values turned to channel rows, against f32
// probabilities): at each level exactly the values type_kernels(GgmlType::F32, isa).gemm gives on the
// weights converted to f32, reading half the weight bytes. Same preconditions as any GemmFn.
GemmFn gemm_f16_by_f32(Isa isa = isa_active());
// Weight types with kernels (every ISA): F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS.
bool has_kernels(GgmlType weight_type);

// ---- internal ----
namespace detail {
// The level LCTX_ISA=`env_value` selects on a CPU whose best level is `detected` (nullptr or "": detected).
Isa isa_lowered_by(const char *env_value, Isa detected);
// What each ISA file provides (nullptr where it has no kernel for the type).
VecDotFn vec_dot_avx2(GgmlType weight_type);
QuantizeActFn quantize_act_avx2(GgmlType act_type);
VecDotFn vec_dot_avx512(GgmlType weight_type);
QuantizeActFn quantize_act_avx512(GgmlType act_type);
GemmFn gemm_avx2(GgmlType weight_type);
GemmFn gemm_avx512(GgmlType weight_type);
// Interleaved gemm of each level and the group size it reads (0: none for the type).
GemmFn gemm_interleaved_avx2(GgmlType weight_type);
GemmFn gemm_interleaved_avx512(GgmlType weight_type);
int group_rows_avx512(GgmlType weight_type);
// Whether the level's gemm_interleaved for the type copies operands on every call (gemm_interleaved_stages).
bool interleaved_stages_avx512(GgmlType weight_type);
// The level's wide forms (TypeKernels::gemm_interleaved_wide; nullptr: none for the type).
QuantizeActFn quantize_act_wide_avx512(GgmlType act_type);
GemmFn gemm_interleaved_wide_avx512(GgmlType weight_type);
// Activations one pass over an interleaved integer group serves at each x86 level (its widest tile): a
// batched decode of up to that many sequences reads every weight block once. 0: no such tile.
int interleaved_tile_acts_avx2(GgmlType weight_type);
int interleaved_tile_acts_avx512(GgmlType weight_type);
GemmFn gemm_interleaved_amx(GgmlType weight_type);
GemmFn gemm_f16_by_f32_avx2();
GemmFn gemm_f16_by_f32_avx512();
// ARM64 (dot_neon.cpp, dot_dotprod.cpp, dot_i8mm.cpp): the same lookups per level (nullptr: the level below).
VecDotFn vec_dot_neon(GgmlType weight_type);
QuantizeActFn quantize_act_neon(GgmlType act_type);
GemmFn gemm_neon(GgmlType weight_type);
GemmFn gemm_interleaved_neon(GgmlType weight_type);
GemmFn gemm_f16_by_f32_neon();
VecDotFn vec_dot_dotprod(GgmlType weight_type);
GemmFn gemm_dotprod(GgmlType weight_type);
GemmFn gemm_interleaved_dotprod(GgmlType weight_type);
GemmFn gemm_interleaved_i8mm(GgmlType weight_type);
}  // namespace detail

}  // namespace lctx::kernels
