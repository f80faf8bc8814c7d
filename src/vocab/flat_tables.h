// Open-addressing lookup tables for the vocabulary's two hot maps, a few bytes per entry instead of a
// heap node each (a 50,000-token vocabulary's maps were 6 MiB of std::unordered_map nodes: a tenth of
// the memory of a 135M-parameter model's run). Linear probing over a power-of-two table at most half full.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace lctx::vocab_detail {

inline size_t table_size_for(size_t n) {
    size_t s = 16;
    while (s < 2 * n) s <<= 1;
    return s;
}

// Token ids by token text. The texts live in the vocabulary (text(id) returns one); the table holds ids.
class TextIndex {
  public:
    // text_of(id): the text of token id < n; a repeated text maps to its last id.
    template <class TextOf>
    void build(size_t n, TextOf text_of) {
        slots_.assign(table_size_for(n), -1);
        for (size_t i = 0; i < n; ++i) {
            const std::string_view t = text_of(static_cast<int32_t>(i));
            size_t s = slot_of(t, text_of);
            slots_[s] = static_cast<int32_t>(i);
        }
    }
    // The id of `text`, or -1.
    template <class TextOf>
    int32_t find(std::string_view text, TextOf text_of) const {
        if (slots_.empty()) return -1;
        return slots_[slot_of(text, text_of)];
    }

  private:
    // The slot holding `text`, or the empty slot where it would go.
    template <class TextOf>
    size_t slot_of(std::string_view text, TextOf text_of) const {
        const size_t mask = slots_.size() - 1;
        size_t s = std::hash<std::string_view>{}(text)&mask;
        while (slots_[s] >= 0 && text_of(slots_[s]) != text) s = (s + 1) & mask;
        return s;
    }
    std::vector<int32_t> slots_;
};

// Ranks by a 64-bit key (a pair of token ids); the first insert of a key wins.
class PairRanks {
  public:
    void reserve(size_t n) {
        keys_.assign(table_size_for(n), kEmpty);
        ranks_.assign(keys_.size(), -1);
    }
    void insert(uint64_t key, int32_t rank) {
        const size_t s = slot_of(key);
        if (keys_[s] == kEmpty) {
            keys_[s] = key;
            ranks_[s] = rank;
        }
    }
    int32_t find(uint64_t key) const {
        if (keys_.empty()) return -1;
        const size_t s = slot_of(key);
        return keys_[s] == key ? ranks_[s] : -1;
    }

  private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};  // not a pair of ids below 2^31
    size_t slot_of(uint64_t key) const {
        const size_t mask = keys_.size() - 1;
        size_t s = static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> 32) & mask;
        while (keys_[s] != kEmpty && keys_[s] != key) s = (s + 1) & mask;
        return s;
    }
    std::vector<uint64_t> keys_;
    std::vector<int32_t> ranks_;
};

}  // namespace lctx::vocab_detail
