// The LoRA adapters a context applies (llama_set_adapter_lora / _rm_ / _clear_), with their scales. The
// context holds them weakly: an adapter freed while set (llama_adapter_lora_free, or its model's end) is
// dropped from the set before the next pass instead of being read. Changing the set is cheap and takes
// effect at the next decode; K/V already cached are kept as they were computed.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "model/lora_adapter.h"

namespace lctx {

class LoraBinding {
  public:
    // Adds the adapter with this scale, or updates its scale when it is already set.
    void set(const std::shared_ptr<const LoraAdapter> &adapter, float scale);
    // Removes it; false when it was not set.
    bool remove(const LoraAdapter *adapter);
    void clear() { entries_.clear(); }
    // The adapters as set, in the order they were first set (freed ones dropped).
    std::vector<LoraActive> list();

    // The set a forward pass applies: live adapters with a non-zero scale (a zero scale adds nothing, as in
    // llama.cpp). Valid until the set changes; empty (and nothing allocated) when none is set.
    std::span<const LoraActive> active();

  private:
    struct Entry {
        std::weak_ptr<const LoraAdapter> adapter;
        const LoraAdapter *key;  // for comparison only; never read through once expired
        float scale;
    };
    void drop_freed();

    std::vector<Entry> entries_;
    std::vector<LoraActive> active_;
};

}  // namespace lctx
