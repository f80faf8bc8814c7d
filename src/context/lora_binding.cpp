#include "context/lora_binding.h"

#include <algorithm>

namespace lctx {

void LoraBinding::drop_freed() {
    std::erase_if(entries_, [](const Entry &e) { return e.adapter.expired(); });
}

void LoraBinding::set(const std::shared_ptr<const LoraAdapter> &adapter, float scale) {
    drop_freed();  // a new adapter may reuse a freed one's address
    for (Entry &e : entries_)
        if (e.key == adapter.get()) {
            e.scale = scale;
            return;
        }
    entries_.push_back({adapter, adapter.get(), scale});
}

bool LoraBinding::remove(const LoraAdapter *adapter) {
    drop_freed();
    const auto it =
        std::find_if(entries_.begin(), entries_.end(), [&](const Entry &e) { return e.key == adapter; });
    if (it == entries_.end()) return false;
    entries_.erase(it);
    return true;
}

std::vector<LoraActive> LoraBinding::list() {
    drop_freed();
    std::vector<LoraActive> out;
    for (const Entry &e : entries_) out.push_back({e.key, e.scale});
    return out;
}

std::span<const LoraActive> LoraBinding::active() {
    if (entries_.empty()) return {};
    drop_freed();
    active_.clear();
    for (const Entry &e : entries_)
        if (e.scale != 0.0f) active_.push_back({e.key, e.scale});
    return active_;
}

}  // namespace lctx
