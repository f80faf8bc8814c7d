#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_x86.h"
#include "kernels/dot.h"
#include "kernels/ops.h"
#include "kernels/ops_arm.h"
#include "kernels/ops_x86.h"

namespace lctx::kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

using detail::use_avx2_row_ops;

// y += a * x for one V row already in f32, or in f16 (converted on the fly).
void axpy(float a, const float *x, float *y, int n) {
#if defined(__x86_64__)
    if (use_avx2_row_ops()) return detail::axpy_f32_avx2(a, x, y, n);
#elif defined(__aarch64__)
    if (detail::use_neon_row_ops()) return detail::axpy_f32_neon(a, x, y, n);
#endif
    for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

#if defined(__x86_64__)
// The row type of weighted_rows_* (ops_x86.h) for a V cache type; false for a type it does not read.
bool row_type_of(GgmlType t, detail::RowType *out) {
    using detail::RowType;
    switch (t) {
        case GgmlType::F32:
            *out = RowType::F32;
            return true;
        case GgmlType::F16:
            *out = RowType::F16;
            return true;
        case GgmlType::BF16:
            *out = RowType::BF16;
            return true;
        case GgmlType::Q8_0:
            *out = RowType::Q8_0;
            return true;
        case GgmlType::Q4_0:
            *out = RowType::Q4_0;
            return true;
        case GgmlType::Q4_1:
            *out = RowType::Q4_1;
            return true;
        case GgmlType::Q5_0:
            *out = RowType::Q5_0;
            return true;
        case GgmlType::Q5_1:
            *out = RowType::Q5_1;
            return true;
        case GgmlType::IQ4_NL:
            *out = RowType::IQ4_NL;
            return true;
        default:
            return false;
    }
}
#endif

// Per-thread buffers that keep their memory from call to call (no allocation in steady state), one per use.
enum class Scratch {
    TurnedKeys,
    TurnedValues,
    TurnTile,
    Item,
    RowSpans,
    UnseenBlocks,
    Visible,
    VisibleAt,
    Gathered
};
template <typename T, Scratch kUse>
std::vector<T> &scratch() {
    thread_local std::vector<T> buf;
    return buf;
}

// Query rows from which turning every key block once pays (a decoded token keeps the dot products).
constexpr int kMinRowsToTurnKeys = 4;
// Rows that must see each turned cell on average: rows of different sequences see disjoint cells.
constexpr int kMinRowsPerTurnedCell = 2;
// Values stored by rows are turned for head sizes up to this (every model here: 64 to 256).
constexpr int kMaxTurnedHeadDim = 512;
// Whether a call's keys can take turned blocks (attention_x86.h): F16 and the block types on AVX-512, F32 in
// an encoder's pass, for kMinRowsToTurnKeys rows or more (an encoder's pass: any, so that a text of 2 or 3
// tokens alone gets the scores it gets among others, not the dot products' last bits, which the GELU
// table's f16 steps could turn into differences of 6e-6 in its embedding).
bool turnable_keys(const AttentionArgs &a) {
    const bool type_ok = a.type_k == GgmlType::F16 || (a.type_k == GgmlType::F32 && a.encoder_pass) ||
                         (a.type_k != GgmlType::F32 && a.head_dim_k <= kMaxTurnedHeadDim);
    // (At the avx2 level an encoder's F32 keys only: its 512-token passes spent half their time on the dot
    // products, and a decoder's prompts keep the values they had.)
    const bool level_ok = detail::use_avx512_row_ops() ||
                          (a.type_k == GgmlType::F32 && a.encoder_pass && detail::use_avx2_row_ops());
    const bool rows_ok = a.n_rows >= kMinRowsToTurnKeys || (a.encoder_pass && a.type_k == GgmlType::F32);
    return type_ok && a.head_dim_k <= kMaxTurnedHeadDim && rows_ok && level_ok;
}
// Query rows per work item against turned key blocks, at most (rows_per_item below).
constexpr int kRowsPerItem = 16;
// Each run of 4 turned key blocks (in L1) serves every query row of an item, and one product with V serves
// the rows that see spans from the same first cell. An encoder's rows that see long spans go 16 at a time:
// the keys and values of a 512-token pass come from L2 a quarter as often as with 4 (nomic-embed's attention,
// 1 thread: 47 -> 58 G multiply-adds/s). Short spans (texts of ~20 tokens) take fewer, since an item across
// several sequences computes the scores of its whole union of spans and loses the one product with V
// (bge-small 8 x 23 tokens ran 5-10% slower at 16). A decoder's prompt keeps 4: there the item decides
// whether rows of different sequences take the turned blocks or the dot products (other values for quantized
// keys), and 16 gained only 0-8% on llama prompts at depth 4096.
int rows_per_item(const AttentionArgs &a, int64_t mean_span) {
    if (!a.encoder_pass) return 4;
    return mean_span >= 64 ? 16 : mean_span >= 32 ? 8 : 4;
}
// A row that sees fewer than kSparseNum / kSparseDen of the cells in its span (tokens of sequences whose
// cells interleave, as a batched decode with llama.cpp's placement leaves them) takes its scores and softmax
// over the list of its visible cells, their keys gathered first; spans shorter than kMinSparseSpan keep the
// span path (gathering would not pay). Measured (smollm-135m, interleaved decode): at a quarter visible (4
// sequences) this path ran 438 / 384 / 338 tokens/s against the span path's 359 / 289 / 335; at about a half
// (2 sequences) a threshold of 3/4 ran 228 / 329 / 222 against the span path's 330 / 300 / 283.
constexpr int kSparseNum = 1, kSparseDen = 2;
constexpr int kMinSparseSpan = 32;

}  // namespace

