// The header of a GGUF v3 file, as every writer here lays it out (gguf::Writer, split, quantize): the one place
// that knows the directory's byte layout; the data is then streamed after it (whole or not at all, through
// util/atomic_file).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace lctx::gguf {

// A tensor as a file's header lists it; its data is written after the header, in directory order.
struct TensorEntry {
    std::string name;
    GgmlType type = GgmlType::F32;
    std::vector<int64_t> ne;
    uint64_t nbytes = 0;
};

// Magic, version, counts, the key-values in order, then the tensor directory (data offsets packed in order,
// each tensor padded to `alignment`), padded to `alignment` when there are tensors so that the data section
// starts right after it (a file without tensors ends after its metadata).
std::vector<uint8_t> header_bytes(const std::vector<KeyValue> &kv, const std::vector<TensorEntry> &tensors,
                                  size_t alignment);

}  // namespace lctx::gguf
