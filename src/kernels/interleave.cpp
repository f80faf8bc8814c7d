#include "kernels/interleave.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "util/error.h"

namespace lctx::kernels {

namespace {

// ---- element codes of the plain GGUF blocks ----

void set_q4_0_code(block_q4_0 &b, int e, uint8_t v) {
    b.qs[e % 16] |= static_cast<uint8_t>(v << (e < 16 ? 0 : 4));
}
// Q4_K: 32-byte chunk k holds sub-block 2k in its low nibbles and 2k + 1 in its high nibbles.
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
void set_q6_K_code(block_q6_K &b, int e, uint8_t v) {
    const int half = e / 128, l = e % 128;
    b.ql[64 * half + l % 64] |= static_cast<uint8_t>((v & 0x0f) << (l < 64 ? 0 : 4));
    b.qh[32 * half + l % 32] |= static_cast<uint8_t>((v >> 4) << (2 * (l / 32)));
}

// ---- places of element e (of a 32-element step sequence) in the layouts of G-row groups ----

// Q4_0 / Q4_K / Q6_K low bits: byte 4 G g + 4 r + i of a 32-element run, high nibble for the second 4.
int nib_byte(int G, int r, int e) {
    return 4 * G * (e / 8) + 4 * r + (e % 4);
}
int nib_shift(int e) {
    return (e % 8) >= 4 ? 4 : 0;
}
// Q6_K top bits within sub-block j: half[j][h].qh[4 r + i], h = g / 2, bits 4 (g % 2) + 2 (e % 8 >= 4).
int q6_qh_shift(int e) {
    return 4 * ((e / 8) % 2) + ((e % 8) >= 4 ? 2 : 0);
}

template <int G>
size_t group_block_bytes(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0:
            return sizeof(block_q4_0xG<G>);
        case GgmlType::Q8_0:
            return sizeof(block_q8_0xG<G>);
        case GgmlType::Q5_0:
            return sizeof(block_q5_0xG<G>);
        case GgmlType::Q4_K:
            return sizeof(block_q4_KxG<G>);
        case GgmlType::Q6_K:
            return sizeof(block_q6_KxG<G>);
        case GgmlType::F16:
        case GgmlType::BF16:
            return G == 8 ? sizeof(block_f16x8) : 0;
        case GgmlType::F32:
            return G == 8 ? sizeof(block_f32x8) : 0;
        default:
            return 0;
    }
}

// Bytes of one interleaved block of a group of `group` rows; 0 without a layout.
size_t block_bytes(GgmlType t, int group) {
    return group == 8 ? group_block_bytes<8>(t) : group == 16 ? group_block_bytes<16>(t) : 0;
}

// Bytes of one row's part of an interleaved block in the plain layout.
size_t plain_part_bytes(GgmlType t) {
    const TypeTraits &tr = type_traits(t);
    return tr.type_size * static_cast<size_t>(interleave_block_elems(t) / tr.block_size);
}

template <class T>
T load_block(const uint8_t *p, int64_t i) {
    T b;
    std::memcpy(&b, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return b;
}

// The codes of one plain block (32 or 256 elements) in element order: Q4_0 / Q4_K 0..15, Q6_K 0..63.
void decode_codes(GgmlType t, const uint8_t *blk, uint8_t *c) {
    switch (t) {
        case GgmlType::Q4_0: {
            const uint8_t *qs = blk + offsetof(block_q4_0, qs);
            for (int l = 0; l < 16; ++l) {
                c[l] = qs[l] & 0x0f;
                c[l + 16] = qs[l] >> 4;
            }
            return;
        }
        case GgmlType::Q5_0: {
            const uint8_t *qs = blk + offsetof(block_q5_0, qs), *qh = blk + offsetof(block_q5_0, qh);
            for (int l = 0; l < 16; ++l) {
                c[l] = static_cast<uint8_t>((qs[l] & 0x0f) | (((qh[l / 8] >> (l % 8)) & 1) << 4));
                c[l + 16] = static_cast<uint8_t>((qs[l] >> 4) | (((qh[2 + l / 8] >> (l % 8)) & 1) << 4));
            }
            return;
        }
        case GgmlType::Q4_K: {
            const uint8_t *qs = blk + offsetof(block_q4_K, qs);
            for (int k = 0; k < 4; ++k)
                for (int l = 0; l < 32; ++l) {
                    c[64 * k + l] = qs[32 * k + l] & 0x0f;
                    c[64 * k + 32 + l] = qs[32 * k + l] >> 4;
                }
            return;
        }
        case GgmlType::Q6_K: {
            const uint8_t *ql = blk + offsetof(block_q6_K, ql), *qh = blk + offsetof(block_q6_K, qh);
            for (int half = 0; half < 2; ++half, ql += 64, qh += 32, c += 128)
                for (int l = 0; l < 32; ++l) {
                    c[l] = static_cast<uint8_t>((ql[l] & 0x0f) | ((qh[l] & 3) << 4));
                    c[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4));
                    c[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
                    c[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
                }
            return;
        }
        default:
            return;
    }
}

// The low nibbles of codes 8 g .. 8 g + 7 of row r into line g (4 G bytes) of a sub-block.
void put_nibble_line(const uint8_t *c, int g, int r, uint8_t *line) {
    for (int i = 0; i < 4; ++i)
        line[4 * r + i] = static_cast<uint8_t>((c[8 * g + i] & 0x0f) | ((c[8 * g + 4 + i] & 0x0f) << 4));
}
// The low nibbles of 32 codes (one sub-block) of row r into a run of 4 lines (16 G bytes).
void put_nibbles(int G, const uint8_t *c, int r, uint8_t *run) {
    for (int g = 0; g < 4; ++g) put_nibble_line(c, g, r, run + 4 * G * g);
}

// Interleaves block b of the G plain rows (rows[r]) into out (every byte written).
template <int G>
void pack_block(GgmlType t, const uint8_t *const *rows, int64_t b, uint8_t *out) {
    const size_t bs = type_traits(t).type_size;
    uint8_t c[256];
    switch (t) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16: {  // 8 elements of each row, as they are
            const size_t part = plain_part_bytes(t);
            for (int r = 0; r < G; ++r) std::memcpy(out + part * r, rows[r] + part * b, part);
            return;
        }
        case GgmlType::Q4_0: {
            auto *x = reinterpret_cast<block_q4_0xG<G> *>(out);
            for (int r = 0; r < G; ++r) {
                const uint8_t *p = rows[r] + b * bs;
                std::memcpy(&x->d[r], p + offsetof(block_q4_0, d), sizeof(fp16_t));
                decode_codes(t, p, c);
                put_nibbles(G, c, r, x->qs);
            }
            return;
        }
        case GgmlType::Q5_0: {
            auto *x = reinterpret_cast<block_q5_0xG<G> *>(out);
            for (int r = 0; r < G; ++r) {
                const uint8_t *p = rows[r] + b * bs;
                std::memcpy(&x->d[r], p + offsetof(block_q5_0, d), sizeof(fp16_t));
                decode_codes(t, p, c);
                put_nibbles(G, c, r, x->qs);
                for (int i = 0; i < 4; ++i) {
                    uint8_t h = 0;
                    for (int g = 0; g < 4; ++g)
                        h |= static_cast<uint8_t>(((c[8 * g + i] >> 4) << (2 * g)) |
                                                  ((c[8 * g + 4 + i] >> 4) << (2 * g + 1)));
                    x->qh[4 * r + i] = h;
                }
            }
            return;
        }
        case GgmlType::Q8_0: {
            auto *x = reinterpret_cast<block_q8_0xG<G> *>(out);
            for (int r = 0; r < G; ++r) {
                const uint8_t *p = rows[r] + b * bs;
                std::memcpy(&x->d[r], p + offsetof(block_q8_0, d), sizeof(fp16_t));
                for (int g = 0; g < 8; ++g)
                    std::memcpy(&x->qs[4 * G * g + 4 * r], p + offsetof(block_q8_0, qs) + 4 * g, 4);
            }
            return;
        }
        case GgmlType::Q4_K: {
            auto *x = reinterpret_cast<block_q4_KxG<G> *>(out);
            for (int r = 0; r < G; ++r) {
                const uint8_t *p = rows[r] + b * bs;
                std::memcpy(&x->d[r], p + offsetof(block_q4_K, d), sizeof(fp16_t));
                std::memcpy(&x->dmin[r], p + offsetof(block_q4_K, dmin), sizeof(fp16_t));
                for (int j = 0; j < 8; ++j)
                    q4_K_scale_min(p + offsetof(block_q4_K, scales), j, &x->scales[j][r],
                                   &x->mins[j / 2][r][j % 2]);
                decode_codes(t, p, c);
                for (int j = 0; j < 8; ++j) put_nibbles(G, c + 32 * j, r, &x->qs[j][0][0]);
            }
            return;
        }
        case GgmlType::Q6_K: {
            auto *x = reinterpret_cast<block_q6_KxG<G> *>(out);
            for (int r = 0; r < G; ++r) {
                const uint8_t *p = rows[r] + b * bs;
                std::memcpy(&x->d[r], p + offsetof(block_q6_K, d), sizeof(fp16_t));
                for (int k = 0; k < 16; ++k)
                    x->scales[k][r] = static_cast<int8_t>(p[offsetof(block_q6_K, scales) + k]);
                decode_codes(t, p, c);
                for (int j = 0; j < 8; ++j) {
                    const uint8_t *cj = c + 32 * j;
                    for (int g = 0; g < 4; ++g) put_nibble_line(cj, g, r, x->half[j][g / 2].ql[g % 2]);
                    for (int h = 0; h < 2; ++h)
                        for (int i = 0; i < 4; ++i) {
                            const uint8_t *e =
                                cj + 16 * h + i;  // steps g = 2h (e[0], e[4]) and 2h + 1 (e[8], e[12])
                            x->half[j][h].qh[4 * r + i] = static_cast<uint8_t>(
                                (e[0] >> 4) | ((e[4] >> 4) << 2) | ((e[8] >> 4) << 4) | ((e[12] >> 4) << 6));
                        }
                }
            }
            return;
        }
        default:
            throw Error(std::string("no interleaved layout for ") + type_name(t));
    }
}

// Writes block b of row r of an interleaved group back in the plain layout.
template <int G>
void unpack_block(GgmlType t, const uint8_t *group, int64_t b, int r, uint8_t *out) {
    switch (t) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16: {
            const size_t part = plain_part_bytes(t);  // one row's 8 elements
            std::memcpy(out, group + b * static_cast<int64_t>(G * part) + part * r, part);
            return;
        }
        case GgmlType::Q4_0: {
            const auto x = load_block<block_q4_0xG<G>>(group, b);
            block_q4_0 p{};
            p.d = x.d[r];
            for (int e = 0; e < 32; ++e)
                set_q4_0_code(p, e, (x.qs[nib_byte(G, r, e)] >> nib_shift(e)) & 0x0f);
            std::memcpy(out, &p, sizeof p);
            return;
        }
        case GgmlType::Q5_0: {
            const auto x = load_block<block_q5_0xG<G>>(group, b);
            block_q5_0 p{};
            p.d = x.d[r];
            for (int e = 0; e < 32; ++e) {
                const int lo = (x.qs[nib_byte(G, r, e)] >> nib_shift(e)) & 0x0f;
                const int g = e / 8, second = (e % 8) >= 4;
                const int hi = (x.qh[4 * r + e % 4] >> (2 * g + second)) & 1;
                p.qs[e % 16] |= static_cast<uint8_t>(lo << (e < 16 ? 0 : 4));
                p.qh[e / 8] |= static_cast<uint8_t>(hi << (e % 8));
            }
            std::memcpy(out, &p, sizeof p);
            return;
        }
        case GgmlType::Q8_0: {
            const auto x = load_block<block_q8_0xG<G>>(group, b);
            block_q8_0 p{};
            p.d = x.d[r];
            for (int e = 0; e < 32; ++e) p.qs[e] = x.qs[4 * G * (e / 4) + 4 * r + e % 4];
            std::memcpy(out, &p, sizeof p);
            return;
        }
        case GgmlType::Q4_K: {
            const auto x = load_block<block_q4_KxG<G>>(group, b);
            block_q4_K p{};
            p.d = x.d[r];
            p.dmin = x.dmin[r];
            uint8_t sc[8], mn[8];
            for (int j = 0; j < 8; ++j) {
                sc[j] = x.scales[j][r];
                mn[j] = x.mins[j / 2][r][j % 2];
                for (int e = 0; e < 32; ++e)
                    set_q4_K_code(p, 32 * j + e,
                                  ((&x.qs[j][0][0])[nib_byte(G, r, e)] >> nib_shift(e)) & 0x0f);
            }
            q4_K_pack_scales(sc, mn, p.scales);
            std::memcpy(out, &p, sizeof p);
            return;
        }
        case GgmlType::Q6_K: {
            const auto x = load_block<block_q6_KxG<G>>(group, b);
            block_q6_K p{};
            p.d = x.d[r];
            for (int k = 0; k < 16; ++k) p.scales[k] = x.scales[k][r];
            for (int j = 0; j < 8; ++j) {
                for (int e = 0; e < 32; ++e) {
                    const int line = e / 8, byte = 4 * r + e % 4;
                    const int lo = (x.half[j][line / 2].ql[line % 2][byte] >> nib_shift(e)) & 0x0f;
                    const int hi = (x.half[j][e / 16].qh[byte] >> q6_qh_shift(e)) & 3;
                    set_q6_K_code(p, 32 * j + e, static_cast<uint8_t>(lo | (hi << 4)));
                }
            }
            std::memcpy(out, &p, sizeof p);
            return;
        }
        default:
            throw Error(std::string("no interleaved layout for ") + type_name(t));
    }
}

void check_group(GgmlType t, int group) {
    if (block_bytes(t, group) == 0)
        throw Error(std::string("no interleaved layout for ") + type_name(t) + " in groups of " +
                    std::to_string(group) + " rows");
}

}  // namespace

