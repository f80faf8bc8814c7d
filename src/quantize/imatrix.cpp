// Importance-matrix files (see imatrix.h).
#include "quantize/imatrix.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gguf/gguf.h"
#include "util/error.h"

namespace lctx::quantize {

namespace {

class Reader {
  public:
    Reader(const std::string &path, const std::vector<char> &bytes) : path_(path), b_(bytes) {}
    bool at_end() const { return at_ == b_.size(); }
    int32_t i32(const char *what) {
        int32_t v;
        take(&v, sizeof v, what);
        return v;
    }
    void take(void *dst, size_t n, const char *what) {
        if (b_.size() - at_ < n)
            throw Error(path_ + ": importance matrix ends inside " + what + " (offset " +
                        std::to_string(at_) + ")");
        std::memcpy(dst, b_.data() + at_, n);
        at_ += n;
    }

  private:
    const std::string &path_;
    const std::vector<char> &b_;
    size_t at_ = 0;
};

ImportanceMatrix load_legacy(const std::string &path, const std::vector<char> &bytes) {
    ImportanceMatrix m;
    Reader r(path, bytes);
    const int32_t n_entries = r.i32("the entry count");
    if (n_entries < 1)
        throw Error(path + ": importance matrix has " + std::to_string(n_entries) + " entries");
    for (int32_t i = 0; i < n_entries; ++i) {
        const int32_t len = r.i32("an entry's name length");
        if (len < 1 || len > 4096)
            throw Error(path + ": importance matrix entry " + std::to_string(i) + " has a name of " +
                        std::to_string(len) + " bytes");
        std::string name(static_cast<size_t>(len), '\0');
        r.take(name.data(), name.size(), "an entry's name");
        const int32_t ncall = r.i32("an entry's call count");
        const int32_t nval = r.i32("an entry's value count");
        if (nval < 1 || static_cast<size_t>(nval) > bytes.size() / sizeof(float))
            throw Error(path + ": importance matrix entry '" + name + "' has " + std::to_string(nval) +
                        " values");
        std::vector<float> v(static_cast<size_t>(nval));
        r.take(v.data(), v.size() * sizeof(float), "an entry's values");
        for (float &x : v) {
            if (!std::isfinite(x) || x < 0)
                throw Error(path + ": importance matrix entry '" + name +
                            "' holds a negative or non-finite value");
            if (ncall > 0) x /= static_cast<float>(ncall);
        }
        if (!m.values.emplace(name, std::move(v)).second)
            throw Error(path + ": importance matrix names '" + name + "' twice");
    }
    if (!r.at_end()) {  // newer files end with the chunk count and the dataset's name
        m.chunks = r.i32("the chunk count");
        const int32_t len = r.i32("the dataset name's length");
        if (len < 0 || len > 65536)
            throw Error(path + ": importance matrix dataset name of " + std::to_string(len) + " bytes");
        m.dataset.resize(static_cast<size_t>(len));
        r.take(m.dataset.data(), m.dataset.size(), "the dataset name");
    }
    return m;
}

ImportanceMatrix load_gguf(const std::string &path) {
    std::unique_ptr<gguf::File> f = gguf::File::open(path);
    ImportanceMatrix m;
    if (auto c = f->get_int("imatrix.chunk_count")) m.chunks = static_cast<int>(*c);
    if (auto d = f->get_string_array("imatrix.datasets"); d && !d->empty()) m.dataset = (*d)[0];
    const std::string kSums = ".in_sum2";
    for (const gguf::TensorInfo &t : f->tensors()) {
        if (t.name.size() <= kSums.size() ||
            t.name.compare(t.name.size() - kSums.size(), kSums.size(), kSums) != 0)
            continue;
        const std::string name = t.name.substr(0, t.name.size() - kSums.size());
        const gguf::TensorInfo *counts = f->find_tensor(name + ".counts");
        if (!counts) throw Error(path + ": importance matrix has " + t.name + " without " + name + ".counts");
        if (t.type != GgmlType::F32 || counts->type != GgmlType::F32)
            throw Error(path + ": importance matrix tensors of '" + name + "' are not F32");
        const int64_t n = t.ne[0];
        const int64_t n_mat = t.n_elements() / n;
        if (counts->n_elements() != n_mat)
            throw Error(path + ": importance matrix '" + name + "' has " +
                        std::to_string(counts->n_elements()) + " counts for " + std::to_string(n_mat) +
                        " matrices");
        std::vector<float> sums(static_cast<size_t>(t.n_elements())), cnt(static_cast<size_t>(n_mat));
        std::memcpy(sums.data(), f->tensor_data(t), sums.size() * sizeof(float));
        std::memcpy(cnt.data(), f->tensor_data(*counts), cnt.size() * sizeof(float));
        for (int64_t e = 0; e < n_mat; ++e)
            for (int64_t j = 0; j < n; ++j) {
                float &x = sums[static_cast<size_t>(e * n + j)];
                if (!std::isfinite(x) || x < 0)
                    throw Error(path + ": importance matrix '" + name +
                                "' holds a negative or non-finite value");
                if (cnt[static_cast<size_t>(e)] > 0) x /= cnt[static_cast<size_t>(e)];
            }
        m.values.emplace(name, std::move(sums));
    }
    if (m.values.empty()) throw Error(path + ": GGUF file holds no importance matrix (*.in_sum2 tensors)");
    return m;
}

}  // namespace

ImportanceMatrix load_imatrix(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open the importance matrix: " + std::strerror(errno));
    char magic[4] = {};
    in.read(magic, 4);
    if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) return load_gguf(path);
    in.seekg(0);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return load_legacy(path, bytes);
}

}  // namespace lctx::quantize
