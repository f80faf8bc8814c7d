// A GGUF file written whole or not at all: the header (metadata and tensor directory) first, then the
// tensors' data streamed in order, each padded to the alignment; the bytes go to a temporary file in the
// target's directory that replaces the target only once everything is written and synced.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace lctx::quantize {

struct TensorSlot {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    uint64_t nbytes;
};

// The header of a GGUF v3 file with these key-values and tensors (data offsets packed in order, each
// tensor padded to `alignment`), itself padded to `alignment`: the data section starts right after it.
std::vector<uint8_t> gguf_header(const std::vector<gguf::KeyValue> &kv,
                                 const std::vector<TensorSlot> &tensors, size_t alignment);

class OutputFile {
  public:
    // Refuses a target that exists and is not a regular file (a device, a FIFO, a directory).
    explicit OutputFile(const std::string &path);
    ~OutputFile();  // removes the temporary file unless commit() succeeded
    OutputFile(const OutputFile &) = delete;
    OutputFile &operator=(const OutputFile &) = delete;

    void write(const void *data, size_t n);
    void write_zeros(size_t n);
    uint64_t written() const { return written_; }
    // Flushes, syncs and renames the temporary file over the target.
    void commit();

  private:
    [[noreturn]] void fail(const std::string &what);
    std::string path_;
    std::string tmp_;
    std::FILE *f_ = nullptr;
    uint64_t written_ = 0;
    bool committed_ = false;
};

}  // namespace lctx::quantize
