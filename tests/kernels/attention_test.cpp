// attention() against a naive double-precision reference: masks with -inf holes (and fully masked
// rows), GQA, caches of every KV cache type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL), V
// transposed or not, row subsets, softcap, ALiBi. The ctest copies run it at each kernel level.
//
// The reference uses the same inputs the kernel sees: q converted to the K cache's dot type (as the
// kernel must to take dot products with quantized keys), dequantized K and V. The one rounding the
// reference does not repeat is the kernel's conversion of the probabilities to V's dot type when V is
// transposed; its effect is bounded per output by sum_j |dp_j| * |v_j| with dp_j the conversion error. Keys
// of Q4_1 / Q5_1 take their dot products with Q8_1 queries, whose blocks carry their sum s = d * sum(q) as
// an f16: the kernel's scores may use that rounded sum (m * s per block), the reference the exact one, a
// score difference of at most sum over blocks |m| |s| 2^-11 (see score_err below).
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention_x86.h"
#include "kernels/dot.h"
#include "kernels/ops_x86.h"
#include "tensor/types.h"

namespace lctx::kernels::attention_test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
    int n_head, n_head_kv, head_dim, n_kv, n_tokens;
    GgmlType type_k, type_v;
    bool v_trans;
    float softcap = 0.0f;
    std::vector<int32_t> rows = {};  // the query rows to compute, in order (empty: every other, reversed)
    float alibi_max_bias = 0.0f;     // > 0: ALiBi slopes, and the mask holds -|pos_q - pos_k|
    bool slopes_of_one = false;      // slopes of 1 over the plain mask (the same values as none)
    bool per_head_bias = false;      // one mask per head: the mask plus a random bias per head and cell (T5)
    // > 0: the cells are that many sequences' regions (cell j in region j * regions / n_kv); the first half
    // of the tokens are a prompt of region 0's sequence, the others tokens of the other sequences in turn,
    // and each sees only its own region (a server step: one prompt chunk beside decoded tokens)
    int regions = 0;
    // > 0: that many sequences, token t of sequence t % interleave, each seeing only its region of the cells
    // (as regions lays them out); interleaved_cells then moves region r's cell o to cell o * interleave + r,
    // the layout a batched decode leaves (n_kv a multiple of interleave), with the same values and mask
    int interleave = 0;
    bool interleaved_cells = false;
    bool prompts =
        false;  // with interleave: tokens of a sequence in a run (t * interleave / n_tokens), prompts
    bool no_holes = false;    // no random holes in the mask (every cell before the token visible)
    bool f16_values = false;  // V's values rounded to F16 first: an F32 cache then holds an F16 one's values
    bool encoder_pass = false;  // AttentionArgs::encoder_pass (F32 keys may take the turned blocks)
    bool own_values = false;    // AttentionArgs::own_values (V by rows: a pass's own rows)
};

std::string case_name(const Case &c) {
    return "h" + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " d" +
           std::to_string(c.head_dim) + " kv" + std::to_string(c.n_kv) + " t" + std::to_string(c.n_tokens) +
           " " + type_name(c.type_k) + "/" + type_name(c.type_v) + (c.v_trans ? " vt" : "") +
           (c.softcap > 0 ? " softcap" : "") + (c.alibi_max_bias > 0 ? " alibi" : "") +
           (c.per_head_bias ? " head-bias" : "") + (c.regions > 0 ? " regions" : "") +
           (c.interleave > 0 ? " seqs" + std::to_string(c.interleave) : "") +
           (c.interleaved_cells ? " interleaved" : "") + (c.encoder_pass ? " encoder" : "") +
           (c.own_values ? " own-rows" : "");
}

// Round trip of n floats through `type`.
std::vector<float> through(GgmlType type, const float *x, int64_t n) {
    std::vector<uint8_t> buf(row_size(type, n));
    quantize_row(type, x, buf.data(), n);
    std::vector<float> y(n);
    dequantize_row(type, buf.data(), y.data(), n);
    return y;
}

