// The masks of a micro-batch (context/mask.h) from hand-made cells: causal and non-causal rules, other
// sequences' cells, empty cells, the sliding window's edge (b4748: hidden when pos_q - pos_k >= n_swa) and
// the ALiBi distances.
#include "context/mask.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace lctx::mask_test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// cells[j] = (pos, seqs); pos -1 is an empty cell
std::vector<KvCell> make_cells(const std::vector<std::pair<int32_t, std::vector<int>>> &spec) {
    std::vector<KvCell> cells(spec.size());
    for (size_t j = 0; j < spec.size(); ++j) {
        cells[j].pos = spec[j].first;
        for (int s : spec[j].second) cells[j].seq.set(s);
    }
    return cells;
}

struct Masks {
    std::vector<float> full, swa;
};

Masks build(const std::vector<KvCell> &cells, const std::vector<int32_t> &pos, std::vector<int32_t> seq,
            const MaskRules &rules) {
    const int32_t n = static_cast<int32_t>(pos.size());
    const uint32_t n_kv = static_cast<uint32_t>(cells.size());
    std::vector<int32_t *> seq_ptr;
    for (int32_t &s : seq) seq_ptr.push_back(&s);
    Masks m;
    m.full.assign(static_cast<size_t>(n) * n_kv, 123.0f);
    m.swa.assign(static_cast<size_t>(n) * n_kv, 123.0f);
    build_masks(cells, n_kv, n, pos.data(), seq_ptr.data(), rules, m.full.data(), m.swa.data());
    return m;
}

TEST(Mask, CausalWithinTheSequence) {
    // seq 0 at positions 0..5 in cells 0..5, seq 1 at 0..2 in cells 6..8, an empty cell 9, cell 10 in both
    auto cells = make_cells({{0, {0}},
                             {1, {0}},
                             {2, {0}},
                             {3, {0}},
                             {4, {0}},
                             {5, {0}},
                             {0, {1}},
                             {1, {1}},
                             {2, {1}},
                             {-1, {}},
                             {6, {0, 1}}});
    const Masks m = build(cells, {3, 2, 6}, {0, 1, 1}, MaskRules{});
    const std::vector<float> want = {
        0,     0,     0,     0,     -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf,  // seq 0 at 3
        -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, 0,     0,     0,     -kInf, -kInf,  // seq 1 at 2
        -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, 0,     0,     0,     -kInf, 0,      // seq 1 at 6
    };
    EXPECT_EQ(m.full, want);
    EXPECT_EQ(m.swa, std::vector<float>(m.swa.size(), 123.0f)) << "no window: the second mask is not written";
}

TEST(Mask, NonCausalSeesTheWholeSequence) {
    auto cells = make_cells({{0, {0}}, {1, {0}}, {2, {0}}, {0, {1}}});
    MaskRules r;
    r.causal = false;
    const Masks m = build(cells, {0}, {0}, r);
    EXPECT_EQ(m.full, (std::vector<float>{0, 0, 0, -kInf}));
}

// A token at position p sees positions p - n_swa + 1 .. p in the window's mask, and everything up to p in the
// full one; positions are the cells' own, wherever the cells sit.
TEST(Mask, SlidingWindowEdge) {
    std::vector<std::pair<int32_t, std::vector<int>>> spec;
    for (int32_t p = 19; p >= 0; --p) spec.push_back({p, {0}});  // cells in reverse position order
    spec.push_back({5, {1}});
    auto cells = make_cells(spec);
    MaskRules r;
    r.n_swa = 8;
    for (int32_t q : {0, 7, 8, 12, 19}) {
        SCOPED_TRACE(q);
        const Masks m = build(cells, {q}, {0}, r);
        for (size_t j = 0; j < cells.size(); ++j) {
            const int32_t k = cells[j].pos;
            const bool own = cells[j].seq.test(0);
            const bool visible = own && k <= q;
            EXPECT_EQ(m.full[j], visible ? 0.0f : -kInf) << "cell pos " << k;
            EXPECT_EQ(m.swa[j], visible && q - k < 8 ? 0.0f : -kInf) << "cell pos " << k;
        }
    }
}

// ALiBi: a visible cell holds minus its distance to the token, in both masks; hidden cells stay -inf.
TEST(Mask, AlibiDistances) {
    auto cells = make_cells({{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}, {9, {1}}, {40, {0}}});
    MaskRules r;
    r.alibi = true;
    r.n_swa = 3;
    const Masks m = build(cells, {3, 41}, {0, 0}, r);
    EXPECT_EQ(m.full, (std::vector<float>{-3, -2, -1, -0.0f, -kInf, -kInf, -41, -40, -39, -38, -kInf, -1}));
    EXPECT_EQ(m.swa,
              (std::vector<float>{-kInf, -2, -1, 0, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -1}));
    r.causal = false;  // non-causal: later cells too, at their distance
    const Masks n = build(cells, {1}, {0}, r);
    EXPECT_EQ(n.full, (std::vector<float>{-1, 0, -1, -2, -kInf, -39}));
}

// Positions far apart (a shifted sequence, the largest positions) do not overflow the distance.
TEST(Mask, LargePositions) {
    auto cells = make_cells({{0, {0}}, {INT32_MAX - 1, {0}}});
    MaskRules r;
    r.n_swa = 4096;
    const Masks m = build(cells, {INT32_MAX}, {0}, r);
    EXPECT_EQ(m.full, (std::vector<float>{0, 0}));
    EXPECT_EQ(m.swa, (std::vector<float>{-kInf, 0}));
}

}  // namespace
}  // namespace lctx::mask_test
