#include "context/kv_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <tuple>

#include "kernels/ops.h"
#include "model/architectures.h"
#include "util/error.h"

namespace lctx {

KvCache::KvCache(const HParams &hp, uint32_t size, GgmlType type_k, GgmlType type_v, uint32_t n_seq_max,
                 bool v_trans, uint32_t n_layer)
    : size_(size),
      n_seq_max_(n_seq_max),
      n_layer_(n_layer ? n_layer : hp.n_layer),
      n_embd_k_(hp.n_embd_k_gqa()),
      n_embd_v_(hp.n_embd_v_gqa()),
      recurrent_(hp.recurrent) {
    if (size == 0) throw Error("KV cache size (n_ctx) must be greater than 0");
    if (n_seq_max == 0 || n_seq_max > kMaxSeqs)
        throw Error("n_seq_max must lie in [1, " + std::to_string(kMaxSeqs) + "], got " +
                    std::to_string(n_seq_max));
    if (recurrent_) {
        // One cell per sequence, f32 (b4748 forces it: its ssm_conv and ssm_scan read f32 states), V by rows.
        size = size_ = n_seq_max;
        n_embd_k_ = hp.n_embd_k_s();
        n_embd_v_ = hp.n_embd_v_s();
        type_k = type_v = GgmlType::F32;
        v_trans = false;
    }
    for (GgmlType t : {type_k, type_v})
        if (!is_kv_cache_type(t))
            throw Error(std::string("KV cache type ") + type_name(t) + " is not supported (" +
                        kKvCacheTypeNames + ")");
    // Each head's keys (and values) are whole blocks: attention reads a head's row on its own.
    for (auto [t, head, what] :
         {std::tuple{type_k, hp.n_embd_head_k, "K"}, std::tuple{type_v, hp.n_embd_head_v, "V"}})
        if (head % type_traits(t).block_size != 0)
            throw Error(std::string("KV cache type ") + type_name(t) + " for " + what +
                        " needs a head size that is a multiple of " +
                        std::to_string(type_traits(t).block_size) + " (this model's is " +
                        std::to_string(head) + ")");

    view_.type_k = type_k;
    view_.type_v = type_v;
    // V is kept transposed (a row per channel) unless asked otherwise or block-quantized, where a channel
    // row of single elements cannot be stored.
    view_.v_trans = v_trans && !type_traits(type_v).is_quantized;
    view_.size = size;
    view_.n_ctx_per_seq = size / n_seq_max;
    view_.rope =
        context_rope(hp, RopeOverrides{});  // a context with its own settings replaces them (set_rope)
    view_.k_row_bytes = row_size(type_k, n_embd_k_);
    view_.v_row_bytes = row_size(type_v, n_embd_v_);
    view_.v_elem_bytes = view_.v_trans ? type_traits(type_v).type_size : 0;

    // Sizes in 128-bit arithmetic: a hostile n_ctx must not wrap into a small allocation.
    const unsigned __int128 k_layer128 = static_cast<unsigned __int128>(view_.k_row_bytes) * size;
    const unsigned __int128 v_layer128 = static_cast<unsigned __int128>(view_.v_row_bytes) * size;
    const unsigned __int128 total128 = (k_layer128 + v_layer128) * n_layer_;
    const unsigned __int128 limit = static_cast<unsigned __int128>(SIZE_MAX) / 2;
    if (total128 > limit)
        throw Error("cannot allocate the KV cache for " + std::to_string(size) +
                    " cells: it would exceed the "
                    "address space; lower n_ctx");
    // Explicit resource limit: a cache larger than the machine's memory is refused before any attempt
    // to allocate it (an attempt could end in the OOM killer instead of an error).
    const unsigned __int128 cells128 = static_cast<unsigned __int128>(sizeof(KvCell)) * size;
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page_size > 0 &&
        total128 + cells128 >
            static_cast<unsigned __int128>(pages) * static_cast<unsigned __int128>(page_size))
        throw Error("the KV cache for " + std::to_string(size) + " cells needs " +
                    std::to_string(static_cast<uint64_t>((total128 + cells128) >> 20)) +
                    " MiB, more than the " +
                    std::to_string((static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)) >> 20) +
                    " MiB of memory of this machine; lower n_ctx");
    const size_t k_layer = static_cast<size_t>(k_layer128);
    const size_t v_layer = static_cast<size_t>(v_layer128);
    const size_t total = static_cast<size_t>(total128);
    try {
        storage_ = PageBuffer(total);  // zero-filled, committed as cells are written
        cells_.resize(size);
    } catch (const std::exception &) {
        throw Error("cannot allocate the KV cache: " + std::to_string(total >> 20) + " MiB for " +
                    std::to_string(size) + " cells; lower n_ctx");
    }
    view_.k.resize(n_layer_);
    view_.v.resize(n_layer_);
    for (uint32_t il = 0; il < n_layer_; ++il) {
        view_.k[il] = storage_.data() + il * k_layer;
        view_.v[il] = storage_.data() + n_layer_ * k_layer + il * v_layer;
    }
}

