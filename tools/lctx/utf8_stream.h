// Streams text to a FILE whole UTF-8 characters at a time: the bytes of a character cut between two
// tokens are held back until it is complete.
#pragma once
#include <cstdio>
#include <string>

namespace lctx::cli {

class Utf8Stream {
  public:
    explicit Utf8Stream(std::FILE *f) : f_(f) {}
    void write(const std::string &piece) {
        pending_ += piece;
        size_t cut = pending_.size();
        for (size_t k = 1; k <= std::min<size_t>(3, pending_.size()); ++k) {
            const unsigned char c = static_cast<unsigned char>(pending_[pending_.size() - k]);
            if ((c & 0xC0) == 0x80) continue;
            const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (need > k) cut = pending_.size() - k;
            break;
        }
        std::fwrite(pending_.data(), 1, cut, f_);
        std::fflush(f_);
        pending_.erase(0, cut);
    }
    // Writes what is held back (an incomplete character at the very end).
    void flush() {
        std::fwrite(pending_.data(), 1, pending_.size(), f_);
        std::fflush(f_);
        pending_.clear();
    }

  private:
    std::FILE *f_;
    std::string pending_;
};

}  // namespace lctx::cli
