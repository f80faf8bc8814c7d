#include "server/openai_json.h"

#include <algorithm>

namespace lctx::server {

using json = nlohmann::json;

json error_json(int status, const std::string &message, const std::string &type, const std::string &param) {
    json e = {{"message", message}, {"type", type}, {"code", status}};
    e["param"] = param.empty() ? json(nullptr) : json(param);
    return {{"error", e}};
}

std::string dump(const json &j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {
json bytes_of(const std::string &s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back(static_cast<int>(c));
    return b;
}

// Chat: {"content":[{token, logprob, bytes, top_logprobs:[...]}, ...]}.
json chat_logprob_entry(const Event &e) {
    json top = json::array();
    for (const TopLogprob &t : e.top)
        top.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", bytes_of(t.text)}});
    return {{"token", e.token_text},
            {"logprob", e.logprob},
            {"bytes", bytes_of(e.token_text)},
            {"top_logprobs", top}};
}

// Completions: {"tokens":[...],"token_logprobs":[...],"top_logprobs":[{text: lp}],"text_offset":[...]}.
json completion_logprobs(const std::vector<const Event *> &toks, size_t offset0) {
    json tokens = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
    size_t off = offset0;
    for (const Event *e : toks) {
        tokens.push_back(e->token_text);
        lps.push_back(e->logprob);
        json t = json::object();
        for (const TopLogprob &x : e->top) t[x.text] = x.logprob;
        tops.push_back(t);
        offs.push_back(off);
        off += e->token_text.size();
    }
    return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}
}  // namespace

json usage_json(const std::vector<ChoiceResult> &choices) {
    int64_t completion = 0, prompt = 0, cached = 0;
    // Each prompt is counted once, as OpenAI does for n > 1 (its first choice's counts).
    std::vector<bool> seen;
    for (const ChoiceResult &c : choices) {
        completion += c.completion_tokens;
        const size_t p = static_cast<size_t>(std::max(c.prompt_index, 0));
        if (p >= seen.size()) seen.resize(p + 1, false);
        if (seen[p]) continue;
        seen[p] = true;
        prompt += c.prompt_tokens;
        cached += c.cached_tokens;
    }
    return {{"prompt_tokens", prompt},
            {"completion_tokens", completion},
            {"total_tokens", prompt + completion},
            {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

json timings_json(const ChoiceResult &c) {
    const int32_t prompt_n = c.prompt_tokens - c.cached_tokens, predicted_n = c.completion_tokens;
    auto per_token = [](double ms, int32_t n) { return n > 0 ? ms / n : 0.0; };
    auto per_second = [](double ms, int32_t n) { return ms > 0.0 ? 1000.0 * n / ms : 0.0; };
    json t = {{"prompt_n", prompt_n},
              {"prompt_ms", c.prompt_ms},
              {"prompt_per_token_ms", per_token(c.prompt_ms, prompt_n)},
              {"prompt_per_second", per_second(c.prompt_ms, prompt_n)},
              {"predicted_n", predicted_n},
              {"predicted_ms", c.predicted_ms},
              {"predicted_per_token_ms", per_token(c.predicted_ms, predicted_n)},
              {"predicted_per_second", per_second(c.predicted_ms, predicted_n)}};
    if (c.drafted) {  // as llama-server with a draft model: the draft tokens verified and accepted
        t["draft_n"] = c.draft_n;
        t["draft_n_accepted"] = c.draft_accepted;
    }
    return t;
}

json response_json(const ResponseMeta &m, const std::vector<ChoiceResult> &choices) {
    json arr = json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
        const ChoiceResult &c = choices[i];
        json lp = nullptr;
        if (m.logprobs) {
            if (m.endpoint == Endpoint::Chat) {
                json content = json::array();
                for (const Event &e : c.tokens) content.push_back(chat_logprob_entry(e));
                lp = {{"content", content}};
            } else {
                std::vector<const Event *> toks;
                for (const Event &e : c.tokens) toks.push_back(&e);
                lp = completion_logprobs(toks, 0);
            }
        }
        json ch = {{"index", i}, {"logprobs", lp}, {"finish_reason", c.finish_reason}};
        if (m.endpoint == Endpoint::Chat)
            ch["message"] = {{"role", "assistant"}, {"content", c.text}};
        else
            ch["text"] = c.text;
        arr.push_back(ch);
    }
    return {{"id", m.id},
            {"object", m.endpoint == Endpoint::Chat ? "chat.completion" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"system_fingerprint", "lctx"},
            {"choices", arr},
            {"usage", usage_json(choices)},
            {"timings", choices.empty() ? json::object() : timings_json(choices[0])}};  // the first choice's
}

json chunk_json(const ResponseMeta &m, int32_t index, const std::string &text, const Event *tok, bool first,
                const std::string &finish) {
    json ch = {{"index", index}, {"logprobs", nullptr}};
    ch["finish_reason"] = finish.empty() ? json(nullptr) : json(finish);
    if (m.endpoint == Endpoint::Chat) {
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (finish.empty()) delta["content"] = text;
        ch["delta"] = delta;
        if (tok && m.logprobs) ch["logprobs"] = {{"content", json::array({chat_logprob_entry(*tok)})}};
    } else {
        ch["text"] = text;
        if (tok && m.logprobs) ch["logprobs"] = completion_logprobs({tok}, 0);
    }
    return {{"id", m.id},
            {"object", m.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"system_fingerprint", "lctx"},
            {"choices", json::array({ch})}};
}

json completion_probability_json(const Event &e) {
    json top = json::array();
    for (const TopLogprob &t : e.top)
        top.push_back(
            {{"id", t.token}, {"token", t.text}, {"logprob", t.logprob}, {"bytes", bytes_of(t.text)}});
    return {{"id", e.token},
            {"token", e.token_text},
            {"logprob", e.logprob},
            {"bytes", bytes_of(e.token_text)},
            {"top_logprobs", top}};
}

json usage_chunk_json(const ResponseMeta &m, const std::vector<ChoiceResult> &choices) {
    return {{"id", m.id},
            {"object", m.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"system_fingerprint", "lctx"},
            {"choices", json::array()},
            {"usage", usage_json(choices)}};
}

}  // namespace lctx::server