bool KvCache::find_cells(int32_t n, std::vector<uint32_t> &out) {
    out.clear();
    if (n <= 0) return true;
    if (static_cast<uint32_t>(n) > size_ - used_) return false;
    // First choice: a contiguous run starting at or after the head, wrapping once (llama.cpp's
    // placement, so cell order matches its state files).
    uint32_t head = head_;
    uint32_t tested = 0;
    while (tested < size_) {
        if (head + n > size_) {
            tested += size_ - head;
            head = 0;
            continue;
        }
        bool found = true;
        for (int32_t i = 0; i < n; ++i) {
            if (cells_[head + i].pos >= 0) {
                found = false;
                head += i + 1;
                tested += i + 1;
                break;
            }
        }
        if (found) {
            head_ = head;
            for (int32_t i = 0; i < n; ++i) out.push_back(head + i);
            return true;
        }
    }
    // Fragmented cache: any free cells, in order.
    for (uint32_t i = 0; i < size_ && static_cast<int32_t>(out.size()) < n; ++i)
        if (cells_[i].pos < 0) out.push_back(i);
    return static_cast<int32_t>(out.size()) == n;
}

bool KvCache::find_cells(int32_t n, const int32_t *n_seq_id, int32_t *const *seq_id,
                         std::vector<uint32_t> &out) {
    if (!place_by_sequence_ || recurrent_ || n_seq_max_ <= 1) return find_cells(n, out);
    out.clear();
    if (n <= 0) return true;
    if (static_cast<uint32_t>(n) > size_ - used_) return false;
    const uint32_t region = size_ / n_seq_max_;
    taken_.assign(size_, 0);
    seq_cursor_.assign(kMaxSeqs, -1);
    for (int32_t t = 0; t < n; ++t) {
        const int32_t s = n_seq_id && n_seq_id[t] > 0 ? seq_id[t][0] : 0;
        int64_t &cur = seq_cursor_[static_cast<uint32_t>(s) % kMaxSeqs];
        if (cur < 0) cur = static_cast<int64_t>(static_cast<uint32_t>(s) % n_seq_max_) * region;
        // the cursor only moves forward (round the cache once at most): there are n free cells
        uint32_t tested = 0;
        while (cells_[cur].pos >= 0 || taken_[cur]) {
            cur = cur + 1 == size_ ? 0 : cur + 1;
            if (++tested == size_) {  // cannot happen: used_ + n <= size_
                out.clear();
                return false;
            }
        }
        taken_[cur] = 1;
        out.push_back(static_cast<uint32_t>(cur));
    }
    return true;
}

void KvCache::occupy(const std::vector<uint32_t> &cells, const int32_t *pos, const int32_t *n_seq_id,
                     int32_t *const *seq_id) {
    for (size_t i = 0; i < cells.size(); ++i) {
        KvCell &c = cells_[cells[i]];
        c.pos = pos[i];
        c.delta = 0;
        c.seq.reset();
        for (int32_t s = 0; s < n_seq_id[i]; ++s) c.seq.set(seq_id[i][s]);
    }
    used_ += static_cast<uint32_t>(cells.size());
}

void KvCache::release(const std::vector<uint32_t> &cells) {
    for (uint32_t i : cells) {
        if (cells_[i].pos >= 0) used_--;
        clear_cell(cells_[i]);
    }
}

void KvCache::advance_head(uint32_t n) {
    head_ += n;
    if (head_ >= size_) head_ = 0;
}

void KvCache::maybe_rewind_head(uint32_t n_tokens) {
    if (head_ > used_ + 2 * n_tokens) head_ = 0;
}

uint32_t KvCache::n_kv() const {
    for (uint32_t i = size_; i > 0; --i)
        if (cells_[i - 1].pos >= 0) return i;
    return 0;
}

void KvCache::clear_cell(KvCell &c) {
    c.pos = -1;
    c.delta = 0;
    c.seq.reset();
}

void KvCache::clear() {
    for (KvCell &c : cells_) clear_cell(c);
    head_ = 0;
    used_ = 0;
    has_shift_ = false;
}

namespace {
constexpr int32_t kPosMax = std::numeric_limits<int32_t>::max();
void normalize_range(int32_t &p0, int32_t &p1) {
    if (p0 < 0) p0 = 0;
    if (p1 < 0) p1 = kPosMax;
}
bool valid_seq(int32_t seq) {
    return seq >= 0 && seq < kMaxSeqs;
}
}  // namespace