// Runs one case against the double-precision reference and returns the output rows.
std::vector<float> run_case(const Case &c, uint32_t seed, int n_threads) {
    SCOPED_TRACE(case_name(c) + " threads " + std::to_string(n_threads));
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int hd = c.head_dim, gqa = c.n_head / c.n_head_kv;
    const int64_t q_dim = static_cast<int64_t>(c.n_head) * hd,
                  kv_dim = static_cast<int64_t>(c.n_head_kv) * hd;
    const uint32_t cells = static_cast<uint32_t>(c.n_kv + 3);  // cache larger than n_kv

    // K: [cells][kv_dim] in type_k (one row per cell, heads side by side)
    std::vector<float> kf(cells * kv_dim), vf(cells * kv_dim);
    for (float &v : kf) v = normal(rng) * 1.5f;
    for (float &v : vf) v = normal(rng);
    if (c.f16_values) vf = through(GgmlType::F16, vf.data(), static_cast<int64_t>(vf.size()));
    // the cell that holds logical cell j (regions side by side, or interleaved)
    auto cell_of = [&](int j) {
        if (!c.interleaved_cells) return j;
        const int per = c.n_kv / c.interleave, r = j / per;
        return (j - r * per) * c.interleave + r;
    };
    if (c.interleaved_cells) {
        const std::vector<float> k0 = kf, v0 = vf;
        for (int j = 0; j < c.n_kv; ++j) {
            std::copy_n(k0.begin() + j * kv_dim, kv_dim, kf.begin() + cell_of(j) * kv_dim);
            std::copy_n(v0.begin() + j * kv_dim, kv_dim, vf.begin() + cell_of(j) * kv_dim);
        }
    }
    const size_t k_row_bytes = row_size(c.type_k, kv_dim);
    std::vector<uint8_t> kbuf(cells * k_row_bytes);
    std::vector<float> kdq(cells * kv_dim);  // what the kernel sees
    for (uint32_t j = 0; j < cells; ++j) {
        for (int g = 0; g < c.n_head_kv; ++g) {
            const size_t off = j * k_row_bytes + g * row_size(c.type_k, hd);
            quantize_row(c.type_k, kf.data() + j * kv_dim + g * hd, kbuf.data() + off, hd);
            dequantize_row(c.type_k, kbuf.data() + off, kdq.data() + j * kv_dim + g * hd, hd);
        }
    }
    // V: transposed [kv_dim][cells] elements, or [cells][v_row_bytes]
    std::vector<uint8_t> vbuf;
    std::vector<float> vdq(cells * kv_dim);  // [cell][channel]
    size_t v_row_bytes = 0;
    if (c.v_trans) {
        const size_t es = type_traits(c.type_v).type_size;
        vbuf.resize(kv_dim * cells * es);
        for (int64_t ch = 0; ch < kv_dim; ++ch) {
            std::vector<float> col(cells);
            for (uint32_t j = 0; j < cells; ++j) col[j] = vf[j * kv_dim + ch];
            quantize_row(c.type_v, col.data(), vbuf.data() + ch * cells * es, cells);
            std::vector<float> back(cells);
            dequantize_row(c.type_v, vbuf.data() + ch * cells * es, back.data(), cells);
            for (uint32_t j = 0; j < cells; ++j) vdq[j * kv_dim + ch] = back[j];
        }
    } else {
        v_row_bytes = row_size(c.type_v, kv_dim);
        vbuf.resize(cells * v_row_bytes);
        for (uint32_t j = 0; j < cells; ++j) {
            for (int g = 0; g < c.n_head_kv; ++g) {
                const size_t off = j * v_row_bytes + g * row_size(c.type_v, hd);
                quantize_row(c.type_v, vf.data() + j * kv_dim + g * hd, vbuf.data() + off, hd);
                dequantize_row(c.type_v, vbuf.data() + off, vdq.data() + j * kv_dim + g * hd, hd);
            }
        }
    }

    // q: [n_tokens][q_dim + 5]; mask [n_tokens][n_kv + 2] with holes; the last token sees nothing
    const int64_t ldq = q_dim + 5, ldmask = c.n_kv + 2;
    std::vector<float> q(c.n_tokens * ldq);
    for (float &v : q) v = normal(rng);
    std::vector<float> mask(c.n_tokens * ldmask, 0.0f);
    for (int t = 0; t < c.n_tokens; ++t) {
        for (int j = 0; j < c.n_kv; ++j) {
            const bool causal_hole = j > c.n_kv - c.n_tokens + t;
            const bool random_hole = rng() % 5 == 0 && !c.no_holes;
            if (causal_hole || random_hole) mask[t * ldmask + j] = -kInf;
            if (c.regions > 0) {
                const int seq_t = t < c.n_tokens / 2 ? 0 : 1 + t % (c.regions - 1);
                if (static_cast<int64_t>(j) * c.regions / c.n_kv != seq_t) mask[t * ldmask + j] = -kInf;
            }
            if (c.interleave > 0 && static_cast<int64_t>(j) * c.interleave / c.n_kv !=
                                        (c.prompts ? t * c.interleave / c.n_tokens : t % c.interleave))
                mask[t * ldmask + j] = -kInf;
        }
        if (c.n_tokens > 1 && t == c.n_tokens - 1)
            for (int j = 0; j < c.n_kv; ++j) mask[t * ldmask + j] = -kInf;
        // ALiBi: visible cells hold minus their distance to the token (at position n_kv - n_tokens + t)
        if (c.alibi_max_bias > 0)
            for (int j = 0; j < c.n_kv; ++j)
                if (mask[t * ldmask + j] != -kInf)
                    mask[t * ldmask + j] = -static_cast<float>(std::abs(c.n_kv - c.n_tokens + t - j));
        if (c.interleaved_cells) {  // the row's values move with their cells
            const std::vector<float> row(mask.begin() + t * ldmask, mask.begin() + t * ldmask + c.n_kv);
            for (int j = 0; j < c.n_kv; ++j) mask[t * ldmask + cell_of(j)] = row[j];
        }
    }
    // per-head masks [n_head][n_tokens][ldmask]: the -inf cells stay, the others get a bias of their own
    const int64_t head_stride = c.n_tokens * ldmask;
    std::vector<float> head_masks;
    if (c.per_head_bias) {
        head_masks.resize(c.n_head * head_stride);
        for (int h = 0; h < c.n_head; ++h)
            for (int64_t l = 0; l < head_stride; ++l) {
                // (in the order of the logical cells: the interleaved layout gets the same biases)
                const int j = static_cast<int>(l % ldmask);
                const int64_t i = l - j + (j < c.n_kv ? cell_of(j) : j);
                head_masks[h * head_stride + i] = mask[i] == -kInf ? -kInf : mask[i] + normal(rng) * 1.5f;
            }
    }
    // the mask value head h sees for token t, cell j
    auto mask_at = [&](int h, int t, int j) {
        return c.per_head_bias ? head_masks[h * head_stride + t * ldmask + j] : mask[t * ldmask + j];
    };
    std::vector<float> slopes(c.n_head);
    alibi_slopes(c.n_head, c.alibi_max_bias, slopes.data());  // all 1 when the max bias is 0
    // every other row, in reverse order, unless the case names them
    std::vector<int32_t> rows = c.rows;
    if (rows.empty())
        for (int t = c.n_tokens - 1; t >= 0; t -= (c.n_tokens > 2 ? 2 : 1)) rows.push_back(t);
    const int64_t ldo = q_dim + 1;
    std::vector<float> out(rows.size() * ldo, 777.0f);

    AttentionArgs a;
    a.q = q.data();
    a.ldq = ldq;
    a.n_head = c.n_head;
    a.n_head_kv = c.n_head_kv;
    a.head_dim_k = hd;
    a.head_dim_v = hd;
    a.k = kbuf.data();
    a.type_k = c.type_k;
    a.k_row_bytes = k_row_bytes;
    a.v = vbuf.data();
    a.type_v = c.type_v;
    a.v_trans = c.v_trans;
    a.v_row_bytes = v_row_bytes;
    a.v_cells = cells;
    a.n_kv = c.n_kv;
    a.mask = c.per_head_bias ? head_masks.data() : mask.data();
    a.ldmask = ldmask;
    a.mask_head_stride = c.per_head_bias ? head_stride : 0;
    a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.softcap = c.softcap;
    a.encoder_pass = c.encoder_pass;
    a.own_values = c.own_values;
    a.alibi = c.alibi_max_bias > 0 || c.slopes_of_one ? slopes.data() : nullptr;
    a.rows = rows.data();
    a.n_rows = static_cast<int>(rows.size());
    a.out = out.data();
    a.ldo = ldo;
    ThreadPool pool(n_threads);
    attention(a, pool);

    const GgmlType qt = type_traits(c.type_k).vec_dot_type;
    const GgmlType pt = c.v_trans ? type_traits(c.type_v).vec_dot_type : GgmlType::F32;
    // The largest |m| of each K block (Q4_1 / Q5_1: the f16 after d; 0 for the other types),
    // [cell][kv_dim/32]
    const bool k_has_min = c.type_k == GgmlType::Q4_1 || c.type_k == GgmlType::Q5_1;
    auto k_block_min = [&](uint32_t j, int g, int b) {
        if (!k_has_min) return 0.0;
        const size_t bb = type_traits(c.type_k).type_size;
        const uint8_t *blk = kbuf.data() + j * k_row_bytes + g * row_size(c.type_k, hd) + b * bb;
        float m;
        dequantize_row(GgmlType::F16, blk + 2, &m, 1);
        return static_cast<double>(std::fabs(m));
    };
    int bad = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const int t = rows[i];
        for (int h = 0; h < c.n_head; ++h) {
            const int g = h / gqa;
            const std::vector<float> qh = through(qt, q.data() + t * ldq + h * hd, hd);
            // bound on the f16 rounding of each Q8_1 block's sum (k_has_min only), scaled as the scores are
            std::vector<double> s_err(hd / 32 + 1, 0.0);
            if (k_has_min)
                for (int b = 0; b < hd / 32; ++b) {
                    double sum = 0;
                    for (int d = 32 * b; d < 32 * b + 32; ++d) sum += qh[d];
                    s_err[b] = std::fabs(sum) * 0x1p-11 + 1e-7;
                }
            double score_err = 0;  // the largest score difference the Q8_1 sums may make, over the cells
            std::vector<double> p(c.n_kv, 0.0);
            double mx = -1e300;
            bool any = false;
            for (int j = 0; j < c.n_kv; ++j) {
                if (mask[t * ldmask + j] == -kInf) continue;
                double s = 0;
                for (int d = 0; d < hd; ++d) s += static_cast<double>(qh[d]) * kdq[j * kv_dim + g * hd + d];
                s *= a.scale;
                if (k_has_min) {
                    double e = 0;
                    for (int b = 0; b < hd / 32; ++b) e += k_block_min(j, g, b) * s_err[b];
                    score_err = std::max(score_err, e * a.scale);
                }
                if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
                s += static_cast<double>(c.alibi_max_bias > 0 ? slopes[h] : 1.0f) * mask_at(h, t, j);
                p[j] = s;
                mx = std::max(mx, s);
                any = true;
            }
            double sum = 0;
            for (int j = 0; j < c.n_kv; ++j) {
                p[j] = mask[t * ldmask + j] == -kInf ? 0.0 : std::exp(p[j] - mx);
                sum += p[j];
            }
            if (any)
                for (double &v : p) v /= sum;
            // Error of the probabilities' conversion to the dot type of V, per cell.
            std::vector<double> dp(c.n_kv, 0.0);
            if (pt == GgmlType::F16) {
                for (int j = 0; j < c.n_kv; ++j) dp[j] = p[j] * 0x1p-11 + 0x1p-25;
            } else if (pt == GgmlType::BF16) {  // rounded to nearest: half of bf16's 2^-7 ulp, relative
                for (int j = 0; j < c.n_kv; ++j) dp[j] = p[j] * 0x1p-8 + 1e-38;
            } else if (pt == GgmlType::Q8_0) {
                for (int b0 = 0; b0 < c.n_kv; b0 += 32) {
                    double bm = 0;
                    for (int j = b0; j < std::min(c.n_kv, b0 + 32); ++j) bm = std::max(bm, p[j]);
                    for (int j = b0; j < std::min(c.n_kv, b0 + 32); ++j)
                        dp[j] = bm / 127.0 * 0.5 * 1.01 + p[j] * 1e-3;
                }
            }
            for (int d = 0; d < hd; ++d) {
                double want = 0, tol = 0;
                for (int j = 0; j < c.n_kv; ++j) {
                    const double v = vdq[j * kv_dim + g * hd + d];
                    want += p[j] * v;
                    // a score off by at most e moves p_j by at most p_j (e + sum_i p_i e) <= 2 e p_j (to
                    // first order); with a softcap the slope of tanh is at most 1
                    tol += (dp[j] + p[j] * (2e-5 + 2.0 * score_err)) * std::fabs(v);
                }
                tol += 1e-6;
                const float got = out[i * ldo + h * hd + d];
                if (!(std::fabs(got - want) <= tol) && ++bad < 5)
                    ADD_FAILURE() << "row " << t << " head " << h << " dim " << d << ": got " << got
                                  << " want " << want << " tol " << tol;
            }
        }
        EXPECT_EQ(out[i * ldo + q_dim], 777.0f) << "wrote past the heads";
    }
    EXPECT_EQ(bad, 0);
    return out;
}

