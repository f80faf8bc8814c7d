#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "util/error.h"

namespace lctx {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
    // A symbolic link is followed: the file it names gets the new contents and the link stays, as with a
    // plain open(). A link to nothing is refused rather than replaced by a regular file.
    struct stat lst {};
    if (::lstat(path_.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
        std::error_code ec;
        const std::filesystem::path target = std::filesystem::canonical(path_, ec);
        if (ec)
            throw Error(path_ + ": a symbolic link to nothing that can be reached (" + ec.message() + ")");
        path_ = target.string();
    }
    struct stat st {};
    const bool exists = ::stat(path_.c_str(), &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        throw Error(path_ + ": exists and is not a regular file; refusing to write over it");
    std::vector<char> name(path_.begin(), path_.end());
    const char suffix[] = ".tmp.XXXXXX";
    name.insert(name.end(), suffix, suffix + sizeof suffix);  // with the terminating NUL
    fd_ = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd_ < 0) throw Error(path_ + ": cannot create a temporary file beside it: " + std::strerror(errno));
    tmp_ = name.data();
    // mkostemp creates the file 0600; the result gets the mode a plain create would give it (0666 less the
    // umask), or the mode of the file it replaces.
    mode_t mode = 0;
    if (exists) {
        mode = st.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }
    ::fchmod(fd_, mode);
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void *p, size_t n) {
    if (fd_ < 0) throw Error(path_ + ": write after the file was finished");
    const char *c = static_cast<const char *>(p);
    while (n > 0) {
        const ssize_t w = ::write(fd_, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            throw Error(path_ + ": write failed: " + std::strerror(errno));
        }
        c += w;
        n -= static_cast<size_t>(w);
    }
}

void AtomicFile::write_zeros(size_t n) {
    static const char zeros[256] = {};
    while (n > 0) {
        const size_t k = n < sizeof zeros ? n : sizeof zeros;
        write(zeros, k);
        n -= k;
    }
}

void AtomicFile::finish() {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    if (::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(path_ + ": write failed: " + std::strerror(err));
    }
    if (::close(fd) != 0) throw Error(path_ + ": write failed: " + std::strerror(errno));
}

void AtomicFile::commit() {
    finish();
    // Checked again: the destination may have been replaced by something else since the constructor.
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw Error(path_ + ": exists and is not a regular file; refusing to write over it");
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
        throw Error(path_ + ": cannot rename " + tmp_ + " over it: " + std::strerror(errno));
    committed_ = true;
}

}  // namespace lctx