void KvCache::rollback(const std::vector<uint32_t> &placed, uint32_t head) {
    if (recurrent_) {
        const size_t per_cell = n_layer_ * (view_.k_row_bytes + view_.v_row_bytes);
        for (size_t i = 0; i < undo_ids_.size(); ++i) {
            const uint8_t *src = undo_bytes_.data() + i * per_cell;
            for (uint32_t il = 0; il < n_layer_; ++il) {
                std::memcpy(view_.k[il] + undo_ids_[i] * view_.k_row_bytes, src, view_.k_row_bytes);
                src += view_.k_row_bytes;
                std::memcpy(view_.v[il] + undo_ids_[i] * view_.v_row_bytes, src, view_.v_row_bytes);
                src += view_.v_row_bytes;
            }
        }
        cells_ = undo_cells_;
        head_ = undo_head_;
        used_ = undo_used_;
        undo_ids_.clear();
        return;
    }
    release(placed);
    head_ = head;
}

bool KvCache::seq_rm(int32_t seq, int32_t p0, int32_t p1) {
    normalize_range(p0, p1);
    if (recurrent_ && !rs_seq_rm(seq, p0, p1)) return false;
    if (seq >= kMaxSeqs) return true;  // no cell holds it: nothing to remove
    uint32_t new_head = size_;
    for (uint32_t i = 0; i < size_; ++i) {
        KvCell &c = cells_[i];
        if (c.pos < p0 || c.pos >= p1) continue;
        if (seq < 0) {
            c.seq.reset();
        } else if (c.seq.test(seq)) {
            c.seq.reset(seq);
        } else {
            continue;
        }
        if (c.empty()) {
            if (c.pos >= 0) used_--;
            clear_cell(c);
            if (new_head == size_) new_head = i;
        }
    }
    if (new_head != size_ && new_head < head_) head_ = new_head;
    return true;
}

void KvCache::seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1) {
    if (src == dst || !valid_seq(src) || !valid_seq(dst)) return;
    if (recurrent_) return rs_seq_cp(src, dst);  // the whole state, whatever the range (b4748)
    normalize_range(p0, p1);
    head_ = 0;
    for (KvCell &c : cells_)
        if (c.seq.test(src) && c.pos >= p0 && c.pos < p1) c.seq.set(dst);
}

void KvCache::seq_keep(int32_t seq) {
    const bool keep_any = valid_seq(seq);  // an id no cell holds keeps nothing
    uint32_t new_head = size_;
    for (uint32_t i = 0; i < size_; ++i) {
        KvCell &c = cells_[i];
        if (!keep_any || !c.seq.test(seq)) {
            if (c.pos >= 0) used_--;
            clear_cell(c);
            if (new_head == size_) new_head = i;
        } else {
            c.seq.reset();
            c.seq.set(seq);
        }
    }
    if (new_head != size_ && new_head < head_) head_ = new_head;
}

void KvCache::seq_add(int32_t seq, int32_t p0, int32_t p1, int32_t delta) {
    if (delta == 0 || !valid_seq(seq)) return;
    normalize_range(p0, p1);
    if (recurrent_) return rs_seq_move(seq, p0, p1, delta, 1);
    uint32_t new_head = size_;
    for (uint32_t i = 0; i < size_; ++i) {
        KvCell &c = cells_[i];
        if (!c.seq.test(seq) || c.pos < p0 || c.pos >= p1) continue;
        has_shift_ = true;
        // 64-bit sums: a shift past INT32_MAX drops the cell like one shifted below 0.
        const int64_t pos = static_cast<int64_t>(c.pos) + delta;
        const int64_t acc = static_cast<int64_t>(c.delta) + delta;
        const bool out_of_range = pos > INT32_MAX || acc > INT32_MAX || acc < INT32_MIN;
        c.pos = out_of_range ? -1 : static_cast<int32_t>(pos);
        c.delta = out_of_range ? 0 : static_cast<int32_t>(acc);
        if (c.pos < 0) {
            used_--;
            clear_cell(c);
            if (new_head == size_) new_head = i;
        }
    }
    // Free cells may have opened anywhere: search from the start next time.
    head_ = new_head != size_ ? new_head : 0;
}

