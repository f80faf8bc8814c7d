// The chat page served at / : one static HTML file (inline CSS and JS, nothing downloaded) that streams
// replies from /v1/chat/completions and shows the model's name and the tokens/s of each reply.
#pragma once

namespace lctx::server {

const char *web_page_html();

}  // namespace lctx::server
