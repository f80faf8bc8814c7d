#include "kernels/interleave.h"

#include <cstring>

#include "tensor/fp16.h"
#include "util/error.h"

namespace lctx::kernels {

namespace {

// Element e of a plain Q4_0 block as its unsigned code (0..15).
uint8_t q4_0_code(const block_q4_0 &b, int e) {
    return e < 16 ? (b.qs[e] & 0x0f) : (b.qs[e - 16] >> 4);
}

// Byte offset, within an x8 block's qs, of element e of row r (and for Q4_0 whether it is the high nibble).
int q4_0x8_byte(int r, int e) {
    return 32 * (e / 8) + 4 * r + (e % 4);
}
bool q4_0x8_high(int e) {
    return (e % 8) >= 4;
}
int q8_0x8_byte(int r, int e) {
    return 32 * (e / 4) + 4 * r + (e % 4);
}

}  // namespace

bool can_interleave(GgmlType t, int64_t rows, int64_t cols) {
    if (rows <= 0 || rows % kInterleaveRows != 0 || cols <= 0 || cols % 32 != 0) return false;
    return t == GgmlType::Q4_0 || t == GgmlType::Q8_0;
}

void interleave_rows(GgmlType t, const uint8_t *src, size_t row_bytes, int64_t rows, int64_t cols, uint8_t *dst) {
    if (!can_interleave(t, rows, cols)) throw Error(std::string("cannot interleave a ") + type_name(t) + " matrix");
    const int64_t nb = cols / 32;
    for (int64_t g0 = 0; g0 < rows; g0 += kInterleaveRows) {
        const uint8_t *rows8 = src + g0 * row_bytes;
        uint8_t *out = dst + g0 * row_bytes;
        for (int64_t b = 0; b < nb; ++b) {
            if (t == GgmlType::Q4_0) {
                block_q4_0x8 x{};
                for (int r = 0; r < 8; ++r) {
                    const auto &p = reinterpret_cast<const block_q4_0 *>(rows8 + r * row_bytes)[b];
                    x.d[r] = p.d;
                    for (int e = 0; e < 32; ++e)
                        x.qs[q4_0x8_byte(r, e)] |= static_cast<uint8_t>(q4_0_code(p, e) << (q4_0x8_high(e) ? 4 : 0));
                }
                std::memcpy(out + b * sizeof x, &x, sizeof x);
            } else {
                block_q8_0x8 x{};
                for (int r = 0; r < 8; ++r) {
                    const auto &p = reinterpret_cast<const block_q8_0 *>(rows8 + r * row_bytes)[b];
                    x.d[r] = p.d;
                    for (int e = 0; e < 32; ++e) x.qs[q8_0x8_byte(r, e)] = p.qs[e];
                }
                std::memcpy(out + b * sizeof x, &x, sizeof x);
            }
        }
    }
}

void deinterleave_row(GgmlType t, const uint8_t *src, size_t row_bytes, int64_t row, int64_t cols, uint8_t *dst) {
    const int64_t nb = cols / 32;
    const uint8_t *group = src + (row / kInterleaveRows) * kInterleaveRows * row_bytes;
    const int r = static_cast<int>(row % kInterleaveRows);
    for (int64_t b = 0; b < nb; ++b) {
        if (t == GgmlType::Q4_0) {
            block_q4_0x8 x;
            std::memcpy(&x, group + b * sizeof x, sizeof x);
            block_q4_0 p{};
            p.d = x.d[r];
            for (int e = 0; e < 32; ++e) {
                const uint8_t byte = x.qs[q4_0x8_byte(r, e)];
                const uint8_t code = q4_0x8_high(e) ? byte >> 4 : byte & 0x0f;
                p.qs[e % 16] |= static_cast<uint8_t>(code << (e < 16 ? 0 : 4));
            }
            std::memcpy(dst + b * sizeof p, &p, sizeof p);
        } else if (t == GgmlType::Q8_0) {
            block_q8_0x8 x;
            std::memcpy(&x, group + b * sizeof x, sizeof x);
            block_q8_0 p{};
            p.d = x.d[r];
            for (int e = 0; e < 32; ++e) p.qs[e] = x.qs[q8_0x8_byte(r, e)];
            std::memcpy(dst + b * sizeof p, &p, sizeof p);
        } else {
            throw Error(std::string("no interleaved layout for ") + type_name(t));
        }
    }
}

void gemm_x8_ref(GgmlType t, int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                 size_t act_stride, int64_t n_act, float *y, int64_t ldy) {
    const int64_t nb = n / 32;
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    for (int64_t g0 = 0; g0 < n_rows; g0 += kInterleaveRows) {
        const uint8_t *group = wb + g0 * w_stride;
        for (int64_t c = 0; c < n_act; ++c) {
            const auto *a = reinterpret_cast<const block_q8_0 *>(ab + c * act_stride);
            for (int r = 0; r < 8; ++r) {
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; ++b) {
                    int32_t isum = 0;
                    float d;
                    if (t == GgmlType::Q4_0) {
                        const auto *x = reinterpret_cast<const block_q4_0x8 *>(group) + b;
                        for (int e = 0; e < 32; ++e) {
                            const uint8_t byte = x->qs[q4_0x8_byte(r, e)];
                            const int code = q4_0x8_high(e) ? byte >> 4 : byte & 0x0f;
                            isum += (code - 8) * a[b].qs[e];
                        }
                        d = fp16_to_fp32(x->d[r]);
                    } else {
                        const auto *x = reinterpret_cast<const block_q8_0x8 *>(group) + b;
                        for (int e = 0; e < 32; ++e) isum += x->qs[q8_0x8_byte(r, e)] * a[b].qs[e];
                        d = fp16_to_fp32(x->d[r]);
                    }
                    acc += static_cast<float>(isum) * (d * fp16_to_fp32(a[b].d));
                }
                y[c * ldy + g0 + r] = acc;
            }
        }
    }
}

}  // namespace lctx::kernels
