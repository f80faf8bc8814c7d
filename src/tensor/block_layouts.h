// Packed block structs of the GGUF quantized types, field for field as they lie in a file.
// Half-precision scales are stored as raw IEEE half bits (fp16_t). Every field has natural alignment
// at its offset, so no packing pragma is needed; the static_asserts pin each size to the type table
// (types.cpp) so a layout mistake fails to compile.
#pragma once
#include <cstdint>

#include "tensor/fp16.h"

namespace lctx {

constexpr int kQK4_0 = 32;
constexpr int kQK4_1 = 32;
constexpr int kQK5_0 = 32;
constexpr int kQK5_1 = 32;
constexpr int kQK8_0 = 32;
constexpr int kQK8_1 = 32;
constexpr int kQK4_NL = 32;
constexpr int kQK_K = 256;       // super-block size of the K types
constexpr int kKScaleSize = 12;  // packed 6-bit scales/mins of Q4_K and Q5_K

// ---- legacy 32-element blocks ----

// x[i] = d * (q[i] - 8); qs: byte j holds element j (low nibble) and element j+16 (high nibble).
struct block_q4_0 {
    fp16_t d;
    uint8_t qs[kQK4_0 / 2];
};

// x[i] = d * q[i] + m; nibble order as Q4_0.
struct block_q4_1 {
    fp16_t d;
    fp16_t m;
    uint8_t qs[kQK4_1 / 2];
};

// x[i] = d * (q[i] - 16); low 4 bits as Q4_0, bit 4 of element i is bit i of qh (little-endian u32).
struct block_q5_0 {
    fp16_t d;
    uint8_t qh[4];
    uint8_t qs[kQK5_0 / 2];
};

// x[i] = d * q[i] + m; bits as Q5_0.
struct block_q5_1 {
    fp16_t d;
    fp16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK5_1 / 2];
};

// x[i] = d * qs[i].
struct block_q8_0 {
    fp16_t d;
    int8_t qs[kQK8_0];
};

// x[i] = d * qs[i]; s = d * sum(qs) (lets Q4_1/Q5_1 dots fold in their offset m).
struct block_q8_1 {
    fp16_t d;
    fp16_t s;
    int8_t qs[kQK8_1];
};

// x[i] = d * kvalues_iq4nl[q[i]]; nibble order as Q4_0.
struct block_iq4_nl {
    fp16_t d;
    uint8_t qs[kQK4_NL / 2];
};

// ---- 256-element super-blocks ----

// 16 sub-blocks of 16: scales[j] low nibble = scale, high nibble = min; 2-bit quants.
struct block_q2_K {
    uint8_t scales[kQK_K / 16];
    uint8_t qs[kQK_K / 4];
    fp16_t d;     // super-block scale of the scales
    fp16_t dmin;  // super-block scale of the mins
};

// hmask: high bit of each 3-bit quant; qs: low 2 bits; 16 6-bit scales packed into 12 bytes.
struct block_q3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[12];
    fp16_t d;
};

// 8 sub-blocks of 32: 6-bit scales and mins packed into 12 bytes; 4-bit quants.
struct block_q4_K {
    fp16_t d;
    fp16_t dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qs[kQK_K / 2];
};

// As Q4_K plus one high bit per quant in qh.
struct block_q5_K {
    fp16_t d;
    fp16_t dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16: ql low 4 bits, qh high 2 bits of each 6-bit quant; signed 8-bit scales.
struct block_q6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    fp16_t d;
};

// Activation type of the K dots: float scale, 8-bit quants, sums of each 16 quants.
struct block_q8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};

// 8 sub-blocks of 32 with 6-bit scales (low 4 bits in scales_l nibbles, high 2 bits in scales_h);
// quants index the IQ4_NL table.
struct block_iq4_xs {
    fp16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};

static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24);
static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q8_1) == 36);
static_assert(sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_q2_K) == 84);
static_assert(sizeof(block_q3_K) == 110);
static_assert(sizeof(block_q4_K) == 144);
static_assert(sizeof(block_q5_K) == 176);
static_assert(sizeof(block_q6_K) == 210);
static_assert(sizeof(block_q8_K) == 292);
static_assert(sizeof(block_iq4_xs) == 136);

// The 16 non-linear levels of IQ4_NL and IQ4_XS (a published constant of the format).
inline constexpr int8_t kValuesIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace lctx
