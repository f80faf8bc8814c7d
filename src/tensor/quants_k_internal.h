// Helpers shared by the K-quant reference files (quants_k*.cpp); not part of the public API.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "tensor/block_layouts.h"
#include "tensor/fp16.h"
#include "util/error.h"

namespace lctx::kquant {

// Round to nearest, ties to even, exactly as ggml's reference quantizers do it: adding 1.5 * 2^23 moves
// the integer part into the low mantissa bits, and the FPU's round-to-nearest-even does the rounding.
// Valid for |v| < 2^22; outside that range it wraps (ggml only asserts), and so do we.
inline int nearest_int(float v) {
    const float biased = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &biased, sizeof(bits));
    return (bits & 0x007fffff) - 0x00400000;
}

// Blocks are copied in and out with memcpy: a row inside a mapped file or a byte buffer need not be
// aligned for the block struct.
template <typename Block>
inline Block load_block(const void *src, int64_t i) {
    Block b;
    std::memcpy(&b, static_cast<const uint8_t *>(src) + i * static_cast<int64_t>(sizeof(Block)),
                sizeof(Block));
    return b;
}

template <typename Block>
inline void store_block(void *dst, int64_t i, const Block &b) {
    std::memcpy(static_cast<uint8_t *>(dst) + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
}

// Number of super-blocks in a row of n elements; throws when n is not a whole number of them.
inline int64_t super_blocks(int64_t n, const char *what) {
    if (n < 0 || n % kQK_K != 0) {
        throw Error(std::string(what) + ": row length " + std::to_string(n) + " is not a multiple of " +
                    std::to_string(kQK_K));
    }
    return n / kQK_K;
}

// Q4_K / Q5_K: 8 six-bit scales and 8 six-bit mins in 12 bytes.
//   j < 4 : scale = bytes[j] & 63,                  min = bytes[j+4] & 63
//   j >= 4: scale = low nibble of bytes[j+4] | (top 2 bits of bytes[j-4]) << 4
//           min   = high nibble of bytes[j+4] | (top 2 bits of bytes[j])   << 4
inline void unpack_scale_min_k4(const uint8_t packed[kKScaleSize], uint8_t scale[8], uint8_t min[8]) {
    for (int j = 0; j < 4; ++j) {
        scale[j] = packed[j] & 63;
        min[j] = packed[j + 4] & 63;
    }
    for (int j = 4; j < 8; ++j) {
        scale[j] = static_cast<uint8_t>((packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4));
        min[j] = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
}

// Q3_K: 16 six-bit scales in 12 bytes, stored offset by 32 (returned signed, in -32..31).
//   low 4 bits : j < 8 -> low nibble of bytes[j]; j >= 8 -> high nibble of bytes[j-8]
//   high 2 bits: bits 2*(j/4) .. 2*(j/4)+1 of bytes[8 + j%4]
inline void unpack_scales_q3_K(const uint8_t packed[12], int scale[16]) {
    for (int j = 0; j < 16; ++j) {
        const int lo = j < 8 ? (packed[j] & 0x0f) : (packed[j - 8] >> 4);
        const int hi = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
        scale[j] = (lo | (hi << 4)) - 32;
    }
}

// IQ4_XS: 8 six-bit scales, low nibbles in scales_l (two per byte, even sub-block in the low nibble),
// high 2 bits in scales_h (2 bits per sub-block, sub-block 0 in bits 0-1); stored offset by 32.
inline int iq4_xs_scale(const block_iq4_xs &b, int ib) {
    const int lo = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f;
    const int hi = (b.scales_h >> (2 * ib)) & 3;
    return (lo | (hi << 4)) - 32;
}

}  // namespace lctx::kquant