// The KV cache types (kv_cache.h).
const GgmlType kCacheTypes[] = {GgmlType::F16,  GgmlType::F32,  GgmlType::BF16,
                                GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                                GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL};

TEST(AttentionTest, CachesLayoutsAndGqa) {
    uint32_t seed = 1;
    for (GgmlType tk : kCacheTypes) {
        for (bool v_trans : {true, false}) {
            for (auto [nh, nkv] : {std::pair{4, 4}, std::pair{8, 2}, std::pair{6, 1}}) {
                for (auto [n_kv, n_tokens] :
                     {std::pair{1, 1}, std::pair{37, 1}, std::pair{64, 5}, std::pair{200, 9}}) {
                    // A block type as V needs whole blocks along its rows: head_dim (not transposed) or the
                    // cells (transposed: cells = n_kv + 3, not a multiple of 32; only F16 / F32 / BF16 there,
                    // as in the cache, which stores a block-quantized V by rows only).
                    const GgmlType tv = v_trans && type_traits(tk).is_quantized ? GgmlType::F16 : tk;
                    const Case c{nh, nkv, 64, n_kv, n_tokens, tk, tv, v_trans};
                    for (int threads : {1, 2}) run_case(c, seed++, threads);
                    if (::testing::Test::HasFailure()) return;
                }
            }
        }
    }
}

