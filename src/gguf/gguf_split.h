// Split models: one model's tensors spread over several GGUF files named PREFIX-NNNNN-of-MMMMM.gguf
// (llama.cpp's gguf-split convention, NNNNN counting from 1). Every part is a complete GGUF file; the
// first carries all the model's metadata, and every part carries split.no (u16, 0-based), split.count
// (u16) and split.tensors.count (i32: the tensors of all parts together). Reading joins the parts into
// one File whose tensors stay in their own files' mappings (File::join); writing splits a model by
// tensor count or by size, or merges the parts back into one file.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"

namespace lctx::gguf {

inline constexpr const char *kKeySplitNo = "split.no";
inline constexpr const char *kKeySplitCount = "split.count";
inline constexpr const char *kKeySplitTensorsCount = "split.tensors.count";

// "PREFIX-%05d-of-%05d.gguf" for the 0-based split_no.
std::string split_path(std::string_view prefix, int split_no, int split_count);
// The prefix of `path` when it ends in the suffix of (split_no, split_count) after a non-empty prefix;
// nullopt otherwise.
std::optional<std::string> split_prefix(std::string_view path, int split_no, int split_count);

struct SplitInfo {
    int no = 0;     // 0-based
    int count = 0;  // >= 1
    int64_t tensors_count = 0;
};
// A file's split.* keys; nullopt without split.count or with split.count = 0 (gguf-split's merged output
// keeps the keys with a count of 0). Throws GgufError for a key of a non-integer type or out of range.
std::optional<SplitInfo> split_info(const File &f);

// Opens a model file; when it is the first part of a split model, its other parts are found by name
// (b4748's llama_model_load_from_file) and joined. Throws GgufError naming the part that is missing or
// does not match: a part of another number or count, a tensor in two parts, split.tensors.count not the
// sum of the parts' tensors.
std::unique_ptr<File> open_model(const std::string &path);
// Opens a model from explicit paths in part order (llama_model_load_from_splits); one path of an
// unsplit file opens it alone. The same checks as open_model.
std::unique_ptr<File> open_model_parts(const std::vector<std::string> &paths);

// ---- writing ----

struct SplitLimits {
    int max_tensors = 128;   // tensors per part (gguf-split's --split-max-tensors)
    uint64_t max_bytes = 0;  // when non-zero, instead: tensor bytes per part (each padded to the
                             // alignment), a soft limit: a larger tensor gets a part of its own
};

struct SplitPart {
    std::string path;
    std::vector<size_t> tensors;  // indices into the model's tensors()
    uint64_t file_bytes = 0;      // the size the part's file will have
};

// Plans the parts of `model` (a plain file or a joined split model) written under `prefix`. Throws
// GgufError for limits that cannot hold a tensor (max_tensors < 1) or a model without tensors, or
// when more than 65535 parts would be needed.
std::vector<SplitPart> plan_split(const File &model, const std::string &prefix, const SplitLimits &limits);
// Writes the planned parts: the first with the model's metadata (its own split.* keys dropped), then
// split.no, split.tensors.count, split.count as gguf-split orders them; the others with these three keys
// only. Every part goes to a temporary file first; the parts are renamed into place only once all are
// written, so a failure leaves no part behind.
void write_split(const File &model, const std::vector<SplitPart> &parts);
// Writes a split model (opened with open_model / open_model_parts) as one file at `out`: the first part's
// metadata without the split.* keys, then every tensor in part order. Splitting a file and merging the
// parts gives the original bytes back (for a file in the standard layout). Throws GgufError for a model
// that is not split.
void write_merged(const File &model, const std::string &out);

}  // namespace lctx::gguf
