#include "util/page_buffer.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "util/error.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace lctx {

PageBuffer::PageBuffer(size_t bytes) {
    if (bytes == 0) return;
#if defined(__linux__)
    // Reserve one alignment unit more and start at the first aligned address inside: the kernel backs
    // an aligned 2 MiB range with a huge page when MADV_HUGEPAGE allows it.
    base_size_ = bytes + kAlignment;
    void *p = ::mmap(nullptr, base_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw Error("cannot reserve " + std::to_string(bytes >> 20) + " MiB of memory");
    base_ = p;
    const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kAlignment - 1) / kAlignment * kAlignment;
    data_ = reinterpret_cast<uint8_t *>(a);
#if defined(MADV_HUGEPAGE)
    ::madvise(data_, bytes, MADV_HUGEPAGE);  // advice only: without THP the buffer still works
#endif
#else
    base_size_ = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    base_ = std::aligned_alloc(kAlignment, base_size_);
    if (!base_) throw Error("cannot reserve " + std::to_string(bytes >> 20) + " MiB of memory");
    data_ = static_cast<uint8_t *>(base_);
    std::memset(data_, 0, base_size_);  // an anonymous mapping is zero-filled; this memory is not
#endif
    size_ = bytes;
}

PageBuffer::~PageBuffer() {
    release();
}

PageBuffer::PageBuffer(PageBuffer &&o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      base_(std::exchange(o.base_, nullptr)),
      base_size_(std::exchange(o.base_size_, 0)) {}

PageBuffer &PageBuffer::operator=(PageBuffer &&o) noexcept {
    if (this != &o) {
        release();
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        base_ = std::exchange(o.base_, nullptr);
        base_size_ = std::exchange(o.base_size_, 0);
    }
    return *this;
}

void PageBuffer::release() noexcept {
    if (!base_) return;
#if defined(__linux__)
    ::munmap(base_, base_size_);
#else
    std::free(base_);
#endif
    base_ = nullptr;
    data_ = nullptr;
    size_ = base_size_ = 0;
}

}  // namespace lctx