// K and V of different types (llama.cpp allows any pair; a block-quantized V by rows), prompts that turn the
// key and value blocks and decoded tokens, cells that end inside a block of 16 and a tail past the last 32.
TEST(AttentionTest, MixedKeyAndValueTypes) {
    uint32_t seed = 700;
    const std::pair<GgmlType, GgmlType> pairs[] = {
        {GgmlType::Q4_0, GgmlType::Q8_0},  {GgmlType::Q8_0, GgmlType::Q4_0},
        {GgmlType::F16, GgmlType::Q5_1},   {GgmlType::Q5_0, GgmlType::IQ4_NL},
        {GgmlType::IQ4_NL, GgmlType::F16}, {GgmlType::BF16, GgmlType::Q4_1},
        {GgmlType::Q4_1, GgmlType::BF16}};
    for (auto [tk, tv] : pairs)
        for (int hd : {64, 128})
            for (auto [n_kv, n_tokens] : {std::pair{45, 1}, std::pair{141, 12}}) {
                for (bool v_trans : {true, false}) {
                    if (v_trans && type_traits(tv).is_quantized) continue;
                    run_case(Case{8, 2, hd, n_kv, n_tokens, tk, tv, v_trans}, seed++, 2);
                    if (::testing::Test::HasFailure()) return;
                }
            }
}

TEST(AttentionTest, HeadDim128AndLongContext) {
    run_case(Case{4, 2, 128, 700, 3, GgmlType::F16, GgmlType::F16, true}, 91, 2);
    run_case(Case{4, 2, 128, 700, 3, GgmlType::F16, GgmlType::F16, false}, 92, 2);
    run_case(Case{2, 1, 32, 1500, 1, GgmlType::F16, GgmlType::F16, true}, 93, 1);
}

// One decoded token with few KV heads is split by query head across threads instead of by KV head group:
// the outputs must keep the same bits as the grouped single-thread computation.
TEST(AttentionTest, SplitByQueryHeadKeepsTheValues) {
    for (bool v_trans : {true, false}) {
        const Case c{9, 3, 64, 300, 1, GgmlType::F16, GgmlType::F16, v_trans};
        const std::vector<float> one = run_case(c, 51, 1), two = run_case(c, 51, 2);
        EXPECT_EQ(one, two) << "v_trans " << v_trans;
    }
}

// Prompts (4 rows and more) over an F16 key cache take the turned key blocks on AVX-512 (attention_x86.h):
// head dims that are not a multiple of 16, spans that start and end inside a block, row groups with a row
// that sees nothing.
TEST(AttentionTest, PromptHeadDimsAndBlockEdges) {
    uint32_t seed = 200;
    for (int hd : {72, 80, 96}) {
        for (bool v_trans : {true, false}) {
            run_case(Case{6, 2, hd, 45, 13, GgmlType::F16, GgmlType::F16, v_trans}, seed++, 2);
            run_case(Case{3, 3, hd, 16, 8, GgmlType::F16, GgmlType::F16, v_trans}, seed++, 1);
            if (::testing::Test::HasFailure()) return;
        }
    }
}

// A prompt chunk of one sequence beside decoded tokens of others, each sequence in a region of its own:
// the prompt's rows share the turned key blocks and the other rows (grouped with them or with each other
// in a work item) take the dot products over their own span, on each path.
TEST(AttentionTest, SequencesInRegions) {
    uint32_t seed = 400;
    for (GgmlType tk : {GgmlType::F16, GgmlType::F32}) {
        for (bool v_trans : {true, false}) {
            for (auto [n_kv, n_tokens] : {std::pair{200, 16}, std::pair{333, 23}, std::pair{96, 8}}) {
                Case c{6, 2, 64, n_kv, n_tokens, tk, tk, v_trans};
                c.regions = 4;
                for (int threads : {1, 2}) run_case(c, seed++, threads);
                if (::testing::Test::HasFailure()) return;
            }
        }
    }
    // a short prompt beside rows spread over many regions
    Case c{6, 2, 64, 300, 8, GgmlType::F16, GgmlType::F16, true};
    c.regions = 9;
    run_case(c, seed++, 2);
}

