// An independent reader of the state byte layout (STATE-FORMAT.md) for tests: it records where each field
// lies so tests can compare two states field by field and corrupt one field at a time.
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace state_test {

struct Layout {
    // Whole-context fields (absent in the sequence layout).
    size_t arch_len_off = 0, n_outputs_off = 0, logits_count_off = 0, logits_off = 0, embd_count_off = 0;
    std::string arch;
    uint32_t n_outputs = 0;
    uint64_t n_logits = 0, n_embd = 0;
    // KV.
    size_t cell_count_off = 0;
    uint32_t cell_count = 0;
    std::vector<size_t> cell_pos_off;   // [cell_count]
    std::vector<size_t> cell_nseq_off;  // [cell_count]
    size_t v_trans_off = 0, n_layer_off = 0;
    uint32_t v_trans = 0, n_layer = 0;
    std::vector<size_t> k_type_off, k_row_off, k_data_off;  // [n_layer]
    std::vector<size_t> v_type_off, v_data_off;             // [n_layer]
    std::vector<size_t> v_data_bytes;                       // [n_layer]
    uint64_t k_row = 0;
    size_t end = 0;  // bytes parsed
};

class LayoutReader {
  public:
    LayoutReader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
    template <typename T>
    T get() {
        if (pos_ + sizeof(T) > n_) throw std::runtime_error("layout: truncated at " + std::to_string(pos_));
        T v;
        std::memcpy(&v, p_ + pos_, sizeof v);
        pos_ += sizeof v;
        return v;
    }
    void skip(size_t k) {
        if (k > n_ - pos_) throw std::runtime_error("layout: truncated block at " + std::to_string(pos_));
        pos_ += k;
    }
    size_t pos() const { return pos_; }

  private:
    const uint8_t *p_;
    size_t n_;
    size_t pos_ = 0;
};

// seq: the sequence layout (starts at cell_count). Offsets are relative to p.
inline Layout parse_layout(const uint8_t *p, size_t n, bool seq) {
    Layout l;
    LayoutReader r(p, n);
    if (!seq) {
        l.arch_len_off = r.pos();
        const uint32_t al = r.get<uint32_t>();
        l.arch.assign(reinterpret_cast<const char *>(p + r.pos()), al);
        r.skip(al);
        l.n_outputs_off = r.pos();
        l.n_outputs = r.get<uint32_t>();
        r.skip(4ull * l.n_outputs);
        l.logits_count_off = r.pos();
        l.n_logits = r.get<uint64_t>();
        l.logits_off = r.pos();
        r.skip(4 * l.n_logits);
        l.embd_count_off = r.pos();
        l.n_embd = r.get<uint64_t>();
        r.skip(4 * l.n_embd);
    }
    l.cell_count_off = r.pos();
    l.cell_count = r.get<uint32_t>();
    for (uint32_t i = 0; i < l.cell_count; ++i) {
        l.cell_pos_off.push_back(r.pos());
        r.get<int32_t>();
        l.cell_nseq_off.push_back(r.pos());
        const uint32_t ns = r.get<uint32_t>();
        r.skip(4ull * ns);
    }
    l.v_trans_off = r.pos();
    l.v_trans = r.get<uint32_t>();
    l.n_layer_off = r.pos();
    l.n_layer = r.get<uint32_t>();
    for (uint32_t il = 0; il < l.n_layer; ++il) {
        l.k_type_off.push_back(r.pos());
        r.get<int32_t>();
        l.k_row_off.push_back(r.pos());
        l.k_row = r.get<uint64_t>();
        l.k_data_off.push_back(r.pos());
        r.skip(l.k_row * l.cell_count);
    }
    for (uint32_t il = 0; il < l.n_layer; ++il) {
        l.v_type_off.push_back(r.pos());
        r.get<int32_t>();
        size_t bytes;
        if (l.v_trans) {
            const uint32_t elem = r.get<uint32_t>();
            const uint32_t ch = r.get<uint32_t>();
            bytes = static_cast<size_t>(elem) * ch * l.cell_count;
        } else {
            bytes = r.get<uint64_t>() * l.cell_count;
        }
        l.v_data_off.push_back(r.pos());
        l.v_data_bytes.push_back(bytes);
        r.skip(bytes);
    }
    l.end = r.pos();
    return l;
}

template <typename T>
void poke(std::vector<uint8_t> &buf, size_t off, T v) {
    std::memcpy(buf.data() + off, &v, sizeof v);
}

template <typename T>
T peek(const std::vector<uint8_t> &buf, size_t off) {
    T v;
    std::memcpy(&v, buf.data() + off, sizeof v);
    return v;
}

}  // namespace state_test