// Work items are (query row, KV head): the gqa query heads that share a KV head go together, so each
// K row and V row is loaded once for all of them (the gemm kernels take the heads as activation rows).
// When that gives too few items to keep every thread busy (one decoded token of a model with 3 KV heads
// on 2 threads: a 2:1 split), an item is one query head instead; the values are the same (every kernel
// computes an output the same way whatever its tile). Only the span of cells between the first and the
// last visible one is computed. A prompt over F16 keys on AVX-512 takes rows_per_item rows per item against
// key blocks turned once per call (attention_x86.h); its rows keep their values in any grouping (each score
// is one chain of products), though not the bits of the dot products a decoded token uses. A row that sees
// a small part of its span (sequences whose cells interleave) is computed over its visible cells instead
// (sparse_row): its values depend on its mask row alone, not on the rows it shares an item with, though
// where key blocks may be turned, a row next to another that sees the same first cell (a prompt's rows)
// keeps its span.
void attention(const AttentionArgs &a, ThreadPool &pool) {
    const TypeKernels &kk = type_kernels(a.type_k);
    const TypeKernels *kv = a.v_trans ? &type_kernels(a.type_v) : nullptr;
    const int gqa = a.n_head / a.n_head_kv;
    const size_t q_act_bytes = row_size(kk.act_type, a.head_dim_k);
    const size_t k_head_bytes = row_size(a.type_k, a.head_dim_k);
    const size_t v_elem_bytes = a.v_trans ? type_traits(a.type_v).type_size : 0;
    const size_t v_head_bytes = a.v_trans ? 0 : row_size(a.type_v, a.head_dim_v);
    // Probabilities are converted to V's dot type in whole blocks from cell 0 (as before) when that type
    // has blocks; elementwise types can start anywhere.
    const int64_t p_block = kv ? type_traits(kv->act_type).block_size : 1;
    const int64_t work = static_cast<int64_t>(a.n_rows) * a.n_head * a.n_kv * (a.head_dim_k + a.head_dim_v);
    const int max_threads = work < (int64_t{1} << 14) ? 1 : pool.n_active();
    // Query heads per work item: a KV head's group, or one head when groups are too few to balance.
    const int64_t n_groups = static_cast<int64_t>(a.n_rows) * a.n_head_kv;
    // (Groups that split evenly over the threads stay whole: each head of an item would read the group's
    // values again.)
    const int hpi =
        gqa > 1 && max_threads > 1 && n_groups < 4 * max_threads && n_groups % max_threads != 0 ? 1 : gqa;
    const int items_per_row = a.n_head / hpi;
    // The visible span [j0, j1) of every row, up front: whether turning keys pays depends on how many rows
    // see each key. (Probabilities into a blocked V type start at cell 0: the whole range.)
    std::vector<int> &spans = scratch<int, Scratch::RowSpans>();  // the calling thread's
    spans.resize(2 * static_cast<size_t>(a.n_rows));
    int64_t sum_spans = 0;
    // Rows computed over their visible cells: row r's are visible[vis[2 r], + vis[2 r + 1]) (a count of 0:
    // the row takes its span); such a row's span is left empty for the span path.
    std::vector<int32_t> &visible = scratch<int32_t, Scratch::Visible>();
    std::vector<int32_t> &vis = scratch<int32_t, Scratch::VisibleAt>();
    vis.assign(2 * static_cast<size_t>(a.n_rows), 0);
    visible.clear();
    for (int r = 0; r < a.n_rows; ++r) {
        int32_t j01[2];
        const float *mrow = a.mask + static_cast<int64_t>(a.rows[r]) * a.ldmask;
        if (a.spans) {
            j01[0] = a.spans[2 * static_cast<int64_t>(a.rows[r])];
            j01[1] = a.spans[2 * static_cast<int64_t>(a.rows[r]) + 1];
        } else {
            attention_mask_spans(mrow, a.ldmask, 1, a.n_kv, j01);
        }
        spans[2 * r] = j01[0];
        spans[2 * r + 1] = j01[1];
        // (Probabilities in blocks of a blocked V dot type start at cell 0: no gathering there.)
        // (The count stops at the threshold: a prompt row that sees its whole span costs half a pass over
        // it.)
        const int64_t limit =
            (static_cast<int64_t>(j01[1] - j01[0]) * kSparseNum + kSparseDen - 1) / kSparseDen;
        if (p_block == 1 && j01[1] - j01[0] >= kMinSparseSpan) {
            int64_t n = 0;
            for (int j = j01[0]; j < j01[1] && n < limit; ++j) n += mrow[j] != kNegInf;
            if (n < limit) {
                vis[2 * r] = static_cast<int32_t>(visible.size());
                vis[2 * r + 1] = static_cast<int32_t>(n);
                for (int j = j01[0]; j < j01[1]; ++j)
                    if (mrow[j] != kNegInf) visible.push_back(j);
            }
        }
    }
    // Rows of one sequence's prompt (neighbours that see the same first cell) share the turned key blocks
    // below where there are some (F16 and quantized keys on AVX-512): one row over its gathered cells costs
    // more than its share of the blocks, masked cells and all. Such rows keep their spans.
    const bool blocks_possible = turnable_keys(a);
    auto first_cell = [&](int r) { return vis[2 * r + 1] > 0 ? visible[vis[2 * r]] : -1; };
    int prev_first = -1;  // row r - 1's first visible cell before its count was cleared
    for (int r = 0; r < a.n_rows && blocks_possible; ++r) {
        const int f = first_cell(r);
        if (f >= 0 && (f == prev_first || (r + 1 < a.n_rows && f == first_cell(r + 1)))) vis[2 * r + 1] = 0;
        prev_first = f;
    }
    for (int r = 0; r < a.n_rows; ++r) {
        int32_t &j0 = spans[2 * r], &j1 = spans[2 * r + 1];
        if (vis[2 * r + 1] > 0) j0 = j1 = 0;
        if (j0 < j1 && p_block > 1) {
            j0 = 0;
            j1 = a.n_kv;
        }
        sum_spans += j1 - j0;
    }

    // A prompt's scores against F16 or Q8_0 keys from turned key blocks (attention_x86.h) where the CPU has
    // AVX-512: the blocks some row sees, turned once up front ([n_head_kv][n_blocks][dk][16], the keys'
    // exact f32 values), when on average kMinRowsPerTurnedCell rows see each of their cells; the queries in
    // the keys' dot type (as the dot products take them) as f32. Tokens of different sequences decoded
    // together see disjoint cells, and keep the dot products.
    using detail::kKeyBlock;
    const int dk = a.head_dim_k;
    const int64_t n_blocks = (a.n_kv + kKeyBlock - 1) / kKeyBlock;
    bool key_blocks = blocks_possible;
    // Values stored by rows (flash-attention contexts) are turned into channel rows the same way, so that a
    // prompt's product with V runs as the transposed cache's does, instead of one cell's row at a time. An
    // encoder's own values (AttentionArgs::own_values) are weighed by rows in groups where the x86 kernels
    // for that exist (weighted_rows_*: 10-30% faster than turning them and the channel-row product in
    // attention_bench, bge-small and nomic-embed, 128 and 512 tokens, avx2 and avx512); elsewhere (NEON, the
    // scalar level) every call turns them, whatever its rows and spans, for the channel-row gemm (one axpy
    // per cell there ran 15-45% slower at the scalar level), and a text's values take that one product
    // whatever texts share its call.
#if defined(__x86_64__)
    const bool own_by_rows = a.own_values && use_avx2_row_ops();
#else
    const bool own_by_rows = false;
#endif
    const bool own_turned = a.own_values && !own_by_rows;
    bool turn_values = !a.v_trans && !own_by_rows && a.head_dim_v <= kMaxTurnedHeadDim &&
                       (a.n_rows >= kMinRowsToTurnKeys || own_turned);
    // unturned[b]: blocks before b that no row sees (prefix counts; a block item needs none in its range)
    std::vector<int32_t> &unturned = scratch<int32_t, Scratch::UnseenBlocks>();
    if (key_blocks || turn_values) {
        unturned.assign(static_cast<size_t>(n_blocks) + 1, 0);
        for (int r = 0; r < a.n_rows; ++r)  // coverage as a difference array over blocks
            if (spans[2 * r] < spans[2 * r + 1]) {
                ++unturned[spans[2 * r] / kKeyBlock];
                --unturned[(spans[2 * r + 1] + kKeyBlock - 1) / kKeyBlock];
            }
        int32_t cover = 0, n_unseen = 0;
        int64_t seen_cells = 0;
        for (int64_t b = 0; b < n_blocks; ++b) {
            cover += unturned[b];
            unturned[b] = n_unseen;
            if (cover > 0)
                seen_cells += std::min<int64_t>(kKeyBlock, a.n_kv - b * kKeyBlock);
            else
                ++n_unseen;
        }
        unturned[n_blocks] = n_unseen;
        const bool shared = seen_cells > 0 && sum_spans >= kMinRowsPerTurnedCell * seen_cells;
        key_blocks = key_blocks && shared;
        turn_values = turn_values && (shared || own_turned);
        // (Every block where an encoder's values are turned: rows over their visible cells, whose spans are
        // empty here, weigh the turned channel rows too.)
        if (own_turned) std::fill(unturned.begin(), unturned.end(), 0);
    }
    auto block_seen = [&](int64_t b) { return unturned[b + 1] == unturned[b]; };
    const int64_t lds = key_blocks ? n_blocks * kKeyBlock : a.n_kv;  // a score row: whole blocks
    const size_t per_block = static_cast<size_t>(dk) * kKeyBlock;
    // turn(g, blk, i) for each (KV head, block some row sees), i = g * n_blocks + blk, over the pool
    auto for_each_seen_block = [&](auto &&turn) {
        pool.parallel_for(
            a.n_head_kv * n_blocks, 8,
            [&](int64_t i0, int64_t i1) {
                for (int64_t i = i0; i < i1; ++i)
                    if (block_seen(i % n_blocks)) turn(i / n_blocks, i % n_blocks, i);
            },
            max_threads);
    };
    [[maybe_unused]] const float *turned = nullptr;  // (the x86 key blocks only)
#if defined(__x86_64__)
    const auto key_scores =
        detail::use_avx512_row_ops() ? detail::key_block_scores : detail::key_block_scores_avx2;
#endif
    if (key_blocks) {
        std::vector<float> &buf = scratch<float, Scratch::TurnedKeys>();
        buf.resize(static_cast<size_t>(a.n_head_kv * n_blocks) * per_block);
        for_each_seen_block([&](int64_t g, int64_t blk, int64_t i) {
            const uint8_t *k0 = a.k + g * k_head_bytes + blk * kKeyBlock * a.k_row_bytes;
            const int n = static_cast<int>(std::min<int64_t>(kKeyBlock, a.n_kv - blk * kKeyBlock));
            float *kt = buf.data() + i * per_block;
            if ((a.type_k == GgmlType::F16 || a.type_k == GgmlType::F32) && detail::use_avx512_row_ops()) {
#if defined(__x86_64__)  // (key_blocks is false elsewhere: the turned blocks are the x86 kernels')
                if (a.type_k == GgmlType::F16)
                    detail::turn_key_block_f16(k0, a.k_row_bytes, n, dk, kt);
                else
                    detail::turn_key_block_f32(k0, a.k_row_bytes, n, dk, kt);
#endif
                return;
            }
            // The other types (and F32 at the avx2 level): each cell's keys as f32 (dequantize_row's values,
            // exact: d * q (+ m) of a block type, the bf16 bits widened) into its lane of the block (dk x 16
            // floats, in L1); cells past n are zero
            float row[kMaxTurnedHeadDim];
            for (int c = 0; c < kKeyBlock; ++c) {
                if (c < n)
                    dequantize_row(a.type_k, k0 + c * a.k_row_bytes, row, dk);
                else
                    std::fill(row, row + dk, 0.0f);
                for (int d = 0; d < dk; ++d) kt[d * kKeyBlock + c] = row[d];
            }
        });
        turned = buf.data();
    }
    // [n_head_kv][head_dim_v][n_kv]: the seen blocks' values, channel by channel, against f32 probabilities
    // (values by rows are never multiplied by rounded ones): F16 values as they are (half the bytes for
    // every row's product to read; the mixed gemm gives the F32 gemm's values), the others as f32.
    const bool turned_f16 = turn_values && a.type_v == GgmlType::F16;
    const TypeKernels *vk = a.v_trans ? kv : turn_values ? &type_kernels(GgmlType::F32) : nullptr;
    const GemmFn v_gemm = turned_f16 ? gemm_f16_by_f32() : vk ? vk->gemm : nullptr;
    const size_t v_es = turned_f16 ? sizeof(uint16_t) : sizeof(float);
    const uint8_t *v_turned = nullptr;
    if (turn_values) {
        std::vector<uint8_t> &buf = scratch<uint8_t, Scratch::TurnedValues>();
        buf.resize(static_cast<size_t>(a.n_head_kv) * a.head_dim_v * a.n_kv * v_es);
        const int dv = a.head_dim_v, n_kv = a.n_kv;
        // Each block's cells go through a tile [dv][kKeyBlock] first: stored straight into the channel rows
        // (n_kv elements apart, often a multiple of 4 KiB), every cell's dv stores fell into the same few
        // cache sets, and turning took a quarter of a 64-row prompt chunk at depth 4096.
        for_each_seen_block([&](int64_t g, int64_t blk, int64_t) {
            const int j0 = static_cast<int>(blk * kKeyBlock);
            const int nj = static_cast<int>(std::min<int64_t>(kKeyBlock, n_kv - j0));
            const size_t head = static_cast<size_t>(g) * dv * n_kv;
            // the tile [dv][kKeyBlock] (up to 32 KiB) in a per-thread buffer, not on the caller's stack
            std::vector<uint8_t> &tile_buf = scratch<uint8_t, Scratch::TurnTile>();
            tile_buf.resize(static_cast<size_t>(dv) * kKeyBlock * v_es);
            // E: the turned element (F16 bits as they are, or f32); cell(src, vals) reads one cell's dv
            // values
            auto turn_block = [&]<typename E>(E *dst, auto &&cell) {
                E *tile = reinterpret_cast<E *>(tile_buf.data());
                for (int jj = 0; jj < nj; ++jj) {
                    E vals[kMaxTurnedHeadDim];
                    cell(a.v + (j0 + jj) * a.v_row_bytes + g * v_head_bytes, vals);
                    for (int c = 0; c < dv; ++c) tile[c * kKeyBlock + jj] = vals[c];
                }
                for (int c = 0; c < dv; ++c)
                    std::memcpy(dst + static_cast<size_t>(c) * n_kv, tile + c * kKeyBlock, sizeof(E) * nj);
            };
            if (turned_f16)
                turn_block(reinterpret_cast<uint16_t *>(buf.data()) + head + j0,
                           [&](const uint8_t *src, uint16_t *vals) {
                               std::memcpy(vals, src, sizeof(uint16_t) * dv);
                           });
            else
                turn_block(reinterpret_cast<float *>(buf.data()) + head + j0,
                           [&](const uint8_t *src, float *vals) { dequantize_row(a.type_v, src, vals, dv); });
        });
        v_turned = buf.data();
    }
    const size_t p_act_bytes = vk && vk->act_type != GgmlType::F32 ? row_size(vk->act_type, a.n_kv) : 0;

    // With key blocks an item takes up to kRowsPerItem query rows (all their heads' scores against each run
    // of blocks while it is in L1); the dot products take one.
    const int rpi = key_blocks ? rows_per_item(a, sum_spans / a.n_rows) : 1;
    const int64_t n_row_items = (a.n_rows + rpi - 1) / rpi;
    const int64_t n_items = n_row_items * items_per_row;
    const int nq = rpi * hpi;  // query vectors per item

    // per-thread scratch: scores [nq][lds] f32, q [nq][q_act_bytes], p [hpi][p_act_bytes], V row
    // [head_dim_v], and with key blocks the queries as f32 [nq][dk]
    const size_t scores_bytes = sizeof(float) * nq * static_cast<size_t>(lds);
    const size_t q_bytes = (q_act_bytes * nq + 63) / 64 * 64;
    const size_t p_bytes = (p_act_bytes * hpi + 63) / 64 * 64;
    const size_t vrow_bytes = a.v_trans ? 0 : sizeof(float) * a.head_dim_v;
    const size_t qf_bytes = key_blocks ? (sizeof(float) * nq * dk + 63) / 64 * 64 : 0;
    // An item's rows that start at the same cell weigh V in one product (below), into og [nq][head_dim_v]:
    // the channel rows' gemm, or an encoder's own values by rows
    const bool group_values = ((vk && vk->act_type == GgmlType::F32) || own_by_rows) && rpi > 1;
    const size_t og_bytes = group_values ? (sizeof(float) * nq * a.head_dim_v + 63) / 64 * 64 : 0;
    const size_t scratch_bytes = (scores_bytes + 63) / 64 * 64 + q_bytes + p_bytes +
                                 (vrow_bytes + 63) / 64 * 64 + qf_bytes + og_bytes + 64;

    // Softmax of one row's scores [hpi][lds] over its span [j0, j1).
    auto softmax_row = [&](float *scores, const float *mask, int j0, int j1, int h0) {
        const int span = j1 - j0;
        for (int hh = 0; hh < hpi; ++hh) {
            float *s = scores + static_cast<int64_t>(hh) * lds;
            const float slope = a.alibi ? a.alibi[h0 + hh] : 1.0f;
            const float *m = mask + (h0 + hh) * a.mask_head_stride + j0;
            if (a.softcap > 0.0f) {  // the scale goes inside the cap
                softcap(s + j0, span, a.softcap, a.scale);
                softmax(s + j0, m, span, 1.0f, slope);
            } else {
                softmax(s + j0, m, span, a.scale, slope);
            }
        }
    };
    // The weighted sum of V over [j0, j1) into o [n_p][head_dim_v], the probabilities in scores' rows (a
    // row's hpi heads; with V's channel rows, n_p may be the heads of several rows, lds apart).
    auto weigh_values = [&](float *scores, int n_p, int j0, int j1, int h0, float *o, uint8_t *pbuf,
                            float *vrow) {
        const int g = h0 / gqa;  // the KV head
        const int span = j1 - j0;
        if (vk) {
            // out[hh][c] = v_c . p_hh over the span (V channel rows as the gemm's weight rows): the cache's
            // own, or the turned copy of values stored by rows
            const size_t es = a.v_trans ? v_elem_bytes : v_es;
            const size_t ch_bytes = static_cast<size_t>(a.v_trans ? a.v_cells : a.n_kv) * es;
            // f32 probabilities are read where they are, not copied
            const uint8_t *p_act = reinterpret_cast<const uint8_t *>(scores + j0);
            size_t p_stride = sizeof(float) * lds;
            if (vk->act_type != GgmlType::F32) {
                for (int hh = 0; hh < n_p; ++hh)
                    vk->quantize_act(scores + static_cast<int64_t>(hh) * lds + j0, pbuf + hh * p_act_bytes,
                                     span);
                p_act = pbuf;
                p_stride = p_act_bytes;
            }
            const uint8_t *vbase =
                (a.v_trans ? a.v : v_turned) + static_cast<size_t>(g) * a.head_dim_v * ch_bytes + j0 * es;
            v_gemm(span, vbase, ch_bytes, a.head_dim_v, p_act, p_stride, n_p, o, a.head_dim_v);
        } else {
            std::memset(o, 0, sizeof(float) * n_p * a.head_dim_v);
            const uint8_t *vg = a.v + g * v_head_bytes;  // this KV head's values in each cell's row
#if defined(__x86_64__)
            // Rows of every cache type: the item's heads in register groups over chunks of cells (ops_x86.h).
            detail::RowType type;
            if (use_avx2_row_ops() && row_type_of(a.type_v, &type)) {
                if (detail::use_avx512_row_ops())
                    detail::weighted_rows_avx512(scores, lds, n_p, vg, a.v_row_bytes, type, j0, j1, o,
                                                 a.head_dim_v, a.head_dim_v);
                else
                    detail::weighted_rows_avx2(scores, lds, n_p, vg, a.v_row_bytes, type, j0, j1, o,
                                               a.head_dim_v, a.head_dim_v);
                return;
            }
#endif
            for (int j = j0; j < j1; ++j) {
                const uint8_t *vj = vg + j * a.v_row_bytes;
                bool any = false;
                for (int hh = 0; hh < n_p && !any; ++hh)
                    any = scores[static_cast<int64_t>(hh) * lds + j] != 0.0f;
                if (!any) continue;
                const float *vf;
                if (a.type_v == GgmlType::F32) {
                    vf = reinterpret_cast<const float *>(vj);
                } else {
                    dequantize_row(a.type_v, vj, vrow, a.head_dim_v);
                    vf = vrow;
                }
                for (int hh = 0; hh < n_p; ++hh) {
                    const float p = scores[static_cast<int64_t>(hh) * lds + j];
                    if (p != 0.0f) axpy(p, vf, o + static_cast<int64_t>(hh) * a.head_dim_v, a.head_dim_v);
                }
            }
        }
    };

    // A row over its visible cells cells[0, n) (sparse rows above), query heads h0.. h0 + hpi - 1 (q at qa,
    // in K's dot type): the keys of those cells gathered into rows side by side take the same dot products as
    // the span's (a gemm output depends only on its two rows), the softmax runs over their scores and mask
    // values, and V's rows gathered (or its channel rows over the span, the probabilities back in their cells
    // with zeros between) weigh them; only the order of the softmax's and V's sums differs from the span's.
    auto sparse_row = [&](const int32_t *cells, int n, const float *mask, int h0, const uint8_t *qa, float *o,
                          uint8_t *pbuf, float *vrow) {
        const int g = h0 / gqa;
        std::vector<uint8_t> &buf = scratch<uint8_t, Scratch::Gathered>();
        // channel rows: the cache's, or an encoder's turned values
        const bool channel_rows = a.v_trans || (own_turned && v_turned);
        const size_t es = a.v_trans ? v_elem_bytes : v_es;
        const size_t k_bytes = (k_head_bytes * n + 63) / 64 * 64, s_bytes = sizeof(float) * n * hpi;
        const size_t m_bytes = sizeof(float) * n,
                     v_bytes = channel_rows ? sizeof(float) * hpi * (cells[n - 1] + 1 - cells[0])
                                            : v_head_bytes * n;
        const size_t need = k_bytes + (s_bytes + 63) / 64 * 64 + (m_bytes + 63) / 64 * 64 + v_bytes;
        if (buf.size() < need) buf.resize(need);
        uint8_t *kc = buf.data();
        float *sc = reinterpret_cast<float *>(kc + k_bytes);  // [hpi][n]
        float *mc = reinterpret_cast<float *>(reinterpret_cast<uint8_t *>(sc) + (s_bytes + 63) / 64 * 64);
        uint8_t *vc = reinterpret_cast<uint8_t *>(mc) + (m_bytes + 63) / 64 * 64;

        const uint8_t *kg = a.k + g * k_head_bytes;
        for (int i = 0; i < n; ++i)
            std::memcpy(kc + i * k_head_bytes, kg + static_cast<size_t>(cells[i]) * a.k_row_bytes,
                        k_head_bytes);
        kk.gemm(dk, kc, k_head_bytes, n, qa, q_act_bytes, hpi, sc, n);
        for (int hh = 0; hh < hpi; ++hh) {
            float *s = sc + static_cast<int64_t>(hh) * n;
            const float *m = mask + (h0 + hh) * a.mask_head_stride;
            for (int i = 0; i < n; ++i) mc[i] = m[cells[i]];
            const float slope = a.alibi ? a.alibi[h0 + hh] : 1.0f;
            if (a.softcap > 0.0f) {  // the scale goes inside the cap
                softcap(s, n, a.softcap, a.scale);
                softmax(s, mc, n, 1.0f, slope);
            } else {
                softmax(s, mc, n, a.scale, slope);
            }
        }

        if (channel_rows) {
            // Channel rows are not gathered (one element of a row per cell, a scalar load each, cost more
            // than the product over the whole span): the probabilities go back to their cells, zero between
            // them, and the span's product runs as the span path's does.
            const int j0 = cells[0], span = cells[n - 1] + 1 - j0;
            float *ps = reinterpret_cast<float *>(vc);  // [hpi][span]
            std::fill(ps, ps + static_cast<size_t>(hpi) * span, 0.0f);
            for (int hh = 0; hh < hpi; ++hh)
                for (int i = 0; i < n; ++i)
                    ps[static_cast<int64_t>(hh) * span + cells[i] - j0] =
                        sc[static_cast<int64_t>(hh) * n + i];
            const uint8_t *p_act = reinterpret_cast<const uint8_t *>(ps);
            size_t p_stride = sizeof(float) * span;
            if (vk->act_type != GgmlType::F32) {
                for (int hh = 0; hh < hpi; ++hh)
                    vk->quantize_act(ps + static_cast<int64_t>(hh) * span, pbuf + hh * p_act_bytes, span);
                p_act = pbuf;
                p_stride = p_act_bytes;
            }
            const size_t ch_bytes = static_cast<size_t>(a.v_trans ? a.v_cells : a.n_kv) * es;
            const uint8_t *v0 = a.v_trans ? a.v : v_turned;
            v_gemm(span, v0 + static_cast<size_t>(g) * a.head_dim_v * ch_bytes + j0 * es, ch_bytes,
                   a.head_dim_v, p_act, p_stride, hpi, o, a.head_dim_v);
            return;
        }
        // values by rows: this KV head's part of each visible cell's row, side by side
        for (int i = 0; i < n; ++i)
            std::memcpy(vc + i * v_head_bytes,
                        a.v + static_cast<size_t>(cells[i]) * a.v_row_bytes + g * v_head_bytes, v_head_bytes);
        std::memset(o, 0, sizeof(float) * hpi * a.head_dim_v);  // (the weighted sums add to o)
#if defined(__x86_64__)
        detail::RowType type;
        if (use_avx2_row_ops() && row_type_of(a.type_v, &type)) {
            if (detail::use_avx512_row_ops())
                detail::weighted_rows_avx512(sc, n, hpi, vc, v_head_bytes, type, 0, n, o, a.head_dim_v,
                                             a.head_dim_v);
            else
                detail::weighted_rows_avx2(sc, n, hpi, vc, v_head_bytes, type, 0, n, o, a.head_dim_v,
                                           a.head_dim_v);
            return;
        }
#endif
        for (int i = 0; i < n; ++i) {
            const float *vf = vrow;
            dequantize_row(a.type_v, vc + i * v_head_bytes, vrow, a.head_dim_v);
            for (int hh = 0; hh < hpi; ++hh) {
                const float p = sc[static_cast<int64_t>(hh) * n + i];
                if (p != 0.0f) axpy(p, vf, o + static_cast<int64_t>(hh) * a.head_dim_v, a.head_dim_v);
            }
        }
    };

    // Items are handed out by for_each_item: under a causal mask a prompt's later rows see more cells, so
    // equal contiguous shares would leave the first thread idle for most of the section.
    pool.for_each_item(
        n_items,
        [&](int64_t it) {
            std::vector<uint8_t> &buf = scratch<uint8_t, Scratch::Item>();
            if (buf.size() < scratch_bytes) buf.resize(scratch_bytes);
            float *scores = reinterpret_cast<float *>(buf.data());  // [nq][lds]
            uint8_t *qbuf = buf.data() + (scores_bytes + 63) / 64 * 64;
            uint8_t *pbuf = qbuf + q_bytes;
            float *vrow = reinterpret_cast<float *>(pbuf + p_bytes);
            float *qf = reinterpret_cast<float *>(pbuf + p_bytes + (vrow_bytes + 63) / 64 * 64);  // [nq][dk]
            float *og = reinterpret_cast<float *>(reinterpret_cast<uint8_t *>(qf) + qf_bytes);    // [nq][dv]

            const int64_t ri0 = it / items_per_row * rpi;
            const int nr =
                static_cast<int>(std::min<int64_t>(rpi, a.n_rows - ri0));  // query rows of the item
            const int h0 = static_cast<int>(it % items_per_row) * hpi;     // first query head
            const int g = h0 / gqa;                                        // its KV head

            // Visible span [j0, j1) of each row; the scores cover the union [u0, u1).
            int j0s[kRowsPerItem], j1s[kRowsPerItem];
            int u0 = a.n_kv, u1 = 0;
            int64_t item_spans = 0;
            int n_seeing = 0;  // rows with a span (not those over their visible cells, nor those seeing none)
            for (int i = 0; i < nr; ++i) {
                j0s[i] = spans[2 * (ri0 + i)];
                j1s[i] = spans[2 * (ri0 + i) + 1];
                if (j0s[i] < j1s[i]) {
                    u0 = std::min(u0, j0s[i]);
                    u1 = std::max(u1, j1s[i]);
                    item_spans += j1s[i] - j0s[i];
                    ++n_seeing;
                }
            }

            // scores[i * hpi + hh][j] = k_j . q_(row i, head hh) for j in the span
            if (u0 < u1) {
                auto query = [&](int v) {  // query vector v = i * hpi + hh of the item
                    return a.q + a.rows[ri0 + v / hpi] * a.ldq + static_cast<int64_t>(h0 + v % hpi) * dk;
                };
                const int64_t b0 = u0 / kKeyBlock, b1 = (u1 + kKeyBlock - 1) / kKeyBlock;
                // Rows that mostly see the same cells share the turned blocks; rows far apart (tokens of
                // different sequences in one item) each take the dot products over their own span. An
                // encoder's rows always take the blocks (its items are short when its sequences are): so a
                // text's embedding does not depend on which texts share its items, that is, on where it
                // starts in a pass (the dot products' sums differ from one chain in the last bits).
                const bool shared =
                    key_blocks &&
                    (a.encoder_pass || static_cast<int64_t>(n_seeing) * (u1 - u0) <= 2 * item_spans) &&
                    unturned[b1] == unturned[b0];
                if (shared) {
                    // the queries' values in the keys' dot type as f32, against the blocks covering the span
                    // (an encoder's F32 keys: the queries themselves, copied once)
                    for (int v = 0; v < nr * hpi; ++v) {
                        if (kk.act_type == GgmlType::F32) {
                            std::memcpy(qf + v * dk, query(v), sizeof(float) * dk);
                        } else {
                            kk.quantize_act(query(v), qbuf + v * q_act_bytes, dk);
                            dequantize_row(kk.act_type, qbuf + v * q_act_bytes, qf + v * dk, dk);
                        }
                    }
#if defined(__x86_64__)
                    key_scores(qf, nr * hpi, dk, turned + (g * n_blocks + b0) * per_block, per_block, b1 - b0,
                               scores + b0 * kKeyBlock, lds);
#endif
                } else {
                    for (int v = 0; v < nr * hpi; ++v) kk.quantize_act(query(v), qbuf + v * q_act_bytes, dk);
                    for (int i = 0; i < nr; ++i)
                        if (j0s[i] < j1s[i])
                            kk.gemm(dk, a.k + g * k_head_bytes + static_cast<size_t>(j0s[i]) * a.k_row_bytes,
                                    a.k_row_bytes, j1s[i] - j0s[i], qbuf + i * hpi * q_act_bytes, q_act_bytes,
                                    hpi, scores + static_cast<int64_t>(i) * hpi * lds + j0s[i], lds);
                }
            }

            // Rows that see spans from the same first cell (an encoder's rows, a prompt's neighbours) weigh V
            // in one product over the longest span, each row's probabilities zero past its own: the channel
            // rows (or an encoder's value rows) are read once for all of them, and each output keeps its bits
            // (a product's value does not depend on its tile, and the zeros add nothing: the gemm adds their
            // products of 0, weighted_rows passes over them).
            bool grouped = group_values && nr > 1;
            int g1 = 0;  // the longest span's end
            for (int i = 0; i < nr && grouped; ++i) {
                grouped = vis[2 * (ri0 + i) + 1] == 0 && j0s[i] < j1s[i] && j0s[i] == j0s[0];
                g1 = std::max(g1, j1s[i]);
            }
            if (grouped) {
                const int gj0 = j0s[0];
                for (int i = 0; i < nr; ++i) {
                    float *si = scores + static_cast<int64_t>(i) * hpi * lds;
                    softmax_row(si, a.mask + static_cast<int64_t>(a.rows[ri0 + i]) * a.ldmask, gj0, j1s[i],
                                h0);
                    for (int hh = 0; hh < hpi; ++hh)
                        std::fill(si + hh * lds + j1s[i], si + hh * lds + g1, 0.0f);
                }
                weigh_values(scores, nr * hpi, gj0, g1, h0, og, pbuf, vrow);  // og [nr * hpi][head_dim_v]
                for (int i = 0; i < nr; ++i)
                    std::memcpy(a.out + (ri0 + i) * a.ldo + static_cast<int64_t>(h0) * a.head_dim_v,
                                og + static_cast<int64_t>(i) * hpi * a.head_dim_v,
                                sizeof(float) * hpi * a.head_dim_v);
                return;
            }
            for (int i = 0; i < nr; ++i) {
                const int64_t ri = ri0 + i;
                const float *mask = a.mask + static_cast<int64_t>(a.rows[ri]) * a.ldmask;
                float *o = a.out + ri * a.ldo + static_cast<int64_t>(h0) * a.head_dim_v;  // [hpi][head_dim_v]
                const int j0 = j0s[i], j1 = j1s[i], span = j1 - j0;
                if (const int nv = vis[2 * ri + 1]; nv > 0) {
                    uint8_t *qa = qbuf + static_cast<size_t>(i) * hpi * q_act_bytes;
                    for (int hh = 0; hh < hpi; ++hh)
                        kk.quantize_act(a.q + a.rows[ri] * a.ldq + static_cast<int64_t>(h0 + hh) * dk,
                                        qa + hh * q_act_bytes, dk);
                    sparse_row(visible.data() + vis[2 * ri], nv, mask, h0, qa, o, pbuf, vrow);
                    continue;
                }
                if (span == 0) {  // nothing visible: the softmax of nothing is all zeros
                    std::memset(o, 0, sizeof(float) * hpi * a.head_dim_v);
                    continue;
                }
                float *si = scores + static_cast<int64_t>(i) * hpi * lds;
                softmax_row(si, mask, j0, j1, h0);
                weigh_values(si, hpi, j0, j1, h0, o, pbuf, vrow);
            }
        },
        max_threads);
}

void attention_mask_spans(const float *mask, int64_t ldmask, int n_rows, int n_kv, int32_t *spans) {
    for (int r = 0; r < n_rows; ++r) {
        const float *m = mask + r * ldmask;
        int j0 = 0, j1 = n_kv;
        while (j0 < j1 && m[j0] == kNegInf) ++j0;
        while (j1 > j0 && m[j1 - 1] == kNegInf) --j1;
        spans[2 * r] = j0;
        spans[2 * r + 1] = j1;
    }
}

void alibi_slopes(int n_head, float max_bias, float *slopes) {
    if (n_head <= 0) return;
    const int n2 = 1 << static_cast<int>(std::floor(std::log2(static_cast<double>(n_head))));
    const float m0 = std::pow(2.0f, -max_bias / static_cast<float>(n2));
    const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / static_cast<float>(n2));
    for (int h = 0; h < n_head; ++h)
        slopes[h] = max_bias <= 0.0f ? 1.0f
                    : h < n2         ? std::pow(m0, static_cast<float>(h + 1))
                                     : std::pow(m1, static_cast<float>(2 * (h - n2) + 1));
}

}  // namespace lctx::kernels
