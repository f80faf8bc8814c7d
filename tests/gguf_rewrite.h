// A GGUF fixture rewritten into a temporary file through gguf::Writer: keys and tensors left out, a tensor
// given another shape (zero bytes), keys set or tensors added: for tests of how a model load refuses a file
// or reads what a file says.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace lctx::testing {

struct Rewrite {
    std::vector<std::string> drop;  // keys and tensors left out
    std::string reshape;            // a tensor that gets the shape reshape_ne (and zero bytes)
    std::vector<int64_t> reshape_ne;
    std::function<void(gguf::Writer &)> add;  // keys set or tensors added after the copy
};

inline Rewrite dropping(std::vector<std::string> names) {
    Rewrite r;
    r.drop = std::move(names);
    return r;
}

// `src` rewritten into a file in the temporary directory whose name holds `tag`; returns its path.
inline std::string rewrite_gguf(const std::string &src, const Rewrite &r, const std::string &tag) {
    auto f = gguf::File::open(src);
    auto dropped = [&](const std::string &n) {
        return std::find(r.drop.begin(), r.drop.end(), n) != r.drop.end();
    };
    gguf::Writer w;
    for (const gguf::KeyValue &kv : f->metadata())
        if (!dropped(kv.key)) w.set(kv.key, kv.value);
    std::vector<uint8_t> zeros;
    for (const gguf::TensorInfo &t : f->tensors()) {
        if (dropped(t.name)) continue;
        if (t.name == r.reshape) {
            int64_t n = 1;
            for (int64_t d : r.reshape_ne) n *= d;
            zeros.assign(row_size(t.type, n), 0);
            w.add_tensor(t.name, t.type, r.reshape_ne, zeros.data(), zeros.size());  // copied here
        } else {
            w.add_tensor(t.name, t.type, t.ne, f->tensor_data(t), t.nbytes);
        }
    }
    if (r.add) r.add(w);
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("lctx-rewrite-" + std::to_string(::getpid()) + "-" + tag + ".gguf"))
                                 .string();
    w.write_file(path);
    return path;
}

}  // namespace lctx::testing
