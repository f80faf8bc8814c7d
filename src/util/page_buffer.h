// A large, huge-page-aligned, zero-initialized byte buffer for memory the kernels stream through (the
// interleaved weights, the KV cache). On Linux it asks for transparent huge pages (2 MiB): a decode
// reads every weight once per token, and on 4 KiB pages the page walks of that stream cost a quarter
// of one core's bandwidth. Pages are committed on first write, so the resident size grows with what is
// filled in (a repack tensor by tensor, the cache cell by cell), not with what is reserved.
#pragma once
#include <cstddef>
#include <cstdint>

namespace lctx {

class PageBuffer {
  public:
    PageBuffer() = default;
    explicit PageBuffer(size_t bytes);  // throws lctx::Error when the address space cannot be reserved
    ~PageBuffer();
    PageBuffer(PageBuffer &&o) noexcept;
    PageBuffer &operator=(PageBuffer &&o) noexcept;
    PageBuffer(const PageBuffer &) = delete;
    PageBuffer &operator=(const PageBuffer &) = delete;

    uint8_t *data() const { return data_; }
    size_t size() const { return size_; }

    static constexpr size_t kAlignment = size_t{2} << 20;  // one huge page

  private:
    void release() noexcept;
    uint8_t *data_ = nullptr;
    size_t size_ = 0;
    void *base_ = nullptr;  // what was reserved (data_ is aligned inside it)
    size_t base_size_ = 0;
};

}  // namespace lctx
