#include "generate/capi_log.h"

#include "llama.h"

namespace lctx::generate {

namespace {

std::string g_last_error;
bool g_captured = false;  // capture_capi_errors was called: the sink stays

void log_sink(enum ggml_log_level level, const char *text, void *) {
    if (level != GGML_LOG_LEVEL_ERROR || !text) return;
    g_last_error = text;
    while (!g_last_error.empty() && (g_last_error.back() == '\n' || g_last_error.back() == ' '))
        g_last_error.pop_back();
}

}  // namespace

void capture_capi_errors() {
    g_captured = true;
    llama_log_set(log_sink, nullptr);
}

std::string capi_error_suffix() {
    return g_last_error.empty() ? "" : ": " + g_last_error;
}

std::string capi_last_error() {
    std::string e = g_last_error;
    if (e.rfind("llama_", 0) == 0 || e.rfind("lctx_", 0) == 0)
        if (const size_t at = e.find(": "); at != std::string::npos) e.erase(0, at + 2);
    return e.empty() ? "unknown error" : e;
}

bool capi_call(const std::function<bool()> &call, std::string *why) {
    g_last_error.clear();
    if (!g_captured) llama_log_set(log_sink, nullptr);
    const bool ok = call();
    if (!g_captured) llama_log_set(nullptr, nullptr);  // llama.h's default log again
    if (!ok) *why = capi_last_error();
    return ok;
}

}  // namespace lctx::generate
