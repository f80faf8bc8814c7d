#include "context/recurrent_placement.h"

#include <algorithm>
#include <numeric>

namespace lctx {

namespace {

// A run of the sorted tokens with the same sequence ids (b4748's llama_sbatch_seq).
struct TokenRun {
    int32_t n_seq_id;
    const int32_t *ids;  // the run's sequence ids, in the batch's order
    size_t offset, length;
};

// One sequence set of a micro-batch: its ids and the position of its last token there.
struct UbatchSeq {
    int32_t n_seq_id;
    const int32_t *ids;
    int32_t last_pos;
};

class Placer {
  public:
    Placer(std::vector<KvCell> &cells, uint32_t &head) : cells_(cells), head_(head), tail_(cells.size(), -1) {
        for (size_t i = 0; i < cells.size(); ++i)
            for (size_t s = 0; s < cells.size(); ++s)
                if (cells[i].seq.test(s)) tail_[s] = static_cast<int32_t>(i);
    }

    // b4748's find_slot for a recurrent cache over one micro-batch's sequences.
    bool place(const std::vector<UbatchSeq> &ub) {
        const auto size = static_cast<int32_t>(cells_.size());
        // The other ids of a shared set leave the cells they had.
        for (const UbatchSeq &s : ub)
            for (int32_t j = 1; j < s.n_seq_id; ++j) {
                int32_t &t = tail_[s.ids[j]];
                if (t < 0) continue;
                cells_[t].seq.reset(s.ids[j]);
                if (cells_[t].seq.none()) cells_[t].pos = -1;
                t = -1;
            }
        int32_t next_empty = next_empty_from(static_cast<int32_t>(head_));
        int32_t lo = size - 1, hi = 0;
        for (size_t s = 0; s < ub.size(); ++s) {
            const int32_t id = ub[s].ids[0];
            const bool owns = tail_[id] >= 0 && cells_[tail_[id]].seq.count() == 1;
            if (!owns) {
                if (next_empty < 0 || next_empty >= size || !cells_[next_empty].seq.none()) return false;
                if (tail_[id] >= 0) {  // the shared state moves to the empty cell
                    KvCell &orig = cells_[tail_[id]];
                    cells_[next_empty].pos = orig.pos;
                    orig.seq.reset(id);
                    cells_[next_empty].seq.set(id);
                }
                tail_[id] = next_empty;
                if (s + 1 < ub.size()) next_empty = next_empty_from(next_empty + 1);
            }
            lo = std::min(lo, tail_[id]);
            hi = std::max(hi, tail_[id]);
        }
        // Swap the micro-batch's cells into lo, lo + 1, ... in its order.
        for (size_t s = 0; s < ub.size(); ++s) {
            const int32_t dst = lo + static_cast<int32_t>(s), src = tail_[ub[s].ids[0]];
            if (dst >= size) return false;
            if (dst == src) continue;
            std::swap(cells_[dst].pos, cells_[src].pos);
            std::swap(cells_[dst].seq, cells_[src].seq);
            for (int32_t id = 0; id < size; ++id) {
                if (cells_[src].seq.test(id)) tail_[id] = src;
                if (cells_[dst].seq.test(id)) tail_[id] = dst;
            }
        }
        for (size_t s = 0; s < ub.size(); ++s) {
            KvCell &c = cells_[lo + static_cast<int32_t>(s)];
            c.pos = ub[s].last_pos;
            c.seq.reset();
            for (int32_t j = 0; j < ub[s].n_seq_id; ++j) {
                c.seq.set(ub[s].ids[j]);
                tail_[ub[s].ids[j]] = lo + static_cast<int32_t>(s);
            }
        }
        head_ = static_cast<uint32_t>(lo);
        return hi - lo + 1 >= static_cast<int32_t>(ub.size());
    }

  private:
    // The first empty cell from i on, wrapping round; where the search ends when none is (as b4748).
    int32_t next_empty_from(int32_t i) const {
        const auto size = static_cast<int32_t>(cells_.size());
        for (int32_t k = 0; k < size; ++k, ++i) {
            if (i >= size) i -= size;
            if (cells_[i].seq.none()) break;
        }
        return i;
    }

    std::vector<KvCell> &cells_;
    uint32_t &head_;
    std::vector<int32_t> tail_;  // [size] the cell of each sequence id, -1: none
};

}  // namespace

bool place_recurrent_like_b4748(std::vector<KvCell> &cells, uint32_t &head, int32_t n, const int32_t *pos,
                                const int32_t *n_seq_id, int32_t *const *seq_id, uint32_t n_ubatch) {
    // The tokens sorted as llama_sbatch sorts them: shared sets (more ids) first, then by ids, then position.
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        if (n_seq_id[a] != n_seq_id[b]) return n_seq_id[a] > n_seq_id[b];
        for (int32_t i = 0; i < n_seq_id[a]; ++i)
            if (seq_id[a][i] != seq_id[b][i]) return seq_id[a][i] < seq_id[b][i];
        return pos[a] != pos[b] ? pos[a] < pos[b] : a < b;
    });
    std::vector<TokenRun> runs;
    for (int32_t i = 0; i < n; ++i) {
        const int32_t t = order[i];
        if (!runs.empty()) {
            const TokenRun &r = runs.back();
            if (r.n_seq_id == n_seq_id[t] && std::equal(r.ids, r.ids + r.n_seq_id, seq_id[t])) {
                runs.back().length++;
                continue;
            }
        }
        runs.push_back({n_seq_id[t], seq_id[t], static_cast<size_t>(i), 1});
    }
    // Fewer ids first, then longer first (b4748's std::sort, stable on its small inputs: insertion sort).
    std::stable_sort(runs.begin(), runs.end(), [](const TokenRun &a, const TokenRun &b) {
        return a.n_seq_id == b.n_seq_id ? a.length > b.length : a.n_seq_id < b.n_seq_id;
    });

    // split_equal: from the end of the runs (shortest first), equal lengths, a shared set alone.
    Placer placer(cells, head);
    for (size_t left = static_cast<size_t>(n); left > 0;) {
        while (!runs.empty() && runs.back().length == 0) runs.pop_back();
        const size_t nu = std::min<size_t>(left, n_ubatch);
        std::vector<UbatchSeq> ub;
        size_t length = 0, taken = 0;
        for (size_t i = runs.size(); i-- > 0;) {
            TokenRun &r = runs[i];
            if (length == 0) length = std::min(r.length, nu);
            if (r.length < length) return false;  // b4748 asserts
            r.offset += length;
            r.length -= length;
            taken += length;
            ub.push_back({r.n_seq_id, r.ids, pos[order[r.offset - 1]]});
            if (r.n_seq_id > 1 || length + taken > nu) break;
        }
        if (taken == 0 || !placer.place(ub)) return false;
        left -= taken;
    }
    return true;
}

}  // namespace lctx
