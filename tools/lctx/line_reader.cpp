#include "tools/lctx/line_reader.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#if defined(LCTX_HAVE_READLINE)
#include <readline/history.h>
#include <readline/readline.h>
#elif defined(LCTX_HAVE_LIBEDIT)
#include <editline/readline.h>
#endif

namespace lctx::cli {

const char *LineReader::backend() {
#if defined(LCTX_HAVE_READLINE)
    return "readline";
#elif defined(LCTX_HAVE_LIBEDIT)
    return "libedit";
#else
    return "none";
#endif
}

std::optional<std::string> LineReader::read_line(const std::string &prompt) {
#if defined(LCTX_HAVE_READLINE) || defined(LCTX_HAVE_LIBEDIT)
    if (interactive_) {
        char *l = readline(prompt.c_str());
        if (!l) return std::nullopt;
        std::string s(l);
        std::free(l);
        return s;
    }
#endif
    if (interactive_) {
        std::fputs(prompt.c_str(), stdout);
        std::fflush(stdout);
    }
    std::string s;
    if (!std::getline(std::cin, s)) return std::nullopt;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    return s;
}

std::optional<std::string> LineReader::read(const std::string &prompt, const std::string &more) {
    std::string all;
    std::optional<std::string> line = read_line(prompt);
    while (line && !line->empty() && line->back() == '\\') {
        line->pop_back();
        all += *line + "\n";
        line = read_line(more);
    }
    if (!line && all.empty()) return std::nullopt;
    if (line) all += *line;
#if defined(LCTX_HAVE_READLINE) || defined(LCTX_HAVE_LIBEDIT)
    if (interactive_ && !all.empty()) add_history(all.c_str());
#endif
    return all;
}

}  // namespace lctx::cli
