#include "kernels/interleave.h"

#include <cstring>
#include <string>
#include <vector>

#include "util/error.h"

namespace lctx::kernels {

namespace {

// ---- element codes of the plain GGUF blocks ----

uint8_t q4_0_code(const block_q4_0 &b, int e) {
    return e < 16 ? (b.qs[e] & 0x0f) : (b.qs[e - 16] >> 4);
}
void set_q4_0_code(block_q4_0 &b, int e, uint8_t v) {
    b.qs[e % 16] |= static_cast<uint8_t>(v << (e < 16 ? 0 : 4));
}
// Q4_K: 32-byte chunk k holds sub-block 2k in its low nibbles and 2k + 1 in its high nibbles.
uint8_t q4_K_code(const block_q4_K &b, int e) {
    const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
    return (e / 32) % 2 ? byte >> 4 : byte & 0x0f;
}
void set_q4_K_code(block_q4_K &b, int e, uint8_t v) {
    b.qs[32 * (e / 64) + e % 32] |= static_cast<uint8_t>(v << ((e / 32) % 2 ? 4 : 0));
}
void q4_K_scale_min(const uint8_t *s, int j, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = static_cast<uint8_t>((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
        *mn = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}
void q4_K_pack_scales(const uint8_t *sc, const uint8_t *mn, uint8_t *s) {
    for (int i = 0; i < 4; ++i) {
        s[i] = static_cast<uint8_t>((sc[i] & 63) | ((sc[i + 4] >> 4) << 6));
        s[i + 4] = static_cast<uint8_t>((mn[i] & 63) | ((mn[i + 4] >> 4) << 6));
        s[i + 8] = static_cast<uint8_t>((sc[i + 4] & 15) | ((mn[i + 4] & 15) << 4));
    }
}
// Q6_K: in each half of 128, ql[l] holds elements l (low nibble) and l + 64 (high), ql[l + 32] elements
// l + 32 and l + 96; qh[l] holds the top 2 bits of l, l + 32, l + 64, l + 96 at bits 0, 2, 4, 6.
uint8_t q6_K_code(const block_q6_K &b, int e) {
    const int half = e / 128, l = e % 128;
    const uint8_t ql = b.ql[64 * half + l % 64];
    const uint8_t lo = l < 64 ? (ql & 0x0f) : (ql >> 4);
    const uint8_t hi = (b.qh[32 * half + l % 32] >> (2 * (l / 32))) & 3;
    return static_cast<uint8_t>(lo | (hi << 4));
}
void set_q6_K_code(block_q6_K &b, int e, uint8_t v) {
    const int half = e / 128, l = e % 128;
    b.ql[64 * half + l % 64] |= static_cast<uint8_t>((v & 0x0f) << (l < 64 ? 0 : 4));
    b.qh[32 * half + l % 32] |= static_cast<uint8_t>((v >> 4) << (2 * (l / 32)));
}

// ---- places of element e (of a 32-element step sequence) in the x8 layouts ----

// Q4_0 / Q4_K / Q6_K low bits: byte 32 g + 4 r + i of a 32-element run, high nibble for the second 4.
int nib_byte(int r, int e) {
    return 32 * (e / 8) + 4 * r + (e % 4);
}
int nib_shift(int e) {
    return (e % 8) >= 4 ? 4 : 0;
}
// Q6_K top bits within sub-block j: qh[j][h][4 r + i], h = g / 2, bits 4 (g % 2) + 2 (e % 8 >= 4).
int q6_qh_byte(int r, int e) {
    return 32 * (e / 16) + 4 * r + (e % 4);
}
int q6_qh_shift(int e) {
    return 4 * ((e / 8) % 2) + ((e % 8) >= 4 ? 2 : 0);
}

size_t x8_block_bytes(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0: return sizeof(block_q4_0x8);
        case GgmlType::Q8_0: return sizeof(block_q8_0x8);
        case GgmlType::Q4_K: return sizeof(block_q4_Kx8);
        case GgmlType::Q6_K: return sizeof(block_q6_Kx8);
        default: return 0;
    }
}

template <class T>
T load_block(const uint8_t *p, int64_t i) {
    T b;
    std::memcpy(&b, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return b;
}

// Interleaves block b of the 8 plain rows (rows8[r]) into out.
void pack_block(GgmlType t, const uint8_t *const rows8[8], int64_t b, uint8_t *out) {
    switch (t) {
        case GgmlType::Q4_0: {
            block_q4_0x8 x{};
            for (int r = 0; r < 8; ++r) {
                const auto p = load_block<block_q4_0>(rows8[r], b);
                x.d[r] = p.d;
                for (int e = 0; e < 32; ++e)
                    x.qs[nib_byte(r, e)] |= static_cast<uint8_t>(q4_0_code(p, e) << nib_shift(e));
            }
            std::memcpy(out, &x, sizeof x);
            return;
        }
        case GgmlType::Q8_0: {
            block_q8_0x8 x{};
            for (int r = 0; r < 8; ++r) {
                const auto p = load_block<block_q8_0>(rows8[r], b);
                x.d[r] = p.d;
                for (int e = 0; e < 32; ++e) x.qs[32 * (e / 4) + 4 * r + e % 4] = p.qs[e];
            }
            std::memcpy(out, &x, sizeof x);
            return;
        }
        case GgmlType::Q4_K: {
            block_q4_Kx8 x{};
            for (int r = 0; r < 8; ++r) {
                const auto p = load_block<block_q4_K>(rows8[r], b);
                x.d[r] = p.d;
                x.dmin[r] = p.dmin;
                for (int j = 0; j < 8; ++j) {
                    q4_K_scale_min(p.scales, j, &x.scales[j][r], &x.mins[j / 2][r][j % 2]);
                    for (int e = 0; e < 32; ++e)
                        (&x.qs[j][0][0])[nib_byte(r, e)] |=
                            static_cast<uint8_t>(q4_K_code(p, 32 * j + e) << nib_shift(e));
                }
            }
            std::memcpy(out, &x, sizeof x);
            return;
        }
        case GgmlType::Q6_K: {
            block_q6_Kx8 x{};
            for (int r = 0; r < 8; ++r) {
                const auto p = load_block<block_q6_K>(rows8[r], b);
                x.d[r] = p.d;
                for (int k = 0; k < 16; ++k) x.scales[k][r] = p.scales[k];
                for (int j = 0; j < 8; ++j) {
                    for (int e = 0; e < 32; ++e) {
                        const uint8_t v = q6_K_code(p, 32 * j + e);
                        (&x.ql[j][0][0])[nib_byte(r, e)] |= static_cast<uint8_t>((v & 0x0f) << nib_shift(e));
                        (&x.qh[j][0][0])[q6_qh_byte(r, e)] |= static_cast<uint8_t>((v >> 4) << q6_qh_shift(e));
                    }
                }
            }
            std::memcpy(out, &x, sizeof x);
            return;
        }
        default: throw Error(std::string("no interleaved layout for ") + type_name(t));
    }
}

// Writes block b of row r of an interleaved group back in the plain layout.
void unpack_block(GgmlType t, const uint8_t *group, int64_t b, int r, uint8_t *out) {
    switch (t) {
        case GgmlType::Q4_0: {
            const auto x = load_block<block_q4_0x8>(group, b);
            block_q4_0 p{};
            p.d = x.d[r];
            for (int e = 0; e < 32; ++e) set_q4_0_code(p, e, (x.qs[nib_byte(r, e)] >> nib_shift(e)) & 0x0f);
            std::memcpy(out, &p, sizeof p);
            return;
        }
        case GgmlType::Q8_0: {
            const auto x = load_block<block_q8_0x8>(group, b);
            block_q8_0 p{};
            p.d = x.d[r];
            for (int e = 0; e < 32; ++e) p.qs[e] = x.qs[32 * (e / 4) + 4 * r + e % 4];
            std::memcpy(out, &p, sizeof p);
            return;
        }
        case GgmlType::Q4_K: {
            const auto x = load_block<block_q4_Kx8>(group, b);
            block_q4_K p{};
            p.d = x.d[r];
            p.dmin = x.dmin[r];
            uint8_t sc[8], mn[8];
            for (int j = 0; j < 8; ++j) {
                sc[j] = x.scales[j][r];
                mn[j] = x.mins[j / 2][r][j % 2];
                for (int e = 0; e < 32; ++e)
                    set_q4_K_code(p, 32 * j + e, ((&x.qs[j][0][0])[nib_byte(r, e)] >> nib_shift(e)) & 0x0f);
            }
            q4_K_pack_scales(sc, mn, p.scales);
            std::memcpy(out, &p, sizeof p);
            return;
        }
        case GgmlType::Q6_K: {
            const auto x = load_block<block_q6_Kx8>(group, b);
            block_q6_K p{};
            p.d = x.d[r];
            for (int k = 0; k < 16; ++k) p.scales[k] = x.scales[k][r];
            for (int j = 0; j < 8; ++j) {
                for (int e = 0; e < 32; ++e) {
                    const int lo = ((&x.ql[j][0][0])[nib_byte(r, e)] >> nib_shift(e)) & 0x0f;
                    const int hi = ((&x.qh[j][0][0])[q6_qh_byte(r, e)] >> q6_qh_shift(e)) & 3;
                    set_q6_K_code(p, 32 * j + e, static_cast<uint8_t>(lo | (hi << 4)));
                }
            }
            std::memcpy(out, &p, sizeof p);
            return;
        }
        default: throw Error(std::string("no interleaved layout for ") + type_name(t));
    }
}

}  // namespace

bool can_interleave(GgmlType t, int64_t rows, int64_t cols) {
    if (x8_block_bytes(t) == 0 || rows <= 0 || rows % kInterleaveRows != 0 || cols <= 0) return false;
    return cols % type_traits(t).block_size == 0;
}

size_t interleaved_row_bytes(GgmlType t, int64_t cols) {
    return x8_block_bytes(t) / kInterleaveRows * static_cast<size_t>(cols / type_traits(t).block_size);
}

void interleave_rows(GgmlType t, const uint8_t *src, size_t src_row_bytes, int64_t rows, int64_t cols,
                     uint8_t *dst) {
    if (!can_interleave(t, rows, cols))
        throw Error(std::string("cannot interleave a ") + type_name(t) + " matrix of " + std::to_string(rows) +
                    " x " + std::to_string(cols));
    const int64_t nb = cols / type_traits(t).block_size;
    const size_t xb = x8_block_bytes(t);
    const size_t group_bytes = interleaved_row_bytes(t, cols) * kInterleaveRows;
    for (int64_t g0 = 0; g0 < rows; g0 += kInterleaveRows) {
        const uint8_t *rows8[8];
        for (int r = 0; r < 8; ++r) rows8[r] = src + (g0 + r) * src_row_bytes;
        uint8_t *out = dst + (g0 / kInterleaveRows) * group_bytes;
        for (int64_t b = 0; b < nb; ++b) pack_block(t, rows8, b, out + b * xb);
    }
}

void deinterleave_row(GgmlType t, const uint8_t *src, size_t row_bytes, int64_t row, int64_t cols, uint8_t *dst) {
    if (x8_block_bytes(t) == 0) throw Error(std::string("no interleaved layout for ") + type_name(t));
    const int64_t nb = cols / type_traits(t).block_size;
    const size_t plain_block = type_traits(t).type_size;
    const uint8_t *group = src + (row / kInterleaveRows) * kInterleaveRows * row_bytes;
    for (int64_t b = 0; b < nb; ++b)
        unpack_block(t, group, b, static_cast<int>(row % kInterleaveRows), dst + b * plain_block);
}

// Each group's rows back in the plain layout, then one reference dot per output: the scalar level's values
// are those of its plain gemm.
void gemm_x8_ref(GgmlType t, int64_t n, const void *w, size_t w_stride, int64_t n_rows, const void *act,
                 size_t act_stride, int64_t n_act, float *y, int64_t ldy) {
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    const size_t plain_row = row_size(t, n);
    std::vector<uint8_t> plain(plain_row * kInterleaveRows);
    for (int64_t g0 = 0; g0 < n_rows; g0 += kInterleaveRows) {
        for (int r = 0; r < kInterleaveRows; ++r)
            deinterleave_row(t, wb + g0 * w_stride, w_stride, r, n, plain.data() + r * plain_row);
        for (int64_t c = 0; c < n_act; ++c)
            for (int r = 0; r < kInterleaveRows; ++r)
                y[c * ldy + g0 + r] = vec_dot_ref(t, n, plain.data() + r * plain_row, ab + c * act_stride);
    }
}

}  // namespace lctx::kernels
