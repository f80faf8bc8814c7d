#include "util/log.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace lctx {

namespace {
// Default: warnings and errors to stderr; info/debug only when LCTX_LOG_LEVEL asks for them.
void default_sink(LogLevel level, const char *text, void *) {
    static const int min_level = [] {
        const char *env = std::getenv("LCTX_LOG_LEVEL");
        return env ? std::atoi(env) : static_cast<int>(LogLevel::Warn);
    }();
    if (static_cast<int>(level) >= min_level) std::fputs(text, stderr);
}
LogSink g_sink = default_sink;
void *g_user_data = nullptr;
}  // namespace

void log_set_sink(LogSink sink, void *user_data) {
    g_sink = sink ? sink : default_sink;
    g_user_data = sink ? user_data : nullptr;
}

void log_message(LogLevel level, const char *fmt, ...) {
    char buf[1024];
    va_list args;
    va_start(args, fmt);
    int n = std::vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    std::string text;
    if (n >= static_cast<int>(sizeof buf)) {
        text.resize(n + 1);
        va_start(args, fmt);
        std::vsnprintf(text.data(), text.size(), fmt, args);
        va_end(args);
        text.resize(n);
    } else {
        text = buf;
    }
    if (text.empty() || text.back() != '\n') text.push_back('\n');
    g_sink(level, text.c_str(), g_user_data);
}

}  // namespace lctx
