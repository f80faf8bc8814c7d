#include "gguf/gguf_split.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "gguf/gguf_header.h"
#include "util/atomic_file.h"

namespace lctx::gguf {

namespace {

std::string split_suffix(int split_no, int split_count) {
    char tail[64];
    std::snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", split_no + 1, split_count);
    return tail;
}

bool is_split_key(std::string_view key) {
    return key == kKeySplitNo || key == kKeySplitCount || key == kKeySplitTensorsCount;
}

size_t pad_to(size_t n, size_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

// The part (1-based, as its file name counts) and its path, for messages.
std::string part_name(int i, int count, const std::string &path) {
    return "part " + std::to_string(i + 1) + " of " + std::to_string(count) + " (" + path + ")";
}

}  // namespace

std::string split_path(std::string_view prefix, int split_no, int split_count) {
    return std::string(prefix) + split_suffix(split_no, split_count);
}

std::optional<std::string> split_prefix(std::string_view path, int split_no, int split_count) {
    const std::string tail = split_suffix(split_no, split_count);
    if (path.size() <= tail.size() || path.substr(path.size() - tail.size()) != tail) return std::nullopt;
    return std::string(path.substr(0, path.size() - tail.size()));
}

std::optional<SplitInfo> split_info(const File &f) {
    const std::optional<int64_t> count = f.get_int(kKeySplitCount);
    if (!count || *count == 0) return std::nullopt;
    const std::string where = f.origin() + ": ";
    if (*count < 0 || *count > 65535)
        throw GgufError(where + "split.count is " + std::to_string(*count) + ", expected 1..65535");
    const std::optional<int64_t> no = f.get_int(kKeySplitNo);
    if (!no) throw GgufError(where + "has split.count but no split.no");
    if (*no < 0 || *no >= *count)
        throw GgufError(where + "split.no is " + std::to_string(*no) + ", outside 0.." +
                        std::to_string(*count - 1) + " (split.count is " + std::to_string(*count) + ")");
    const std::optional<int64_t> n_tensors = f.get_int(kKeySplitTensorsCount);
    if (!n_tensors) throw GgufError(where + "has split.count but no split.tensors.count");
    if (*n_tensors < 0) throw GgufError(where + "split.tensors.count is negative");
    return SplitInfo{static_cast<int>(*no), static_cast<int>(*count), *n_tensors};
}

std::unique_ptr<File> File::join(std::unique_ptr<File> first, std::vector<std::unique_ptr<File>> rest) {
    // Names are checked over all parts before anything moves (the views point into each part's tensors_).
    std::unordered_map<std::string_view, size_t> owner;  // tensor name -> part
    const auto claim = [&](const File &f, size_t part) {
        for (const TensorInfo &t : f.tensors_) {
            const auto [it, fresh] = owner.emplace(t.name, part);
            if (!fresh) {
                const File &a = it->second == 0 ? *first : *rest[it->second - 1];
                throw GgufError("tensor '" + t.name + "' is in two parts of the split model: " + a.origin_ +
                                " and " + f.origin_);
            }
        }
    };
    claim(*first, 0);
    for (size_t p = 0; p < rest.size(); ++p) claim(*rest[p], p + 1);
    for (size_t p = 0; p < rest.size(); ++p)
        for (const TensorInfo &t : rest[p]->tensors_) {
            TensorInfo &c = first->tensors_.emplace_back(t);
            c.part = static_cast<uint32_t>(p + 1);
        }
    first->tensor_index_.clear();
    first->tensor_index_.reserve(first->tensors_.size());
    for (size_t i = 0; i < first->tensors_.size(); ++i)
        first->tensor_index_.emplace(first->tensors_[i].name, i);
    for (std::unique_ptr<File> &p : rest) first->parts_.push_back(std::move(p));
    return first;
}

namespace {

// Opens the parts after the first (path_of(i) for part i), checks each one's split.* keys against the
// first's, joins them and checks the total tensor count.
template <typename PathOf>
std::unique_ptr<File> open_rest(std::unique_ptr<File> first, const SplitInfo &info, PathOf path_of) {
    std::vector<std::unique_ptr<File>> rest;
    for (int i = 1; i < info.count; ++i) {
        const std::string path = path_of(i);
        std::unique_ptr<File> f;
        try {
            f = File::open(path);
        } catch (const GgufError &e) {
            throw GgufError("cannot open " + part_name(i, info.count, path) + " of the split model " +
                            first->origin() + ": " + e.what());
        }
        const std::optional<SplitInfo> p = split_info(*f);
        const std::string where = part_name(i, info.count, path) + " of " + first->origin() + ": ";
        if (!p) throw GgufError(where + "has no split.count: not a part of a split model");
        if (p->count != info.count)
            throw GgufError(where + "split.count is " + std::to_string(p->count) +
                            ", but the first part's is " + std::to_string(info.count));
        if (p->no != i)
            throw GgufError(where + "split.no is " + std::to_string(p->no) + ", expected " +
                            std::to_string(i) + " (a part of another number, or of another model)");
        if (p->tensors_count != info.tensors_count)
            throw GgufError(where + "split.tensors.count is " + std::to_string(p->tensors_count) +
                            ", but the first part's is " + std::to_string(info.tensors_count));
        rest.push_back(std::move(f));
    }
    std::unique_ptr<File> joined = File::join(std::move(first), std::move(rest));
    if (static_cast<int64_t>(joined->tensors().size()) != info.tensors_count)
        throw GgufError(joined->origin() + ": split.tensors.count is " + std::to_string(info.tensors_count) +
                        ", but the " + std::to_string(info.count) + " parts hold " +
                        std::to_string(joined->tensors().size()) + " tensors");
    return joined;
}

void check_first(const File &f, const SplitInfo &info) {
    if (info.no != 0)
        throw GgufError(
            f.origin() + ": is part " + std::to_string(info.no + 1) + " of " + std::to_string(info.count) +
            " of a split model (split.no = " + std::to_string(info.no) + "); load its first part");
}

}  // namespace

std::unique_ptr<File> open_model(const std::string &path) {
    std::unique_ptr<File> first = File::open(path);
    const std::optional<SplitInfo> info = split_info(*first);
    if (!info) return first;
    check_first(*first, *info);
    std::optional<std::string> prefix;
    if (info->count > 1) {
        prefix = split_prefix(path, 0, info->count);
        if (!prefix)
            throw GgufError(path + ": is the first of " + std::to_string(info->count) +
                            " parts of a split model, but its name does not end in " +
                            split_suffix(0, info->count) +
                            ", so its other parts cannot be found (name them by that pattern, or pass every "
                            "path to llama_model_load_from_splits)");
    }
    return open_rest(std::move(first), *info, [&](int i) { return split_path(*prefix, i, info->count); });
}

std::unique_ptr<File> open_model_parts(const std::vector<std::string> &paths) {
    if (paths.empty()) throw GgufError("no model files given");
    std::unique_ptr<File> first = File::open(paths[0]);
    const std::optional<SplitInfo> info = split_info(*first);
    if (!info) {
        if (paths.size() == 1) return first;
        throw GgufError(paths[0] + ": not a split model (no split.count), but " +
                        std::to_string(paths.size()) + " files were given");
    }
    check_first(*first, *info);
    if (static_cast<size_t>(info->count) != paths.size())
        throw GgufError(paths[0] + ": split.count is " + std::to_string(info->count) + ", but " +
                        std::to_string(paths.size()) + (paths.size() == 1 ? " file was" : " files were") +
                        " given");
    return open_rest(std::move(first), *info, [&](int i) { return paths[static_cast<size_t>(i)]; });
}

// ---- writing ----

namespace {

// The alignment a reader applies to a file with these keys.
size_t alignment_of(const std::vector<KeyValue> &kv) {
    for (const KeyValue &e : kv)
        if (e.key == "general.alignment")
            if (const std::optional<int64_t> a = e.value.as_int(); a && *a > 0 && (*a & (*a - 1)) == 0)
                return static_cast<size_t>(*a);
    return kDefaultAlignment;
}

// The header (metadata, tensor infos, padding up to the data section) of a file holding `tensors` of
// `model` with the keys `kv`.
std::vector<uint8_t> part_header(const std::vector<KeyValue> &kv, const File &model,
                                 const std::vector<size_t> &tensors, size_t alignment) {
    std::vector<TensorEntry> dir;
    for (size_t i : tensors) {
        const TensorInfo &t = model.tensors()[i];
        dir.push_back(TensorEntry{t.name, t.type, t.ne, t.nbytes});
    }
    return gguf::header_bytes(kv, dir, alignment);
}

uint64_t data_bytes(const File &model, const std::vector<size_t> &tensors, size_t alignment) {
    uint64_t n = 0;
    for (size_t i : tensors) n += pad_to(model.tensors()[i].nbytes, alignment);
    return n;
}

void write_gguf(AtomicFile &out, const std::vector<uint8_t> &head, const File &model,
                const std::vector<size_t> &tensors, size_t alignment) {
    out.write(head.data(), head.size());
    for (size_t i : tensors) {
        const TensorInfo &t = model.tensors()[i];
        out.write(model.tensor_data(t), t.nbytes);
        out.write_zeros(pad_to(t.nbytes, alignment) - t.nbytes);
    }
}

std::vector<KeyValue> model_keys_without_split(const File &model) {
    std::vector<KeyValue> kv;
    for (const KeyValue &e : model.metadata())
        if (!is_split_key(e.key)) kv.push_back(e);
    return kv;
}

// The keys of part `no`: the model's metadata for the first, then the split keys in gguf-split's order
// (it sets split.count last, which moves the key to the end).
std::vector<KeyValue> part_keys(const File &model, int no, int count, size_t n_tensors) {
    std::vector<KeyValue> kv;
    if (no == 0) kv = model_keys_without_split(model);
    kv.push_back({kKeySplitNo, Value::from_uint(ValueType::UINT16, static_cast<uint64_t>(no))});
    kv.push_back({kKeySplitTensorsCount, Value::from_int(ValueType::INT32, static_cast<int64_t>(n_tensors))});
    kv.push_back({kKeySplitCount, Value::from_uint(ValueType::UINT16, static_cast<uint64_t>(count))});
    return kv;
}

}  // namespace

std::vector<SplitPart> plan_split(const File &model, const std::string &prefix, const SplitLimits &limits) {
    const std::vector<TensorInfo> &ts = model.tensors();
    if (ts.empty()) throw GgufError(model.origin() + ": has no tensors to split");
    if (limits.max_bytes == 0 && limits.max_tensors < 1)
        throw GgufError("the number of tensors per part must be at least 1, not " +
                        std::to_string(limits.max_tensors));
    // Sizes are counted padded to the default alignment, as gguf-split counts them.
    std::vector<SplitPart> parts(1);
    uint64_t bytes = 0;
    for (size_t i = 0; i < ts.size(); ++i) {
        const uint64_t n = pad_to(ts[i].nbytes, kDefaultAlignment);
        const bool full = limits.max_bytes
                              ? !parts.back().tensors.empty() && bytes + n > limits.max_bytes
                              : parts.back().tensors.size() >= static_cast<size_t>(limits.max_tensors);
        if (full) {
            parts.emplace_back();
            bytes = 0;
        }
        parts.back().tensors.push_back(i);
        bytes += n;
    }
    if (parts.size() > 65535)
        throw GgufError("splitting " + model.origin() + " that way needs " + std::to_string(parts.size()) +
                        " parts; at most 65535 are possible");
    const int count = static_cast<int>(parts.size());
    for (int no = 0; no < count; ++no) {
        SplitPart &p = parts[static_cast<size_t>(no)];
        p.path = split_path(prefix, no, count);
        const std::vector<KeyValue> kv = part_keys(model, no, count, ts.size());
        const size_t align = alignment_of(kv);
        p.file_bytes = part_header(kv, model, p.tensors, align).size() + data_bytes(model, p.tensors, align);
    }
    return parts;
}

void write_split(const File &model, const std::vector<SplitPart> &parts) {
    const int count = static_cast<int>(parts.size());
    std::vector<std::unique_ptr<AtomicFile>> outs;
    try {
        for (int no = 0; no < count; ++no) {
            const SplitPart &p = parts[static_cast<size_t>(no)];
            const std::vector<KeyValue> kv = part_keys(model, no, count, model.tensors().size());
            const size_t align = alignment_of(kv);
            outs.push_back(std::make_unique<AtomicFile>(p.path));
            write_gguf(*outs.back(), part_header(kv, model, p.tensors, align), model, p.tensors, align);
            outs.back()->finish();
        }
        for (std::unique_ptr<AtomicFile> &o : outs) o->commit();
    } catch (const Error &e) {
        throw GgufError(e.what());
    }
}

void write_merged(const File &model, const std::string &out) {
    if (!split_info(model))
        throw GgufError(model.origin() + ": not a split model (no split.count); nothing to merge");
    const std::vector<KeyValue> kv = model_keys_without_split(model);
    const size_t align = alignment_of(kv);
    std::vector<size_t> all(model.tensors().size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    try {
        AtomicFile f(out);
        write_gguf(f, part_header(kv, model, all, align), model, all, align);
        f.commit();
    } catch (const GgufError &) {
        throw;
    } catch (const Error &e) {
        throw GgufError(e.what());
    }
}

}  // namespace lctx::gguf
