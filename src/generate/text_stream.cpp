#include "generate/text_stream.h"

#include <algorithm>

namespace lctx::generate {

size_t utf8_complete_prefix(const std::string &s) {
    // Look back at most 3 bytes for the lead byte of an unfinished sequence.
    const size_t n = s.size();
    for (size_t back = 1; back <= std::min<size_t>(4, n); ++back) {
        const unsigned char c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
        size_t need = 1;
        if ((c & 0xE0) == 0xC0)
            need = 2;
        else if ((c & 0xF0) == 0xE0)
            need = 3;
        else if ((c & 0xF8) == 0xF0)
            need = 4;
        return back < need ? n - back : n;
    }
    return n;
}

std::string TextStream::push(const std::string &piece) {
    if (stopped_) return "";
    const size_t old = text_.size();
    text_ += piece;
    // A stop string can only newly appear ending inside the new piece.
    size_t best = std::string::npos;
    for (const std::string &s : stops_) {
        const size_t from = old >= s.size() ? old - s.size() + 1 : 0;
        const size_t at = text_.find(s, from);
        if (at != std::string::npos && at < best) {
            best = at;
            stop_word_ = s;
        }
    }
    if (best != std::string::npos) {
        text_.resize(best);
        stopped_ = true;
        std::string out = sent_ < text_.size() ? text_.substr(sent_) : "";
        sent_ = text_.size();
        return out;
    }
    // Hold back the longest tail that is a prefix of some stop string.
    size_t hold = 0;
    for (const std::string &s : stops_)
        for (size_t k = std::min(s.size() - 1, text_.size()); k > hold; --k)
            if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
                hold = k;
                break;
            }
    size_t end = std::min(utf8_complete_prefix(text_), text_.size() - hold);
    if (end <= sent_) return "";
    std::string out = text_.substr(sent_, end - sent_);
    sent_ = end;
    return out;
}

std::string TextStream::flush() {
    std::string out = sent_ < text_.size() ? text_.substr(sent_) : "";
    sent_ = text_.size();
    return out;
}

}  // namespace lctx::generate
