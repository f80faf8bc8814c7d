// The completion endpoints: OpenAI's /v1/completions and llama-server's native /completion (alias
// /completions) and /infill. Native replies follow llama-server's README: one object per prompt
// {content, tokens, id_slot, stop, model, tokens_predicted, tokens_evaluated, generation_settings, prompt,
// has_new_line, truncated, stop_type, stopping_word, tokens_cached, timings, completion_probabilities}
// (an array of them for several prompts), streamed as `data: {"content", "tokens", "stop": false}` events
// and a last event with stop true and the whole object's fields; no [DONE].
#include "generate/fim_prompt.h"
#include "server/apis.h"
#include "server/generation.h"

namespace lctx::server {

namespace {
using json = nlohmann::json;

// ---- OpenAI's /v1/completions ----

void openai_completions(ApiHost &host, const httplib::Request &req, httplib::Response &res) {
    Engine &eng = host.engine();
    need_generator(eng);
    const json body = parse_body(req.body);
    const GenRequest r = parse_completion_request(body, host.limits(eng));
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::string> echo;  // each prompt's text, when echo
    for (const PromptInput &p : r.prompts) {
        prompts.push_back(prompt_tokens(eng, p));
        if (!r.echo) continue;
        std::string text;
        for (const PromptPiece &x : p) text += x.is_token ? eng.detokenize({x.token}) : x.text;
        echo.push_back(std::move(text));
    }
    Generation g = start_generation(eng, r, prompts, body, r.logprobs ? r.top_logprobs : -1, r.logprobs);
    auto meta = std::make_shared<ResponseMeta>();
    meta->endpoint = Endpoint::Completion;
    meta->id = random_id("cmpl-");
    meta->model = eng.model_name();
    meta->created = unix_now();
    meta->logprobs = r.logprobs;
    if (!r.stream) {
        if (!collect(g, host)) {
            res.status = 499;  // nobody reads it: the request log says what happened
            return;
        }
        if (r.echo)
            for (ChoiceResult &c : g.results) c.text = echo[static_cast<size_t>(c.prompt_index)] + c.text;
        send_json(res, 200, response_json(*meta, g.results));
        return;
    }
    // One chunk per piece of text (the prompt first with echo), the finish reason with the timings per
    // choice, the usage chunk when asked for, then [DONE].
    // The prompt's text goes out once per choice, before the choice's first event.
    auto echo_due = std::make_shared<std::vector<bool>>(g.results.size(), !echo.empty());
    const bool include_usage = r.include_usage;
    StreamFormat f;
    f.on_event = [meta, echo_due, echo](const Event &e, ChoiceResult &c) {
        const size_t i = static_cast<size_t>(e.index);
        std::string out;
        if ((*echo_due)[i]) {
            (*echo_due)[i] = false;
            out +=
                sse(chunk_json(*meta, e.index, echo[static_cast<size_t>(c.prompt_index)], nullptr, true, ""));
        }
        if (e.kind == Event::Token) {
            // A token whose text is held back (a possible stop string) still reports its logprobs.
            if (e.text.empty() && !(meta->logprobs && e.token >= 0)) return out;
            return out + sse(chunk_json(*meta, e.index, e.text, e.token >= 0 ? &e : nullptr, false, ""));
        }
        json fin = chunk_json(*meta, e.index, "", nullptr, false, e.finish_reason);
        fin["timings"] = timings_json(c);  // as llama-server: the choice's last chunk
        return out + sse(fin);
    };
    f.on_failure = [](const Event &e) {
        return sse(e.status == 503 ? error_json(503, e.error, "unavailable_error")
                                   : error_json(500, e.error, "server_error"));
    };
    f.on_end = [meta, include_usage](std::vector<ChoiceResult> &results) {
        return (include_usage ? sse(usage_chunk_json(*meta, results)) : std::string()) + "data: [DONE]\n\n";
    };
    stream_generation(res, std::move(g), host, std::move(f));
}

// ---- llama-server's /completion and /infill ----

json generation_settings(Engine &eng, const GenRequest &r) {
    const generate::SamplingConfig &s = r.sampling.config;
    return {{"n_ctx", eng.slot_ctx()},
            {"model", eng.model_name()},
            {"n_predict", r.max_tokens},
            {"seed", r.sampling.seed ? json(*r.sampling.seed) : json(4294967295u)},
            {"temperature", s.temperature},
            {"dynatemp_range", s.dynatemp_range},
            {"dynatemp_exponent", s.dynatemp_exponent},
            {"top_k", s.top_k},
            {"top_p", s.top_p},
            {"min_p", s.min_p},
            {"typical_p", s.typical_p},
            {"xtc_probability", s.xtc_probability},
            {"xtc_threshold", s.xtc_threshold},
            {"repeat_last_n", s.repeat_last_n},
            {"repeat_penalty", s.repeat_penalty},
            {"presence_penalty", s.presence_penalty},
            {"frequency_penalty", s.frequency_penalty},
            {"dry_multiplier", s.dry_multiplier},
            {"dry_base", s.dry_base},
            {"dry_allowed_length", s.dry_allowed_length},
            {"dry_penalty_last_n", s.dry_penalty_last_n},
            {"dry_sequence_breakers", s.dry_sequence_breakers},
            {"mirostat", s.mirostat},
            {"mirostat_tau", s.mirostat_tau},
            {"mirostat_eta", s.mirostat_eta},
            {"stop", r.stop},
            {"ignore_eos", r.ignore_eos},
            {"stream", r.stream},
            {"n_probs", r.n_probs},
            {"min_keep", s.min_keep},
            {"grammar", r.grammar},
            {"samplers", r.sampling.samplers.empty() ? json::array({"penalties", "dry", "top_k", "typ_p",
                                                                    "top_p", "min_p", "xtc", "temperature"})
                                                     : json(r.sampling.samplers)}};
}

struct NativeMeta {
    json settings;
    std::vector<std::string> prompt_text;  // each prompt as evaluated (special tokens spelled out)
    std::string model;
    bool return_tokens = false;
    int32_t n_probs = 0;
};

json native_result(const NativeMeta &m, const ChoiceResult &c, int32_t index, bool streamed) {
    json tokens = json::array(), probs = json::array();
    if (!streamed)
        for (const Event &e : c.tokens) {
            if (m.return_tokens) tokens.push_back(e.token);
            if (m.n_probs > 0) probs.push_back(completion_probability_json(e));
        }
    json j = {{"index", index},
              {"content", streamed ? std::string() : c.text},
              {"tokens", tokens},
              {"id_slot", c.slot},
              {"stop", true},
              {"model", m.model},
              {"tokens_predicted", c.completion_tokens},
              {"tokens_evaluated", c.prompt_tokens},
              {"generation_settings", m.settings},
              {"prompt", m.prompt_text[static_cast<size_t>(c.prompt_index)]},
              {"has_new_line", c.text.find('\n') != std::string::npos},
              {"truncated", false},
              {"stop_type", c.stop_type},
              {"stopping_word", c.stopping_word},
              {"tokens_cached", c.cached_tokens},
              {"timings", timings_json(c)}};
    if (m.n_probs > 0 && !streamed) j["completion_probabilities"] = probs;
    return j;
}

void native_generate(ApiHost &host, const httplib::Request &req, httplib::Response &res, bool infill) {
    Engine &eng = host.engine();
    need_generator(eng);
    const json body = parse_body(req.body);
    const GenRequest r = parse_native_completion_request(body, host.limits(eng), infill);
    std::vector<std::vector<int32_t>> prompts;
    if (infill) {
        const InfillInput in = parse_infill_input(body);
        const generate::FimTokens ft = eng.fim_tokens();
        if (!ft.usable())
            throw ApiError(400,
                           "this model has no fill-in-the-middle tokens (tokenizer.ggml.fim_pre_token_id, "
                           "fim_suf_token_id, fim_mid_token_id): /infill needs a FIM model",
                           "invalid_request_error");
        generate::FimInput fi;
        fi.prefix = in.prefix;
        fi.suffix = in.suffix;
        fi.middle = r.prompt;
        for (const InfillChunk &c : in.extra) fi.extra.push_back({c.filename, c.text});
        prompts.push_back(checked_prompt(
            eng,
            generate::fim_prompt(ft, fi,
                                 [&eng](const std::string &t) { return eng.tokenize(t, false, false); }),
            "input_prefix"));
    } else {
        for (const PromptInput &p : r.prompts) prompts.push_back(prompt_tokens(eng, p));
    }
    auto meta = std::make_shared<NativeMeta>();
    meta->settings = generation_settings(eng, r);
    meta->model = eng.model_name();
    meta->return_tokens = r.return_tokens;
    meta->n_probs = r.n_probs;
    for (const std::vector<int32_t> &p : prompts) meta->prompt_text.push_back(eng.detokenize(p));
    Generation g = start_generation(eng, r, prompts, body, r.n_probs > 0 ? r.n_probs : -1,
                                    r.n_probs > 0 || r.return_tokens);
    // Several prompts (a list) answer with a list; one prompt with its object.
    const bool many = !infill && body["prompt"].is_array() &&
                      !std::any_of(body["prompt"].begin(), body["prompt"].end(),
                                   [](const json &x) { return x.is_number(); });
    if (!r.stream) {
        if (!collect(g, host)) {
            res.status = 499;
            return;
        }
        json out = json::array();
        for (size_t i = 0; i < g.results.size(); ++i)
            out.push_back(native_result(*meta, g.results[i], static_cast<int32_t>(i), false));
        send_json(res, 200, many ? out : out[0]);
        return;
    }
    StreamFormat f;
    f.on_event = [meta](const Event &e, ChoiceResult &c) {
        if (e.kind == Event::Done) return sse(native_result(*meta, c, e.index, true));
        if (e.text.empty() && !(meta->n_probs > 0 && e.token >= 0)) return std::string();
        json j = {{"index", e.index}, {"content", e.text}, {"tokens", json::array()}, {"stop", false}};
        if (e.token >= 0) j["tokens"].push_back(e.token);
        if (meta->n_probs > 0 && e.token >= 0)
            j["completion_probabilities"] = json::array({completion_probability_json(e)});
        return sse(j);
    };
    f.on_failure = [](const Event &e) {
        return sse(e.status == 503 ? error_json(503, e.error, "unavailable_error")
                                   : error_json(500, e.error, "server_error"));
    };
    f.on_end = [](std::vector<ChoiceResult> &) { return std::string(); };
    stream_generation(res, std::move(g), host, std::move(f));
}

}  // namespace

void register_completions_api(httplib::Server &svr, ApiHost &host) {
    svr.Post("/v1/completions", [&host](const httplib::Request &req, httplib::Response &res) {
        guarded(res, [&] { openai_completions(host, req, res); });
    });
    for (const char *p : {"/completion", "/completions"})
        svr.Post(p, [&host](const httplib::Request &req, httplib::Response &res) {
            guarded(res, [&] { native_generate(host, req, res, false); });
        });
    svr.Post("/infill", [&host](const httplib::Request &req, httplib::Response &res) {
        guarded(res, [&] { native_generate(host, req, res, true); });
    });
}

}  // namespace lctx::server