int32_t *kernel_sums_scratch(size_t n) {
    thread_local std::vector<int32_t> buf;
    if (buf.size() < n) buf.resize(n);
    return buf.data();
}

uint8_t *kernel_tile_scratch(size_t n) {
    struct Aligned {
        alignas(64) uint8_t b[64];
    };
    thread_local std::vector<Aligned> buf;
    if (buf.size() * 64 < n) buf.resize((n + 63) / 64);
    return buf.data()->b;
}

int64_t interleave_block_elems(GgmlType t) {
    if (block_bytes(t, 8) == 0) return 0;
    return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16 ? 8 : type_traits(t).block_size;
}

bool can_interleave(GgmlType t, int64_t rows, int64_t cols) {
    if (block_bytes(t, 8) == 0 || rows <= 0 || cols <= 0) return false;
    return cols % interleave_block_elems(t) == 0;
}

bool has_group_layout(GgmlType t, int group) {
    return block_bytes(t, group) > 0;
}

size_t interleaved_row_bytes(GgmlType t, int64_t cols) {
    return block_bytes(t, 8) / 8 * static_cast<size_t>(cols / interleave_block_elems(t));
}

void interleave_rows(GgmlType t, int group, const uint8_t *src, size_t src_row_bytes, int64_t rows,
                     int64_t cols, uint8_t *dst) {
    if (!can_interleave(t, rows, cols))
        throw Error(std::string("cannot interleave a ") + type_name(t) + " matrix of " +
                    std::to_string(rows) + " x " + std::to_string(cols));
    check_group(t, group);
    const int64_t nb = cols / interleave_block_elems(t);
    const size_t xb = block_bytes(t, group);
    const size_t group_bytes = interleaved_row_bytes(t, cols) * group;
    const std::vector<uint8_t> zero_row(src_row_bytes, 0);  // the padding rows of a last partial group
    auto pack_groups = [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q) {
            const uint8_t *rows_g[kMaxGroupRows];
            for (int r = 0; r < group; ++r) {
                const int64_t row = q * group + r;
                rows_g[r] = row < rows ? src + row * src_row_bytes : zero_row.data();
            }
            uint8_t *out = dst + q * group_bytes;
            for (int64_t b = 0; b < nb; ++b) {
                if (group == 8)
                    pack_block<8>(t, rows_g, b, out + b * xb);
                else
                    pack_block<16>(t, rows_g, b, out + b * xb);
            }
        }
    };
    // Loading is otherwise a page-fault-bound copy: use the machine's cores for big matrices.
    const int64_t n_groups = interleaved_rows(rows, group) / group;
    const int64_t n_threads =
        std::clamp<int64_t>(static_cast<int64_t>(std::thread::hardware_concurrency()), 1,
                            std::max<int64_t>(1, n_groups * static_cast<int64_t>(group_bytes) >> 20));
    std::vector<std::thread> helpers;
    for (int64_t i = 1; i < n_threads; ++i)
        helpers.emplace_back(pack_groups, n_groups * i / n_threads, n_groups * (i + 1) / n_threads);
    pack_groups(0, n_groups / n_threads);
    for (std::thread &th : helpers) th.join();
}

