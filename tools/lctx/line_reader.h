// Reads the user's lines for `lctx chat`: on a terminal with line editing and history (readline or
// libedit, when the build found one) and a prompt marker; otherwise plain lines from standard input.
// A line ending in a backslash continues on the next one.
#pragma once
#include <optional>
#include <string>

namespace lctx::cli {

class LineReader {
  public:
    // interactive: standard input is a terminal (edit, history, prompt markers).
    explicit LineReader(bool interactive) : interactive_(interactive) {}
    // The next input (continued lines joined by '\n'), or nullopt at end of input.
    std::optional<std::string> read(const std::string &prompt = "> ", const std::string &more = "... ");
    bool interactive() const { return interactive_; }
    // "readline", "libedit" or "none".
    static const char *backend();

  private:
    std::optional<std::string> read_line(const std::string &prompt);
    bool interactive_;
};

}  // namespace lctx::cli
