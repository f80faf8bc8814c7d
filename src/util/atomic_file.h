// A file written whole or not at all: the bytes go to a temporary file beside the destination, which is
// flushed to disk and renamed over it only once complete. Until then the destination keeps its old
// contents; a failure (or a destructor without commit) removes the temporary file.
#pragma once
#include <cstddef>
#include <string>

namespace lctx {

class AtomicFile {
  public:
    // Refuses (lctx::Error) a destination that exists and is not a regular file (a device, a FIFO, a
    // directory), and a temporary file that cannot be created. A symbolic link is followed (its target
    // is replaced, the link stays); a dangling one is refused.
    explicit AtomicFile(std::string path);
    ~AtomicFile();
    AtomicFile(const AtomicFile &) = delete;
    AtomicFile &operator=(const AtomicFile &) = delete;

    void write(const void *p, size_t n);  // throws lctx::Error naming the file on a write error
    void write_zeros(size_t n);
    // Flushes and closes the temporary file (throws on failure); commit() then only renames, so several
    // files can be finished first and renamed together.
    void finish();
    void commit();  // finish() if not done, then the rename
    const std::string &path() const { return path_; }

  private:
    std::string path_, tmp_;
    int fd_ = -1;
    bool committed_ = false;
};

}  // namespace lctx
