// Logging: one sink for the whole library, replaceable through the C API (llama_log_set).
#pragma once
#include <cstdarg>

namespace lctx {

enum class LogLevel { Debug = 1, Info = 2, Warn = 3, Error = 4 };

using LogSink = void (*)(LogLevel level, const char *text, void *user_data);

void log_set_sink(LogSink sink, void *user_data);
void log_message(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LCTX_LOG_DEBUG(...) ::lctx::log_message(::lctx::LogLevel::Debug, __VA_ARGS__)
#define LCTX_LOG_INFO(...) ::lctx::log_message(::lctx::LogLevel::Info, __VA_ARGS__)
#define LCTX_LOG_WARN(...) ::lctx::log_message(::lctx::LogLevel::Warn, __VA_ARGS__)
#define LCTX_LOG_ERROR(...) ::lctx::log_message(::lctx::LogLevel::Error, __VA_ARGS__)

}  // namespace lctx
