// The whole state of a context as llama_state_get_data writes it (the last decode's outputs, every KV cell's
// position and sequences, the K/V data), for tests that check "refused, nothing changed" by bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "context/context.h"
#include "context/state.h"
#include "state/state_layout.h"

namespace state_test {

inline std::vector<uint8_t> snapshot(lctx::Context &ctx) {
    std::vector<uint8_t> bytes(lctx::ContextState::size(ctx));
    lctx::BufferStateWriter w(bytes.data(), bytes.size());
    lctx::ContextState::write(ctx, w);
    return bytes;
}

// The KV cache part of a snapshot (every cell's position and sequences, the K/V data), without the outputs.
inline std::vector<uint8_t> kv_part(const std::vector<uint8_t> &state) {
    const Layout l = parse_layout(state.data(), state.size(), /*seq=*/false);
    return {state.begin() + static_cast<std::ptrdiff_t>(l.cell_count_off), state.end()};
}

}  // namespace state_test
