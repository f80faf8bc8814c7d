// Shared helpers for the vocabulary tests: load a fixture vocabulary once, read .inp/.out test sets.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "vocab/vocab.h"

namespace lctx::test {

// fixtures/vocab/ggml-vocab-NAME.gguf; "t5" lives with the T5 goldens (fixtures/golden-t5/vocab).
inline std::string vocab_path(const std::string &name) {
    const std::string dir = name == "t5" ? "/golden-t5/vocab" : "/vocab";
    return std::string(LCTX_FIXTURES_DIR) + dir + "/ggml-vocab-" + name + ".gguf";
}

// Loads fixtures/vocab/ggml-vocab-NAME.gguf once per process.
const Vocab &fixture_vocab(const std::string &name);

struct VocabCase {
    std::string text;
    std::vector<int32_t> ids;
};
// The texts of NAME.inp and the ids of NAME.out (see fixtures/vocab/FORMAT.md).
std::vector<VocabCase> read_cases(const std::string &name);

// Printable form of a text (control and non-ASCII bytes as escapes).
std::string escape(const std::string &s);

}  // namespace lctx::test
