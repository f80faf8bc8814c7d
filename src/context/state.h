// Context state save/restore in the byte layout of /work/shared/STATE-FORMAT.md (llama.cpp session
// version 9, sequence version 2): the architecture name, the outputs of the last decode (output map,
// logits, embeddings) and the KV cache, or the KV cells of one sequence.
//
// One serializer writes through a StateWriter: a counting writer gives the exact size, a buffer writer
// fills caller memory, a file writer streams to disk. A load parses and checks everything into a staged
// copy first (architecture, cell counts, layer count, types, row sizes, sequence ids, every byte count
// against what remains) and only then touches the context, so a refused load leaves it unchanged.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "util/atomic_file.h"

namespace lctx {

class Context;

class StateWriter {
  public:
    virtual ~StateWriter() = default;
    // Throws lctx::Error when the bytes cannot be written (buffer too small, I/O error).
    virtual void write(const void *src, size_t n) = 0;
    size_t written() const { return written_; }

  protected:
    size_t written_ = 0;
};

// Counts bytes only: the exact size of what a real writer would produce.
class CountingStateWriter final : public StateWriter {
  public:
    void write(const void *, size_t n) override { written_ += n; }
};

// Fills [dst, dst + capacity); throws when the state does not fit.
class BufferStateWriter final : public StateWriter {
  public:
    BufferStateWriter(uint8_t *dst, size_t capacity) : dst_(dst), capacity_(capacity) {}
    void write(const void *src, size_t n) override;

  private:
    uint8_t *dst_;
    size_t capacity_;
};

// Appends to a file that is written whole or not at all (the caller commits it).
class FileStateWriter final : public StateWriter {
  public:
    explicit FileStateWriter(AtomicFile &f) : f_(f) {}
    void write(const void *src, size_t n) override;

  private:
    AtomicFile &f_;
};

class ContextState {
  public:
    // ---- whole context (llama_state_*) ----
    // Writes arch, outputs and KV cache. Pending K shifts are applied first so that the saved keys
    // match the saved positions.
    static void write(Context &ctx, StateWriter &w);
    static size_t size(Context &ctx);
    // Restores from src (at most `size` bytes) and returns the bytes read. Throws lctx::Error (and
    // leaves the context unchanged) when the data is truncated, malformed or made for another model or
    // cache configuration. exact: also refuse bytes left over after the state (file loads).
    static size_t read(Context &ctx, const uint8_t *src, size_t size, bool exact = false);

    // ---- one sequence (llama_state_seq_*) ----
    // seq must lie in [0, n_seq_max); throws lctx::Error otherwise.
    static void write_seq(Context &ctx, StateWriter &w, int32_t seq);
    static size_t size_seq(Context &ctx, int32_t seq);
    // Replaces sequence dest with the saved cells, placed in any free cells; returns the bytes read.
    // Throws lctx::Error (context unchanged) on any problem, including too few free cells.
    static size_t read_seq(Context &ctx, const uint8_t *src, size_t size, int32_t dest, bool exact = false);

    // ---- files (magic, version, tokens, then the state above) ----
    // Throw lctx::Error on I/O errors and on anything read() refuses.
    static void save_file(Context &ctx, const std::string &path, const int32_t *tokens, size_t n_tokens);
    // Returns the saved tokens; refuses more than token_capacity of them. The whole file must be consumed.
    static std::vector<int32_t> load_file(Context &ctx, const std::string &path, size_t token_capacity);
    // Returns the bytes written.
    static size_t save_seq_file(Context &ctx, const std::string &path, int32_t seq, const int32_t *tokens,
                                size_t n_tokens);
    // Returns the saved tokens and, in *n_read, the bytes read (the file size).
    static std::vector<int32_t> load_seq_file(Context &ctx, const std::string &path, int32_t dest,
                                              size_t token_capacity, size_t *n_read);

  private:
    static void write_kv(Context &ctx, StateWriter &w, int32_t seq);
};

}  // namespace lctx
