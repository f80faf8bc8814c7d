// The KV cache: `size` cells, each with a position and the set of sequences it belongs to, plus the
// per-layer K and V storage (F16 by default; F32 and Q8_0 selectable). Sequence operations change
// cells only; a position shift marks cells with a delta and the keys are re-rotated before the next
// decode (apply_shift).
#pragma once
#include <bitset>
#include <cstdint>
#include <vector>

#include "model/forward.h"
#include "model/hparams.h"
#include "model/model.h"
#include "util/page_buffer.h"

namespace lctx {

// A cell's sequence set holds ids in [0, kMaxSeqs): attention models accept any id there, whatever
// n_seq_max (as b4748, whose cells hold a std::set); n_seq_max <= kMaxSeqs bounds recurrent state slots.
constexpr int kMaxSeqs = 256;
using SeqSet = std::bitset<kMaxSeqs>;

struct KvCell {
    int32_t pos = -1;   // -1: empty
    int32_t delta = 0;  // accumulated shift not yet applied to the keys
    SeqSet seq;
    bool empty() const { return seq.none(); }
};

class KvCache {
  public:
    // v_trans: V stored a row per channel (the default); false keeps a row per cell (flash-attention
    // contexts, and block-quantized V types, which cannot be stored by single elements).
    // n_layer: layers with K/V, 0 for the model's n_layer (an encoder-decoder model's decoder has its own
    // count).
    KvCache(const HParams &hp, uint32_t size, GgmlType type_k, GgmlType type_v, uint32_t n_seq_max,
            bool v_trans = true, uint32_t n_layer = 0);

    uint32_t size() const { return size_; }
    uint32_t used() const { return used_; }
    uint32_t n_seq_max() const { return n_seq_max_; }
    const KvView &view() const { return view_; }
    const std::vector<KvCell> &cells() const { return cells_; }
    bool has_shift() const { return has_shift_; }
    size_t memory_bytes() const { return storage_.size(); }

    // ---- placing a micro-batch ----
    // Finds cells for n tokens (contiguous from the head when possible, any free cells otherwise).
    // Returns false when there is no room; changes nothing then.
    bool find_cells(int32_t n, std::vector<uint32_t> &out);
    // Occupies the cells found for the tokens (positions and sequence sets).
    void occupy(const std::vector<uint32_t> &cells, const int32_t *pos, const int32_t *n_seq_id,
                int32_t *const *seq_id);
    // Releases cells of a micro-batch that failed (abort) so the cache holds only complete ones.
    void release(const std::vector<uint32_t> &cells);
    void advance_head(uint32_t n);
    // Where the next search for cells starts. A decode saves it with the cells it placed, so that a
    // call that does not complete (abort, no room) can put the cache back exactly as it found it.
    uint32_t head() const { return head_; }
    void rollback(const std::vector<uint32_t> &placed, uint32_t head) {
        release(placed);
        head_ = head;
    }
    // The heuristic llama.cpp uses to prefer filling holes at the start over appending.
    void maybe_rewind_head(uint32_t n_tokens);
    // Cells that attention must look at: [0, n_kv).
    uint32_t n_kv() const;

    // ---- sequence operations (seq < 0 means every sequence; p1 < 0 means to the end) ----
    // An id no cell can hold (>= kMaxSeqs) matches no cell: the operation changes nothing.
    void clear();
    // Always true for attention cells (false is reserved for recurrent state that cannot lose a middle part).
    bool seq_rm(int32_t seq, int32_t p0, int32_t p1);
    void seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1);
    // Drops every cell not in seq; seq < 0 (no sequence) drops every cell.
    void seq_keep(int32_t seq);
    void seq_add(int32_t seq, int32_t p0, int32_t p1, int32_t delta);
    // d == 1 changes nothing; d < 1 is refused (false, nothing changed).
    bool seq_div(int32_t seq, int32_t p0, int32_t p1, int32_t d);
    int32_t seq_pos_max(int32_t seq) const;  // -1 for an empty sequence
    int32_t seq_pos_min(int32_t seq) const;  // -1 for an empty sequence
    int32_t n_tokens() const;                // sum over cells of their sequence counts

    // Re-rotates cached keys of shifted cells by their delta, with each layer's RoPE parameters
    // (layer_rope: the forward pass's own), and clears the deltas.
    void apply_shift(const Model &model);
    // Moves used cells to the front (keeps their order), so that new micro-batches find room at the end.
    void defrag();

    // ---- raw access for state save/restore ----
    std::vector<KvCell> &mutable_cells() { return cells_; }
    void set_head_used(uint32_t head, uint32_t used) {
        head_ = head;
        used_ = used;
    }
    uint32_t n_layer() const { return n_layer_; }
    uint32_t n_embd_k() const { return n_embd_k_; }
    uint32_t n_embd_v() const { return n_embd_v_; }

  private:
    void clear_cell(KvCell &c);

    uint32_t size_ = 0;
    uint32_t n_seq_max_ = 1;
    uint32_t n_layer_ = 0, n_embd_k_ = 0, n_embd_v_ = 0;
    uint32_t head_ = 0;
    uint32_t used_ = 0;
    bool has_shift_ = false;
    std::vector<KvCell> cells_;
    PageBuffer storage_;  // all layers' K then V
    KvView view_;
};

}  // namespace lctx
