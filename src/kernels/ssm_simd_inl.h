// The vector bodies of ssm_conv and ssm_scan over a range of channels, for any width: each per-ISA file
// (ssm_avx2.cpp, ssm_avx512.cpp, ssm_neon.cpp) instantiates them with its lane type V, which supplies
//   Reg, kLanes, load, store, set1, add, mul, fmadd(a, b, c) = a b + c, exp, softplus, hsum (the lanes' sum).
// Loops run channels outermost and rows inside, so a channel's state stays in registers over the rows of a
// sequence; it goes back to memory where the next row names another sequence's state (rows of several
// sequences interleaved), and at the end. A channel's arithmetic is the same wherever it falls in a block
// (the tails are padded), so any split of the channels gives the same bits.
// In an anonymous namespace (simd_x86_inl.h says why).
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/ssm.h"

namespace lctx::kernels::detail {
namespace {

// Channels the scan takes together: the softplus of their time steps is one or more whole vectors.
constexpr int kSsmBlock = 16;
// Rows whose softplus is held at once: 3 arrays of kSsmRows x kSsmBlock floats, 12 KiB, beside B and C's
// rows.
constexpr int64_t kSsmRows = 64;

// The n <= width values at p, or, for fewer than width, a copy padded with zeros in tmp.
inline const float *padded(const float *p, int n, int width, float *tmp) {
    if (n == width) return p;
    std::copy(p, p + n, tmp);
    std::fill(tmp + n, tmp + width, 0.0f);
    return tmp;
}

// ssm_scan for channels [c0, c1), d_state == NV * V::kLanes.
template <class V, int NV>
void ssm_scan_channels(const SsmScanArgs &a, int64_t c0, int64_t c1) {
    using Reg = typename V::Reg;
    constexpr int L = V::kLanes, kVecs = kSsmBlock / L;
    static_assert(kSsmBlock % L == 0);
    const int64_t n = a.d_state;
    alignas(64) float sp[kSsmRows][kSsmBlock], xdt[kSsmRows][kSsmBlock], ys[kSsmRows][kSsmBlock];
    alignas(64) float tmp_a[kSsmBlock], tmp_b[kSsmBlock], tmp_d[kSsmBlock];
    for (int64_t cb = c0; cb < c1; cb += kSsmBlock) {
        const int cw = static_cast<int>(std::min<int64_t>(kSsmBlock, c1 - cb));
        const float *d = a.d ? padded(a.d + cb, cw, kSsmBlock, tmp_d) : nullptr;
        for (int64_t t0 = 0; t0 < a.n_rows; t0 += kSsmRows) {
            const int nt = static_cast<int>(std::min(kSsmRows, a.n_rows - t0));
            // dt' = softplus(dt) and x dt' of the block's channels, row by row
            for (int i = 0; i < nt; ++i) {
                const float *dt = padded(a.dt + (t0 + i) * a.lddt + cb, cw, kSsmBlock, tmp_a);
                const float *x = padded(a.x + (t0 + i) * a.ldx + cb, cw, kSsmBlock, tmp_b);
                for (int v = 0; v < kVecs; ++v) {
                    const Reg s = V::softplus(V::load(dt + v * L));
                    V::store(sp[i] + v * L, s);
                    V::store(xdt[i] + v * L, V::mul(V::load(x + v * L), s));
                }
            }
            // the recurrence, one channel at a time over the rows
            for (int g = 0; g < cw; ++g) {
                const int64_t c = cb + g;
                Reg A[NV], h[NV];
                for (int v = 0; v < NV; ++v) A[v] = V::load(a.a + c * n + v * L);
                float *cur = a.state[t0] + c * n;
                for (int v = 0; v < NV; ++v) h[v] = V::load(cur + v * L);
                for (int i = 0; i < nt; ++i) {
                    float *s = a.state[t0 + i] + c * n;
                    if (s != cur) {  // another sequence's row
                        for (int v = 0; v < NV; ++v) V::store(cur + v * L, h[v]);
                        cur = s;
                        for (int v = 0; v < NV; ++v) h[v] = V::load(cur + v * L);
                    }
                    const Reg dts = V::set1(sp[i][g]), xd = V::set1(xdt[i][g]);
                    const float *B = a.bc + (t0 + i) * a.ldbc, *C = B + n;
                    Reg sum = V::set1(0.0f);
                    for (int v = 0; v < NV; ++v) {
                        const Reg dA = V::exp(V::mul(dts, A[v]));
                        h[v] = V::fmadd(h[v], dA, V::mul(V::load(B + v * L), xd));
                        const Reg hc = V::mul(h[v], V::load(C + v * L));
                        sum = v == 0 ? hc : V::add(sum, hc);
                    }
                    ys[i][g] = V::hsum(sum);
                }
                for (int v = 0; v < NV; ++v) V::store(cur + v * L, h[v]);
            }
            // y = sum (+ D x), whole vectors of the block's channels
            for (int i = 0; i < nt; ++i) {
                float *y = a.y + (t0 + i) * a.ldy + cb;
                float *out = cw == kSsmBlock ? y : tmp_a;
                const float *x = d ? padded(a.x + (t0 + i) * a.ldx + cb, cw, kSsmBlock, tmp_b) : nullptr;
                for (int v = 0; v < kVecs; ++v) {
                    Reg r = V::load(ys[i] + v * L);
                    if (d) r = V::add(r, V::mul(V::load(x + v * L), V::load(d + v * L)));
                    V::store(out + v * L, r);
                }
                if (out != y) std::copy(out, out + cw, y);
            }
        }
    }
}

// ssm_conv for channels [c0, c1), d_conv == NC (>= 2), V::kLanes channels at a time: the taps and the window
// of a block's channels transposed into lanes.
template <class V, int NC>
void ssm_conv_channels(const SsmConvArgs &a, int64_t c0, int64_t c1) {
    using Reg = typename V::Reg;
    constexpr int L = V::kLanes, NS = NC - 1;
    static_assert(NC >= 2);
    alignas(64) float tmp[NC][L];
    for (int64_t cb = c0; cb < c1; cb += L) {
        const int cw = static_cast<int>(std::min<int64_t>(L, c1 - cb));
        Reg w[NC], win[NS];
        for (int k = 0; k < NC; ++k) {
            for (int l = 0; l < L; ++l) tmp[k][l] = l < cw ? a.w[(cb + l) * NC + k] : 0.0f;
            w[k] = V::load(tmp[k]);
        }
        const Reg bias = V::load(padded(a.b + cb, cw, L, tmp[0]));
        const auto load_state = [&](const float *s) {
            for (int k = 0; k < NS; ++k) {
                for (int l = 0; l < L; ++l) tmp[k][l] = l < cw ? s[(cb + l) * NS + k] : 0.0f;
                win[k] = V::load(tmp[k]);
            }
        };
        const auto save_state = [&](float *s) {
            for (int k = 0; k < NS; ++k) {
                V::store(tmp[k], win[k]);
                for (int l = 0; l < cw; ++l) s[(cb + l) * NS + k] = tmp[k][l];
            }
        };
        float *cur = nullptr;
        for (int64_t t = 0; t < a.n_rows; ++t) {
            if (a.state[t] != cur) {  // the first row, or another sequence's row
                if (cur) save_state(cur);
                cur = a.state[t];
                load_state(cur);
            }
            const Reg x = V::load(padded(a.x + t * a.ldx + cb, cw, L, tmp[NS]));
            Reg sum = V::mul(win[0], w[0]);
            for (int k = 1; k < NS; ++k) sum = V::fmadd(win[k], w[k], sum);
            sum = V::add(V::fmadd(x, w[NS], sum), bias);
            float *y = a.y + t * a.ldy + cb;
            if (cw == L) {
                V::store(y, sum);
            } else {
                V::store(tmp[NS], sum);
                std::copy(tmp[NS], tmp[NS] + cw, y);
            }
            for (int k = 0; k + 1 < NS; ++k) win[k] = win[k + 1];
            win[NS - 1] = x;
        }
        if (cur) save_state(cur);
    }
}

}  // namespace
}  // namespace lctx::kernels::detail
