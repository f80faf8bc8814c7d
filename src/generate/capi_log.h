// llama.h says why a call failed only in its log, as an error line "function: reason". The front ends route
// the log to a sink that prints nothing and keeps the last such line, for their one-line reports; the layer
// reads it the same way around the calls whose reason it reports.
#pragma once
#include <functional>
#include <string>

namespace lctx::generate {

// Routes llama.h's log to the sink from now on (a command's whole run).
void capture_capi_errors();
// ": " and the last error line llama.h logged, or "" when none.
std::string capi_error_suffix();
// The last error line llama.h logged without the function that logged it ("llama_x: REASON" gives REASON),
// or "unknown error" when none.
std::string capi_last_error();

// Runs call with llama.h's log in the sink (for the call alone, unless capture_capi_errors put it there for
// good: then it stays). When call returns false, *why is set to the reason it logged (capi_last_error).
bool capi_call(const std::function<bool()> &call, std::string *why);

}  // namespace lctx::generate