// Decoded tokens over values stored by rows (flash attention) with every cell visible: chunks of cells
// without a zero probability take the loop without branches (weighted_rows_x86_inl.h). Query-head groups
// of 8 and 12 (a whole register group and one over), head dims with channels past whole runs of vectors.
TEST(AttentionTest, DecodeOverValuesByRowsWithEveryCellVisible) {
    uint32_t seed = 600;
    for (GgmlType t : kCacheTypes) {
        for (int hd : {64, 72, 80, 96, 128}) {
            if (type_traits(t).is_quantized && hd % 32 != 0) continue;  // block rows are whole blocks
            for (auto [nh, nkv] : {std::pair{8, 1}, std::pair{12, 1}, std::pair{32, 4}}) {
                for (auto [n_kv, n_tokens] : {std::pair{300, 1}, std::pair{129, 2}}) {
                    Case c{nh, nkv, hd, n_kv, n_tokens, t, t, false};
                    c.no_holes = true;
                    for (int threads : {1, 2}) run_case(c, seed++, threads);
                    if (::testing::Test::HasFailure()) return;
                }
            }
        }
    }
}

// A prompt over F16 values stored by rows (turned to F16 channel rows, against f32 probabilities) gives the
// bits of the same values in an F32 cache (turned to f32 channel rows): the mixed gemm is the F32 one. So do
// decoded tokens (one chain per output either way).
TEST(AttentionTest, F16ValuesByRowsGiveTheBitsOfTheSameValuesInF32) {
    uint32_t seed = 900;
    for (Case c : {Case{8, 2, 64, 300, 16, GgmlType::F16, GgmlType::F16, false},
                   Case{32, 4, 64, 200, 12, GgmlType::F16, GgmlType::F16, false},
                   Case{6, 3, 128, 150, 9, GgmlType::Q8_0, GgmlType::F16, false},
                   Case{8, 2, 64, 100, 2, GgmlType::F16, GgmlType::F16, false}}) {
        c.f16_values = true;
        for (int threads : {1, 2}) {
            const std::vector<float> f16 = run_case(c, seed, threads);
            Case f32 = c;
            f32.type_v = GgmlType::F32;
            const std::vector<float> want = run_case(f32, seed, threads);
            ASSERT_EQ(f16.size(), want.size());
            EXPECT_EQ(std::memcmp(f16.data(), want.data(), sizeof(float) * f16.size()), 0)
                << case_name(c) << " threads " << threads;
            ++seed;
        }
    }
}

// Each output row of a prompt has the same bits whichever rows share its work item (F16 and Q8_0 keys).
TEST(AttentionTest, PromptRowsKeepTheirValuesInAnyGrouping) {
    const int n_tok = 11;
    // out[token][q_dim] of the given rows (run_case writes them in rows' order, q_dim + 1 apart)
    for (GgmlType tk : {GgmlType::F16, GgmlType::Q8_0, GgmlType::BF16, GgmlType::Q4_1, GgmlType::IQ4_NL}) {
        SCOPED_TRACE(type_name(tk));
        auto run = [&](std::vector<int32_t> rows, int threads) {
            Case c{8, 2, 64, 70, n_tok, tk, GgmlType::F16, false};
            c.rows = rows;
            const std::vector<float> out = run_case(c, 7, threads);
            const int64_t q_dim = 8 * 64;
            std::vector<float> by_token(n_tok * q_dim, 0.0f);
            for (size_t i = 0; i < rows.size(); ++i)
                std::copy(out.begin() + i * (q_dim + 1), out.begin() + i * (q_dim + 1) + q_dim,
                          by_token.begin() + rows[i] * q_dim);
            return by_token;
        };
        std::vector<int32_t> forward(n_tok), backward(n_tok);
        for (int t = 0; t < n_tok; ++t) forward[t] = t, backward[t] = n_tok - 1 - t;
        const std::vector<float> a = run(forward, 1), b = run(backward, 2);
        EXPECT_EQ(a, b);
        // and 5 of the tokens on their own
        const std::vector<int32_t> some = {9, 3, 0, 7, 5};
        const std::vector<float> c = run(some, 1);
        const int64_t q_dim = 8 * 64;
        for (int t : some)
            EXPECT_TRUE(std::equal(a.begin() + t * q_dim, a.begin() + (t + 1) * q_dim, c.begin() + t * q_dim))
                << "token " << t;
    }
}

// An encoder's pass (BERT, T5's encoder) over its F32 keys takes the turned key blocks where the CPU has
// AVX-512: rows without random holes, T5's per-head bias, head dims off the 16s, spans that end inside a
// block, GQA; each against the reference, with the same values on 1 and 2 threads. Where the turned path
// runs, its scores are summed in another order than the dot products' (the only reason it is limited to
// encoders), so the output must differ from the dot products' somewhere: a check that the path is taken at
// all.
TEST(AttentionTest, EncoderPassOverF32Keys) {
    uint32_t seed = 900;
    bool any_differs = false;
    for (int hd : {32, 64, 72})
        for (bool v_trans : {true, false})
            for (bool head_bias : {false, true}) {
                Case c{6, head_bias ? 6 : 2, hd, 45, 45, GgmlType::F32, GgmlType::F32, v_trans};
                c.no_holes = true;
                c.per_head_bias = head_bias;
                c.encoder_pass = true;
                const std::vector<float> one = run_case(c, seed, 1), two = run_case(c, seed, 2);
                EXPECT_EQ(one, two);
                c.encoder_pass = false;
                any_differs = any_differs || run_case(c, seed, 1) != one;
                ++seed;
                if (::testing::Test::HasFailure()) return;
            }
    if (detail::use_avx2_row_ops()) {  // (the turned key blocks: AVX-512, or AVX2 for an encoder's F32 keys)
        EXPECT_TRUE(any_differs) << "the encoder's pass took the dot products";
    }
}

