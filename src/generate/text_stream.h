// Generated text on its way to a reader (a server client, the CLI): stop strings end it (the stop text itself
// is not sent), and nothing is sent that could still turn out to be the start of a stop string or is an
// incomplete UTF-8 character, so a streamed reply never shows text the final one would not hold.
#pragma once
#include <string>
#include <vector>

namespace lctx::generate {

class TextStream {
  public:
    explicit TextStream(std::vector<std::string> stops) : stops_(std::move(stops)) {}

    // Adds a token's text; returns the text now safe to send. After a stop string matched, stopped()
    // is true and the text ends before it.
    std::string push(const std::string &piece);
    // The rest at the end of generation (held-back bytes that did not become a stop string).
    std::string flush();

    bool stopped() const { return stopped_; }
    const std::string &stop_word() const { return stop_word_; }  // the stop string that ended the text
    const std::string &text() const { return text_; }            // everything accepted so far, up to a stop

  private:
    std::vector<std::string> stops_;
    std::string text_;
    size_t sent_ = 0;
    bool stopped_ = false;
    std::string stop_word_;
};

// The length of the longest prefix of `s` that ends on a UTF-8 character boundary (a trailing
// incomplete sequence is left out).
size_t utf8_complete_prefix(const std::string &s);

}  // namespace lctx::generate