bool KvCache::seq_div(int32_t seq, int32_t p0, int32_t p1, int32_t d) {
    if (d < 1) return false;  // d <= 0 would move cells to negative positions no operation could reach
    if (d == 1 || !valid_seq(seq)) return true;
    normalize_range(p0, p1);
    if (recurrent_) {
        rs_seq_move(seq, p0, p1, 0, d);
        return true;
    }
    for (KvCell &c : cells_) {
        if (!c.seq.test(seq) || c.pos < p0 || c.pos >= p1) continue;
        has_shift_ = true;
        const int32_t p_old = c.pos;
        c.pos /= d;
        const int64_t acc = static_cast<int64_t>(c.delta) + (static_cast<int64_t>(c.pos) - p_old);
        c.delta = static_cast<int32_t>(std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX));
    }
    return true;
}

int32_t KvCache::seq_pos_max(int32_t seq) const {
    int32_t r = -1;
    if (!valid_seq(seq)) return r;
    for (const KvCell &c : cells_)
        if (c.seq.test(seq)) r = std::max(r, c.pos);
    return r;
}

int32_t KvCache::max_pos() const {
    int32_t r = -1;
    for (const KvCell &c : cells_) r = std::max(r, c.pos);
    return r;
}

int32_t KvCache::seq_pos_min(int32_t seq) const {
    int32_t r = -1;
    if (!valid_seq(seq)) return r;
    for (const KvCell &c : cells_)
        if (c.seq.test(seq) && (r < 0 || c.pos < r)) r = c.pos;
    return r;
}

int32_t KvCache::n_tokens() const {
    int32_t n = 0;
    for (const KvCell &c : cells_) n += static_cast<int32_t>(c.seq.count());
    return n;
}

void KvCache::apply_shift(const Model &model) {
    if (!has_shift_) return;
    const HParams &hp = model.hparams();
    // A family without RoPE (ALiBi: bloom) keeps no position in its keys; the cells' positions are already
    // moved and the mask reads the distances from them, so there is nothing to rotate (b4748 skips it too).
    const ArchitectureInfo *info = find_architecture(hp.arch_name);
    if (info && info->rope == RopeKind::None) {
        for (KvCell &c : cells_) c.delta = 0;
        has_shift_ = false;
        return;
    }
    const int n_head_kv = static_cast<int>(hp.n_head_kv);
    const int head_dim = static_cast<int>(hp.n_embd_head_k);
    std::vector<float> row(n_embd_k_);
    for (uint32_t il = 0; il < n_layer_; ++il) {
        const kernels::RopeParams rope = layer_rope(model, il, view_);
        for (uint32_t i = 0; i < size_; ++i) {
            const KvCell &c = cells_[i];
            if (c.delta == 0 || c.pos < 0) continue;
            uint8_t *k = view_.k[il] + i * view_.k_row_bytes;
            // Rotation by the delta composes with the rotation already applied at the old position; the
            // magnitude (attn_factor, YaRN) was applied then and is not applied again (b4748 applies it at
            // every shift, to every cell).
            if (view_.type_k == GgmlType::F16) {
                kernels::rope_shift_f16(reinterpret_cast<uint16_t *>(k), n_head_kv, head_dim,
                                        static_cast<float>(c.delta), rope);
            } else {
                dequantize_row(view_.type_k, k, row.data(), n_embd_k_);
                kernels::rope_shift(row.data(), n_head_kv, head_dim, static_cast<float>(c.delta), rope);
                quantize_row(view_.type_k, row.data(), k, n_embd_k_);
            }
        }
    }
    for (KvCell &c : cells_) c.delta = 0;
    has_shift_ = false;
}

void KvCache::defrag() {
    if (recurrent_) return;  // one cell per sequence: nothing to compact (b4748 skips it too)
    // Compact: move each used cell to the first free slot before it (K rows and V columns move too).
    uint32_t dst = 0;
    for (uint32_t src = 0; src < size_; ++src) {
        if (cells_[src].pos < 0) continue;
        if (src != dst) {
            cells_[dst] = cells_[src];
            clear_cell(cells_[src]);
            for (uint32_t il = 0; il < n_layer_; ++il) {
                std::memcpy(view_.k[il] + dst * view_.k_row_bytes, view_.k[il] + src * view_.k_row_bytes,
                            view_.k_row_bytes);
                if (view_.v_trans) {
                    for (uint32_t ch = 0; ch < n_embd_v_; ++ch) {
                        uint8_t *base = view_.v[il] + static_cast<size_t>(ch) * size_ * view_.v_elem_bytes;
                        std::memcpy(base + dst * view_.v_elem_bytes, base + src * view_.v_elem_bytes,
                                    view_.v_elem_bytes);
                    }
                } else {
                    std::memcpy(view_.v[il] + dst * view_.v_row_bytes, view_.v[il] + src * view_.v_row_bytes,
                                view_.v_row_bytes);
                }
            }
        }
        dst++;
    }
    head_ = dst < size_ ? dst : 0;
}

}  // namespace lctx