// An encoder's own K and V rows attended in place (model/blocks.h keep_kv: V by rows, weighed by rows, in
// groups of an item's rows): against the reference for 1 to 3 rows, prompts whose rows share their first cell
// and end apart (grouped, each row's probabilities zero past its end) or start apart (mask holes), per-head
// masks and rows over their visible cells (sequences whose cells interleave); 1 and 2 threads give the same
// bits.
TEST(AttentionTest, OwnValueRowsAgainstTheReference) {
    uint32_t seed = 950;
    for (int n_tokens : {1, 2, 3, 6, 21, 40}) {
        for (int seqs : {0, 2, 4}) {
            Case c{6, 2, 64, seqs > 0 ? 40 * seqs : 45, n_tokens, GgmlType::F32, GgmlType::F32, false};
            c.encoder_pass = true;
            c.own_values = true;
            c.per_head_bias = n_tokens == 6;
            c.no_holes = n_tokens >= 21;  // every row from cell 0: items grouped
            if (seqs > 0) {
                c.interleave = seqs;
                c.interleaved_cells = true;  // rows over their visible cells
            }
            EXPECT_EQ(run_case(c, seed, 1), run_case(c, seed, 2)) << case_name(c);
            ++seed;
            if (::testing::Test::HasFailure()) return;
        }
    }
}

// An encoder's pass over several texts (bert, nomic-bert: cells in batch order, a token sees its own text):
// each text's outputs are the bits it gets alone, wherever it starts in the pass and whatever texts share it.
// (Before, a work item of rows from two texts took the dot products where one text's item took the turned key
// blocks, and the embeddings moved by up to 2.6e-5 with their place in the pass.)
TEST(AttentionTest, EncoderTextsGiveTheirBitsAloneWhereverTheyStart) {
    constexpr int n_head = 4, head_dim = 64, k_dim = n_head * head_dim;
    // lengths that leave items across texts at every rows-per-item choice, long and short means, and texts
    // of fewer tokens than the rows from which a decoder's keys are turned
    for (const std::vector<int> &lens : {std::vector<int>{5, 23, 40, 17, 9, 31}, std::vector<int>{90, 7, 130},
                                         std::vector<int>{4, 11, 8, 3, 9, 2, 10, 3, 8, 1}}) {
        int n = 0;
        for (int l : lens) n += l;
        std::mt19937 rng(static_cast<uint32_t>(n));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> k(static_cast<size_t>(n) * k_dim), v(k.size()), q(k.size());
        for (float &e : k) e = normal(rng);
        for (float &e : v) e = normal(rng);
        for (float &e : q) e = normal(rng);
        // V as a transposed cache holds it (channel rows of n cells), or the pass's own rows as the
        // projection leaves them (AttentionArgs::own_values, what an encoder runs)
        auto run = [&](int first, int count, bool own) {
            std::vector<float> vt(static_cast<size_t>(k_dim) * count),
                out(static_cast<size_t>(count) * k_dim);
            for (int c = 0; c < k_dim; ++c)
                for (int j = 0; j < count; ++j) vt[c * count + j] = v[(first + j) * k_dim + c];
            // the mask of the texts inside [first, first + count): 0 within a text, -inf across
            std::vector<float> mask(static_cast<size_t>(count) * count, -INFINITY);
            for (int t0 = 0, i = 0; i < static_cast<int>(lens.size()); t0 += lens[i++])
                for (int r = std::max(t0, first); r < std::min(t0 + lens[i], first + count); ++r)
                    for (int j = std::max(t0, first); j < std::min(t0 + lens[i], first + count); ++j)
                        mask[(r - first) * count + (j - first)] = 0.0f;
            std::vector<int32_t> rows(count);
            for (int r = 0; r < count; ++r) rows[r] = r;
            AttentionArgs a;
            a.q = q.data() + static_cast<size_t>(first) * k_dim;
            a.ldq = k_dim;
            a.n_head = a.n_head_kv = n_head;
            a.head_dim_k = a.head_dim_v = head_dim;
            a.k = reinterpret_cast<const uint8_t *>(k.data() + static_cast<size_t>(first) * k_dim);
            a.type_k = a.type_v = GgmlType::F32;
            a.k_row_bytes = sizeof(float) * k_dim;
            if (own) {
                a.v = reinterpret_cast<const uint8_t *>(v.data() + static_cast<size_t>(first) * k_dim);
                a.v_trans = false;
                a.v_row_bytes = sizeof(float) * k_dim;
                a.own_values = true;
            } else {
                a.v = reinterpret_cast<const uint8_t *>(vt.data());
                a.v_trans = true;
                a.v_cells = static_cast<uint32_t>(count);
            }
            a.n_kv = count;
            a.mask = mask.data();
            a.ldmask = count;
            a.scale = 0.125f;
            a.rows = rows.data();
            a.n_rows = count;
            a.out = out.data();
            a.ldo = k_dim;
            a.encoder_pass = true;
            ThreadPool pool(2);
            attention(a, pool);
            return out;
        };
        for (bool own : {false, true}) {
            SCOPED_TRACE(own ? "own value rows" : "transposed values");
            const std::vector<float> all = run(0, n, own);
            for (int t0 = 0, i = 0; i < static_cast<int>(lens.size()); t0 += lens[i++]) {
                SCOPED_TRACE(lens[i]);
                const std::vector<float> alone = run(t0, lens[i], own);
                for (size_t e = 0; e < alone.size(); ++e)
                    ASSERT_EQ(all[static_cast<size_t>(t0) * k_dim + e], alone[e])
                        << "text at " << t0 << ", value " << e;
            }
        }
    }
}

