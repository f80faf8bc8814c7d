// GGUF output written whole or not at all (see output_file.h).
#include "quantize/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace lctx::quantize {

namespace {

template <typename T>
void put(std::vector<uint8_t> &out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
}

uint64_t padded(uint64_t n, size_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

std::vector<uint8_t> gguf_header(const std::vector<gguf::KeyValue> &kv,
                                 const std::vector<TensorSlot> &tensors, size_t alignment) {
    // The metadata through the library's writer (without tensors its bytes end after the key-values), then
    // the tensor count patched in and the tensor directory appended.
    gguf::Writer w;
    for (const gguf::KeyValue &e : kv) w.set(e.key, e.value);
    std::vector<uint8_t> head = w.to_bytes();
    const uint64_t n_tensors = tensors.size();
    std::memcpy(head.data() + 8, &n_tensors, sizeof n_tensors);  // after the magic and the version
    uint64_t offset = 0;
    for (const TensorSlot &t : tensors) {
        put<uint64_t>(head, t.name.size());
        head.insert(head.end(), t.name.begin(), t.name.end());
        put<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
        for (int64_t d : t.ne) put<uint64_t>(head, static_cast<uint64_t>(d));
        put<int32_t>(head, static_cast<int32_t>(t.type));
        put<uint64_t>(head, offset);
        offset += padded(t.nbytes, alignment);
    }
    head.resize(padded(head.size(), alignment), 0);
    return head;
}

OutputFile::OutputFile(const std::string &path) : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw Error(path + ": not a regular file; refusing to write over it");
    const size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    std::string tmpl = (slash == std::string::npos ? std::string() : dir) + "." + base + ".tmp-XXXXXX";
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0)
        throw Error(path + ": cannot create a temporary file in " + dir + ": " + std::strerror(errno));
    tmp_ = tmpl;
    ::fchmod(fd, 0644);
    f_ = ::fdopen(fd, "wb");
    if (!f_) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp_.c_str());
        throw Error(tmp_ + ": cannot open: " + std::strerror(err));
    }
}

OutputFile::~OutputFile() {
    if (committed_) return;
    if (f_) std::fclose(f_);
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void OutputFile::fail(const std::string &what) {
    const int err = errno;
    if (f_) std::fclose(f_);
    f_ = nullptr;
    ::unlink(tmp_.c_str());
    tmp_.clear();
    throw Error(path_ + ": " + what + ": " + std::strerror(err));
}

void OutputFile::write(const void *data, size_t n) {
    if (!f_) throw Error(path_ + ": write after the file was closed");
    if (n && std::fwrite(data, 1, n, f_) != n) fail("write failed");
    written_ += n;
}

void OutputFile::write_zeros(size_t n) {
    static const uint8_t kZeros[256] = {};
    while (n) {
        const size_t k = n < sizeof kZeros ? n : sizeof kZeros;
        write(kZeros, k);
        n -= k;
    }
}

void OutputFile::commit() {
    if (!f_) throw Error(path_ + ": commit after the file was closed");
    if (std::fflush(f_) != 0) fail("write failed");
    if (::fsync(::fileno(f_)) != 0) fail("sync failed");
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail("write failed");
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
        fail("cannot rename the temporary file " + tmp_ + " to it");
    committed_ = true;
}

}  // namespace lctx::quantize
