// KvCache in recurrent mode (mamba): one cell per sequence holding its state (K row: the convolution's last
// inputs, V row: the SSM state, per layer), the cell's position the sequence's last one. The rules follow
// b4748's recurrent cache: seq_cp shares the source's cell (b4748's tail), the state is copied only when one
// of the sharing sequences goes on (s_copy), a sequence without a state starts from zeros (s_mask), and a
// sequence loses its state only whole (seq_rm refuses to cut it).
#include <algorithm>
#include <cstring>
#include <limits>

#include "context/kv_cache.h"
#include "util/log.h"

namespace lctx {

int32_t KvCache::seq_cell(int32_t seq) const {
    if (seq < 0 || seq >= kMaxSeqs) return -1;
    for (uint32_t i = 0; i < size_; ++i)
        if (cells_[i].seq.test(seq)) return static_cast<int32_t>(i);
    return -1;
}

void KvCache::drop_seq(int32_t seq) {
    const int32_t i = seq_cell(seq);
    if (i < 0) return;
    KvCell &c = cells_[i];
    c.seq.reset(seq);
    if (c.empty()) {
        used_--;
        clear_cell(c);
    }
}

// b4748: a range that cuts into the state (0 < p0 <= last or 0 < p1 <= last) is refused; one that covers
// the last position drops the sequence (the caller's loop does it); one after it changes nothing.
bool KvCache::rs_seq_rm(int32_t seq, int32_t p0, int32_t p1) {
    if (seq >= static_cast<int32_t>(size_)) return false;
    if (seq < 0) return p0 == p1 || (p0 == 0 && p1 == std::numeric_limits<int32_t>::max());
    const int32_t i = seq_cell(seq);
    if (i < 0) return true;
    const int32_t last = cells_[i].pos;
    return !((0 < p0 && p0 <= last) || (0 < p1 && p1 <= last));
}

void KvCache::rs_seq_cp(int32_t src, int32_t dst) {
    if (src >= static_cast<int32_t>(size_) || dst >= static_cast<int32_t>(size_)) return;
    drop_seq(dst);
    const int32_t i = seq_cell(src);
    if (i >= 0) cells_[i].seq.set(dst);
}

// seq_add (d == 1) or seq_div (delta == 0): only the cell's position moves, when the last position lies in
// [p0, p1); one moved below 0 drops the state, as a shifted attention cell is dropped.
void KvCache::rs_seq_move(int32_t seq, int32_t p0, int32_t p1, int32_t delta, int32_t d) {
    if (seq >= static_cast<int32_t>(size_)) return;
    const int32_t i = seq_cell(seq);
    if (i < 0) return;
    KvCell &c = cells_[i];
    if (c.pos < p0 || c.pos >= p1) return;
    const int64_t pos = static_cast<int64_t>(c.pos) / d + delta;
    if (pos < 0 || pos > std::numeric_limits<int32_t>::max()) {
        used_--;
        clear_cell(c);
        return;
    }
    c.pos = static_cast<int32_t>(pos);
}

void KvCache::begin_decode(bool record_states) {
    if (!recurrent_) return;
    record_states_ = record_states;
    undo_cells_ = cells_;
    undo_head_ = head_;
    undo_used_ = used_;
    undo_ids_.clear();
    undo_bytes_.clear();
}

void KvCache::save_state(uint32_t cell) {
    if (!record_states_) return;
    if (std::find(undo_ids_.begin(), undo_ids_.end(), cell) != undo_ids_.end()) return;
    undo_ids_.push_back(cell);
    for (uint32_t il = 0; il < n_layer_; ++il) {
        const uint8_t *k = view_.k[il] + cell * view_.k_row_bytes;
        const uint8_t *v = view_.v[il] + cell * view_.v_row_bytes;
        undo_bytes_.insert(undo_bytes_.end(), k, k + view_.k_row_bytes);
        undo_bytes_.insert(undo_bytes_.end(), v, v + view_.v_row_bytes);
    }
}

void KvCache::copy_state(uint32_t dst, uint32_t src) {
    for (uint32_t il = 0; il < n_layer_; ++il) {
        std::memcpy(view_.k[il] + dst * view_.k_row_bytes, view_.k[il] + src * view_.k_row_bytes,
                    view_.k_row_bytes);
        std::memcpy(view_.v[il] + dst * view_.v_row_bytes, view_.v[il] + src * view_.v_row_bytes,
                    view_.v_row_bytes);
    }
}

void KvCache::zero_state(uint32_t cell) {
    for (uint32_t il = 0; il < n_layer_; ++il) {
        std::memset(view_.k[il] + cell * view_.k_row_bytes, 0, view_.k_row_bytes);
        std::memset(view_.v[il] + cell * view_.v_row_bytes, 0, view_.v_row_bytes);
    }
}

bool KvCache::find_state_cells(int32_t n, const int32_t *pos, const int32_t *n_seq_id, int32_t *const *seq_id,
                               std::vector<uint32_t> &out) {
    // The micro-batch's sequence sets, in order of first appearance, with each one's last token.
    struct Group {
        SeqSet set;
        int32_t first_seq;  // the state a new set continues from (b4748: its first token's first id)
        int32_t first_token, last_token;
    };
    std::vector<Group> groups;
    std::vector<int32_t> group_of(n);
    for (int32_t t = 0; t < n; ++t) {
        SeqSet set;
        for (int32_t s = 0; s < n_seq_id[t]; ++s) set.set(seq_id[t][s]);
        size_t g = 0;
        while (g < groups.size() && groups[g].set != set) ++g;
        if (g == groups.size()) groups.push_back({set, seq_id[t][0], t, t});
        groups[g].last_token = t;
        group_of[t] = static_cast<int32_t>(g);
    }

    // Plan on a copy of the cells: which cell each set gets and where its state comes from.
    struct Plan {
        uint32_t cell;
        int32_t src;  // copy from this cell; -1: zero the state; == cell: continue in place
    };
    std::vector<KvCell> cells = cells_;
    std::vector<Plan> plan(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
        const SeqSet &set = groups[g].set;
        auto exact = std::find_if(cells.begin(), cells.end(), [&](const KvCell &c) { return c.seq == set; });
        if (exact != cells.end()) {
            const auto i = static_cast<uint32_t>(exact - cells.begin());
            plan[g] = {i, static_cast<int32_t>(i)};
            continue;
        }
        int32_t src = -1;
        for (uint32_t i = 0; i < size_; ++i)
            if (cells[i].seq.test(groups[g].first_seq)) src = static_cast<int32_t>(i);
        for (KvCell &c : cells) {  // the set's sequences leave the cells they are in
            c.seq &= ~set;
            if (c.seq.none()) c.pos = -1;
        }
        int32_t cell = src >= 0 && cells[src].seq.none() ? src : -1;  // the source left alone: keep it there
        for (uint32_t i = 0; i < size_ && cell < 0; ++i)
            if (cells[i].pos < 0 && cells[i].seq.none()) cell = static_cast<int32_t>(i);
        // A free cell always exists when every id is below size (cells hold disjoint sets of live sequences);
        // kept as a refusal all the same.
        if (cell < 0) return false;
        plan[g] = {static_cast<uint32_t>(cell), src};
        cells[cell].seq = set;
        cells[cell].pos = 0;  // taken; the position is set below
    }

    // ---- apply: states first (a copy reads its source before any forward pass writes it) ----
    for (size_t g = 0; g < groups.size(); ++g) {
        const Plan &p = plan[g];
        save_state(p.cell);
        if (p.src < 0)
            zero_state(p.cell);
        else if (static_cast<uint32_t>(p.src) != p.cell)
            copy_state(p.cell, static_cast<uint32_t>(p.src));
    }
    for (size_t g = 0; g < groups.size(); ++g) {
        KvCell &c = cells[plan[g].cell];
        const int32_t last = pos[groups[g].last_token], first = pos[groups[g].first_token];
        const KvCell &before = cells_[plan[g].cell];
        if (before.seq == groups[g].set && before.pos >= 0 && before.pos + 1 != first)  // b4748 warns too
            LCTX_LOG_WARN("decode: sequence %d continues its recurrent state at position %d after %d",
                          groups[g].first_seq, first, before.pos);
        c.pos = last;
        c.delta = 0;
    }
    cells_ = std::move(cells);
    used_ = 0;
    for (const KvCell &c : cells_) used_ += c.pos >= 0 ? 1 : 0;
    out.resize(n);
    for (int32_t t = 0; t < n; ++t) out[t] = plan[group_of[t]].cell;
    return true;
}

bool KvCache::arrange_states(const std::vector<KvCell> &target, uint32_t head) {
    if (!recurrent_ || target.size() != size_) return false;
    std::vector<int32_t> from(size_, -1);  // from[i]: the cell whose state goes to cell i
    uint32_t n_placed = 0, n_used = 0;
    for (uint32_t i = 0; i < size_; ++i) {
        n_used += cells_[i].seq.any() ? 1 : 0;
        if (target[i].seq.none()) continue;
        for (uint32_t j = 0; j < size_ && from[i] < 0; ++j)
            if (cells_[j].seq == target[i].seq && cells_[j].pos == target[i].pos)
                from[i] = static_cast<int32_t>(j);
        if (from[i] < 0) return false;
        ++n_placed;
    }
    if (n_placed != n_used) return false;

    // Every layer's K (convolution) and V (SSM) rows follow their cell; rows of empty cells are left as they
    // were (never read: a sequence starting in an empty cell starts from zeros). Usually no cell moves (each
    // decode call ends here): then no row is copied (a copy of every state, every call, otherwise).
    bool moves = false;
    for (uint32_t i = 0; i < size_; ++i) moves |= from[i] >= 0 && static_cast<uint32_t>(from[i]) != i;
    std::vector<uint8_t> rows;
    auto move_rows = [&](uint8_t *base, size_t row) {
        rows.assign(base, base + row * size_);
        for (uint32_t i = 0; i < size_; ++i)
            if (from[i] >= 0 && static_cast<uint32_t>(from[i]) != i)
                std::memcpy(base + row * i, rows.data() + row * from[i], row);
    };
    for (uint32_t il = 0; il < n_layer_ && moves; ++il) {
        move_rows(view_.k[il], view_.k_row_bytes);
        move_rows(view_.v[il], view_.v_row_bytes);
    }
    std::vector<KvCell> moved(size_);
    for (uint32_t i = 0; i < size_; ++i)
        if (from[i] >= 0) moved[i] = cells_[from[i]];
    cells_ = std::move(moved);
    head_ = head < size_ ? head : 0;
    return true;
}

}  // namespace lctx