TEST(AttentionTest, Softcap) {
    run_case(Case{4, 2, 64, 50, 3, GgmlType::F16, GgmlType::F16, true, 5.0f}, 94, 1);
    run_case(Case{4, 2, 64, 50, 3, GgmlType::F32, GgmlType::F32, false, 5.0f}, 95, 2);
}

// ALiBi slopes as ggml's soft_max_ext forms them: powers of 2^(-8 / n2) for the first n2 heads (n2 the
// largest power of two <= n_head), odd powers of 2^(-4 / n2) for the rest; a max bias of 0 gives 1.
TEST(AttentionTest, AlibiSlopes) {
    for (int n_head : {1, 4, 6, 8, 12, 32, 40}) {
        std::vector<float> s(n_head);
        alibi_slopes(n_head, 8.0f, s.data());
        int n2 = 1;
        while (n2 * 2 <= n_head) n2 *= 2;
        for (int h = 0; h < n_head; ++h) {
            const double want =
                h < n2 ? std::pow(2.0, -8.0 * (h + 1) / n2) : std::pow(2.0, -4.0 * (2 * (h - n2) + 1) / n2);
            EXPECT_NEAR(s[h], want, want * 1e-6) << "n_head " << n_head << " head " << h;
        }
        alibi_slopes(n_head, 0.0f, s.data());
        for (float v : s) EXPECT_EQ(v, 1.0f);
    }
    std::vector<float> s(4);
    alibi_slopes(4, 8.0f, s.data());  // bloom's 4 heads: 1/4, 1/16, 1/64, 1/256
    EXPECT_EQ(s, (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f}));
}

// ALiBi over every cache layout and both score paths (a decoded token's dot products, a prompt's turned key
// blocks on AVX-512), with GQA and a head count that is not a power of two (the second slope series).
TEST(AttentionTest, Alibi) {
    uint32_t seed = 300;
    for (GgmlType tk : {GgmlType::F16, GgmlType::F32, GgmlType::Q8_0, GgmlType::BF16, GgmlType::Q5_1}) {
        for (bool v_trans : {true, false}) {
            const GgmlType tv = v_trans && type_traits(tk).is_quantized ? GgmlType::F16 : tk;
            for (auto [nh, nkv] : {std::pair{4, 4}, std::pair{6, 2}}) {
                for (auto [n_kv, n_tokens] : {std::pair{1, 1}, std::pair{37, 1}, std::pair{70, 9}}) {
                    Case c{nh, nkv, 64, n_kv, n_tokens, tk, tv, v_trans};
                    c.alibi_max_bias = 8.0f;
                    for (int threads : {1, 2}) run_case(c, seed++, threads);
                    if (::testing::Test::HasFailure()) return;
                }
            }
        }
    }
    // with a softcap as well (the cap applies to the scaled scores, before the bias)
    Case c{4, 2, 64, 50, 6, GgmlType::F16, GgmlType::F16, true, 5.0f};
    c.alibi_max_bias = 8.0f;
    run_case(c, seed++, 2);
}

// A mask per head (T5's relative-position bias): each head's scores take its own mask, on every path (the
// prompt's key blocks, a decoded token's dot products, one or all heads of a KV group per work item).
TEST(AttentionTest, PerHeadMasks) {
    uint32_t seed = 500;
    for (GgmlType tk : {GgmlType::F16, GgmlType::F32}) {
        for (bool v_trans : {true, false}) {
            for (auto [nh, nkv] : {std::pair{4, 4}, std::pair{6, 2}}) {
                for (auto [n_kv, n_tokens] : {std::pair{1, 1}, std::pair{37, 1}, std::pair{70, 9}}) {
                    Case c{nh, nkv, 16, n_kv, n_tokens, tk, tk, v_trans};
                    c.per_head_bias = true;
                    for (int threads : {1, 2}) run_case(c, seed++, threads);
                    if (::testing::Test::HasFailure()) return;
                }
            }
        }
    }
}

// Slopes of 1 over a 0 / -inf mask are the plain computation: the same bits as no slopes, on every path.
TEST(AttentionTest, AlibiSlopesOfOneKeepTheBits) {
    for (int n_tokens : {1, 9}) {
        for (bool v_trans : {true, false}) {
            Case c{8, 2, 64, 90, n_tokens, GgmlType::F16, GgmlType::F16, v_trans};
            const std::vector<float> plain = run_case(c, 77, 2);
            c.slopes_of_one = true;
            EXPECT_EQ(plain, run_case(c, 77, 2)) << "tokens " << n_tokens << " v_trans " << v_trans;
        }
    }
}

// The same case with the sequences' cells interleaved, as a batched decode leaves them.
Case interleaved(Case c) {
    c.interleaved_cells = true;
    return c;
}

