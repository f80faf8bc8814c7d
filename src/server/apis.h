// The endpoint families beyond the chat endpoint, each in its own file, registered on the server's router:
// completions_api.cpp (/v1/completions, /completion, /completions, /infill), anthropic_api.cpp
// (/v1/messages, /v1/messages/count_tokens), responses_api.cpp (/v1/responses).
#pragma once
#include <httplib.h>

#include "server/generation.h"

namespace lctx::server {

// `host` must outlive the server.
void register_completions_api(httplib::Server &svr, ApiHost &host);
void register_anthropic_api(httplib::Server &svr, ApiHost &host);
void register_responses_api(httplib::Server &svr, ApiHost &host);

}  // namespace lctx::server