void deinterleave_row(GgmlType t, int group, const uint8_t *src, size_t row_bytes, int64_t row, int64_t cols,
                      uint8_t *dst) {
    check_group(t, group);
    const int64_t nb = cols / interleave_block_elems(t);
    const size_t plain_block = plain_part_bytes(t);
    const uint8_t *g = src + (row / group) * group * row_bytes;
    const int r = static_cast<int>(row % group);
    for (int64_t b = 0; b < nb; ++b) {
        if (group == 8)
            unpack_block<8>(t, g, b, r, dst + b * plain_block);
        else
            unpack_block<16>(t, g, b, r, dst + b * plain_block);
    }
}

// Each group's rows back in the plain layout, then one reference dot per output: the scalar level's values
// are those of its plain gemm.
void gemm_interleaved_ref(GgmlType t, int group, int64_t n, const void *w, size_t w_stride, int64_t n_rows,
                          const void *act, size_t act_stride, int64_t n_act, float *y, int64_t ldy) {
    const auto *wb = static_cast<const uint8_t *>(w);
    const auto *ab = static_cast<const uint8_t *>(act);
    const size_t plain_row = row_size(t, n);
    std::vector<uint8_t> plain(plain_row * group);
    for (int64_t g0 = 0; g0 < n_rows; g0 += group) {
        for (int r = 0; r < group; ++r)
            deinterleave_row(t, group, wb + g0 * w_stride, w_stride, r, n, plain.data() + r * plain_row);
        for (int64_t c = 0; c < n_act; ++c)
            for (int r = 0; r < group; ++r)
                y[c * ldy + g0 + r] = vec_dot_ref(t, n, plain.data() + r * plain_row, ab + c * act_stride);
    }
}

}  // namespace lctx::kernels