// Tokens of 2, 4 or 8 sequences whose cells interleave (one cell of each per decode step): each row sees a
// small part of its span and is computed over its visible cells (2 sequences with holes, 4 and 8), against
// the reference, and against the same sequences with their cells side by side (the span path): the same
// values up to the order of the sums. Every cache type, the head dims of the other tests, V transposed or
// by rows, GQA, 1 and 2 threads; ALiBi, a softcap and per-head masks on the way.
TEST(AttentionTest, InterleavedSequencesOverTheirVisibleCells) {
    uint32_t seed = 1000;
    for (GgmlType t : kCacheTypes) {
        for (int hd : {64, 72, 80, 96, 128}) {
            if (type_traits(t).is_quantized && hd % 32 != 0) continue;  // block rows are whole blocks
            if (t != GgmlType::F16 && hd != 64 && hd != 128) continue;
            for (bool v_trans : {true, false}) {
                const GgmlType tv = v_trans && type_traits(t).is_quantized ? GgmlType::F16 : t;
                for (int seqs : {2, 4, 8}) {
                    const int n_tokens = seqs == 2 ? 5 : seqs + 1;
                    Case c{seqs == 8 ? 9 : 8,
                           seqs == 8 ? 3 : 2,
                           hd,
                           32 * seqs + 8 * seqs,
                           n_tokens,
                           t,
                           tv,
                           v_trans};
                    c.interleave = seqs;
                    c.softcap = seqs == 4 && v_trans ? 5.0f : 0.0f;
                    c.alibi_max_bias = seqs == 4 && !v_trans ? 8.0f : 0.0f;
                    c.per_head_bias = seqs == 2 && t == GgmlType::F16;
                    for (int tok = n_tokens - 1; tok >= 0; --tok) c.rows.push_back(tok);
                    for (int threads : {1, 2}) {
                        const Case inter = interleaved(c);
                        const std::vector<float> dense = run_case(c, seed, threads);
                        const std::vector<float> sparse = run_case(inter, seed, threads);
                        ASSERT_EQ(dense.size(), sparse.size());
                        int bad = 0;
                        for (size_t i = 0; i < dense.size(); ++i)
                            if (!(std::fabs(dense[i] - sparse[i]) <= 1e-5f * (1.0f + std::fabs(dense[i]))) &&
                                ++bad < 5)
                                ADD_FAILURE() << case_name(inter) << " threads " << threads << " output " << i
                                              << ": " << sparse[i] << " vs side by side " << dense[i];
                        ++seed;
                    }
                    if (::testing::Test::HasFailure()) return;
                }
            }
        }
    }
}

// Prompt chunks of 4 sequences over interleaved cells (each sequence's tokens in a run): rows next to a row
// of their own sequence keep their spans where key blocks may be turned, the others (a run's ends, and every
// row where no blocks are turned) go over their visible cells; the same values either way.
TEST(AttentionTest, InterleavedPromptChunks) {
    uint32_t seed = 1500;
    // (Not Q4_1 / Q5_1 here: their turned key blocks skip the f16 rounding of the Q8_1 query sums that their
    // dot products take, a difference the reference allows but the comparison between the layouts would not.)
    for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0, GgmlType::F32, GgmlType::BF16, GgmlType::IQ4_NL}) {
        for (bool v_trans : {true, false}) {
            const GgmlType tv = v_trans && type_traits(t).is_quantized ? GgmlType::F16 : t;
            for (int n_tokens : {8, 13}) {
                Case c{6, 2, 64, 160, n_tokens, t, tv, v_trans};
                c.interleave = 4;
                c.prompts = true;
                for (int tok = 0; tok < n_tokens; ++tok) c.rows.push_back(tok);
                for (int threads : {1, 2}) {
                    const Case inter = interleaved(c);
                    const std::vector<float> dense = run_case(c, seed, threads);
                    const std::vector<float> sparse = run_case(inter, seed, threads);
                    ASSERT_EQ(dense.size(), sparse.size());
                    for (size_t i = 0; i < dense.size(); ++i)
                        ASSERT_LE(std::fabs(dense[i] - sparse[i]), 1e-5f * (1.0f + std::fabs(dense[i])))
                            << case_name(inter) << " threads " << threads << " output " << i;
                    ++seed;
                }
            }
        }
    }
}

#if defined(__x86_64__)
// The turned key blocks' scores (attention_x86.h), AVX-512 and AVX2 where the CPU has them, for every count
// of query vectors an item can hand over (its rows times its heads: 1 to 13, tiles of uneven size included)
// and runs of blocks that do not fill the AVX-512 kernel's run of 4: each score is the one FMA chain over d,
// in order, whatever tile it falls in, so the two levels give the same bits.
TEST(AttentionTest, KeyBlockScoresAreOneChainForEveryQueryCount) {
    if (!isa_at_least(isa_detected(), Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
    using ScoresFn = void (*)(const float *, int, int, const float *, size_t, int64_t, float *, int64_t);
    std::vector<std::pair<const char *, ScoresFn>> levels = {{"avx2", &detail::key_block_scores_avx2}};
    if (isa_at_least(isa_detected(), Isa::Avx512)) levels.push_back({"avx512", &detail::key_block_scores});
    constexpr int dk = 24, n_blocks = 6;
    constexpr size_t block_stride = dk * detail::kKeyBlock + 16;  // blocks apart by more than their size
    std::mt19937 rng(71);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> kt(block_stride * n_blocks);
    for (float &v : kt) v = u(rng);
    for (int n_q = 1; n_q <= 13; ++n_q) {
        SCOPED_TRACE(n_q);
        std::vector<float> q(static_cast<size_t>(n_q) * dk);
        for (float &v : q) v = u(rng);
        const int64_t lds = n_blocks * detail::kKeyBlock + 3;
        for (const auto &[level, scores_fn] : levels) {
            SCOPED_TRACE(level);
            std::vector<float> scores(static_cast<size_t>(n_q * lds), std::nanf(""));
            scores_fn(q.data(), n_q, dk, kt.data(), block_stride, n_blocks, scores.data(), lds);
            for (int h = 0; h < n_q; ++h)
                for (int b = 0; b < n_blocks; ++b)
                    for (int c = 0; c < detail::kKeyBlock; ++c) {
                        float want = 0.0f;
                        for (int d = 0; d < dk; ++d)
                            want = std::fma(q[h * dk + d], kt[b * block_stride + d * detail::kKeyBlock + c],
                                            want);
                        ASSERT_EQ(scores[h * lds + b * detail::kKeyBlock + c], want)
                            << h << " " << b << " " << c;
                    }
        }
    }
}
#endif

}  // namespace
}  // namespace lctx::kernels::attention_test
