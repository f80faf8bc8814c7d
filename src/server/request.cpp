#include "server/request.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

namespace lctx::server {

namespace {
using json = nlohmann::json;

float get_float(const json &body, const char *name, float def, float lo, float hi) {
    const json *v = find_field(body, name);
    if (!v) return def;
    if (!v->is_number()) bad_field(name, "must be a number");
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
        bad_field(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return static_cast<float>(d);
}

int64_t get_int(const json &body, const char *name, int64_t def, int64_t lo, int64_t hi) {
    const json *v = find_field(body, name);
    if (!v) return def;
    if (!v->is_number_integer() && !v->is_number_unsigned()) bad_field(name, "must be an integer");
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        bad_field(name, "is out of range");
    const int64_t i = v->get<int64_t>();
    if (i < lo || i > hi)
        bad_field(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return i;
}

bool get_bool(const json &body, const char *name, bool def) {
    const json *v = find_field(body, name);
    if (!v) return def;
    if (!v->is_boolean()) bad_field(name, "must be a boolean");
    return v->get<bool>();
}

std::string get_string(const json &body, const char *name, const std::string &def) {
    const json *v = find_field(body, name);
    if (!v) return def;
    if (!v->is_string()) bad_field(name, "must be a string");
    return v->get<std::string>();
}

int32_t token_id(const json &v, const char *name, int32_t n_vocab) {
    if (!v.is_number_integer() && !v.is_number_unsigned()) bad_field(name, "must hold token ids (integers)");
    const int64_t t = v.get<int64_t>();
    if (t < 0 || (n_vocab > 0 && t >= n_vocab) || t > INT32_MAX)
        bad_field(name, "holds token " + std::to_string(t) + ", outside the vocabulary");
    return static_cast<int32_t>(t);
}

// llama-server's sampler names (and llama.cpp's other spellings) -> the canonical name; "" unknown.
std::string canonical_sampler(const std::string &n) {
    static const std::pair<const char *, const char *> kNames[] = {
        {"top_k", "top_k"},      {"top-k", "top_k"},     {"typ_p", "typ_p"},
        {"typical_p", "typ_p"},  {"typical-p", "typ_p"}, {"typical", "typ_p"},
        {"typ-p", "typ_p"},      {"typ", "typ_p"},       {"top_p", "top_p"},
        {"top-p", "top_p"},      {"nucleus", "top_p"},   {"min_p", "min_p"},
        {"min-p", "min_p"},      {"xtc", "xtc"},         {"temperature", "temperature"},
        {"temp", "temperature"}, {"dry", "dry"},         {"penalties", "penalties"}};
    for (const auto &[from, to] : kNames)
        if (n == from) return to;
    return "";
}

// What both endpoints share: lengths, sampling, stop, stream, grammar.
void parse_common(const json &body, const RequestLimits &lim, GenRequest &r) {
    r.model = get_string(body, "model", "");
    // max_completion_tokens is the chat endpoint's newer name; n_predict is llama-server's.
    const char *mt_name = find_field(body, "max_completion_tokens") ? "max_completion_tokens"
                          : find_field(body, "n_predict")           ? "n_predict"
                                                                    : "max_tokens";
    r.max_tokens = static_cast<int32_t>(get_int(body, mt_name, -1, 1, lim.max_tokens));
    r.n = static_cast<int32_t>(get_int(body, "n", 1, 1, lim.max_n));
    r.stream = get_bool(body, "stream", false);
    if (const json *so = find_field(body, "stream_options")) {
        if (!so->is_object()) bad_field("stream_options", "must be an object");
        r.include_usage = get_bool(*so, "include_usage", false);
    }

    // llama-server's native fields: each honoured, or refused with a 400 naming it (never silently ignored).
    r.ignore_eos = get_bool(body, "ignore_eos", false);
    r.cache_prompt = get_bool(body, "cache_prompt", true);
    r.id_slot = static_cast<int32_t>(get_int(body, "id_slot", -1, -1, 1 << 20));
    if (lim.n_slots > 0 && r.id_slot >= lim.n_slots)
        bad_field("id_slot", "must be -1 or a slot id below " + std::to_string(lim.n_slots));
    // Native fields lctx does not do: refused unless neutral.
    if (get_int(body, "n_keep", 0, -1, 1 << 30) != 0)
        bad_field("n_keep", "is not supported: a full slot keeps its first token (--context-shift) or ends");
    if (get_int(body, "n_indent", 0, 0, 1 << 20) != 0) bad_field("n_indent", "is not supported (send 0)");
    if (get_int(body, "t_max_predict_ms", 0, 0, INT64_MAX) != 0)
        bad_field("t_max_predict_ms", "is not supported (send 0; n_predict bounds a reply)");
    if (get_bool(body, "timings_per_token", false))
        bad_field("timings_per_token", "is not supported: timings come with each choice's end");
    if (const json *rf = find_field(body, "response_fields"))
        if (!rf->is_array() || !rf->empty()) bad_field("response_fields", "is not supported");
    if (const json *img = find_field(body, "image_data"))
        if (!img->is_array() || !img->empty())
            bad_field("image_data", "is not supported: this server reads no images");
    if (get_bool(body, "post_sampling_probs", false))
        bad_field("post_sampling_probs", "is not supported: probabilities are the model's, before sampling");
    // An absent field keeps the endpoint's default (r.sampling as the caller set it).
    generate::SamplingConfig &s = r.sampling.config;
    s.temperature = get_float(body, "temperature", s.temperature, 0.0f, 2.0f);
    s.top_p = get_float(body, "top_p", s.top_p, 0.0f, 1.0f);
    s.top_k = static_cast<int32_t>(get_int(body, "top_k", s.top_k, 0, 1 << 30));
    s.min_p = get_float(body, "min_p", s.min_p, 0.0f, 1.0f);
    s.presence_penalty = get_float(body, "presence_penalty", 0.0f, -2.0f, 2.0f);
    s.frequency_penalty = get_float(body, "frequency_penalty", 0.0f, -2.0f, 2.0f);
    s.repeat_penalty = get_float(body, "repeat_penalty", 1.0f, 0.0f, 10.0f);
    s.repeat_last_n = static_cast<int32_t>(get_int(body, "repeat_last_n", s.repeat_last_n, -1, 1 << 30));
    s.typical_p = get_float(body, "typical_p", 1.0f, 0.0f, 1.0f);
    s.mirostat = static_cast<int32_t>(get_int(body, "mirostat", 0, 0, 2));
    s.mirostat_tau = get_float(body, "mirostat_tau", 5.0f, 0.0f, 1e6f);
    s.mirostat_eta = get_float(body, "mirostat_eta", 0.1f, 0.0f, 1e6f);
    s.dry_multiplier = get_float(body, "dry_multiplier", 0.0f, 0.0f, 1e6f);
    s.dry_base = get_float(body, "dry_base", 1.75f, 1.0f, 1e6f);
    s.dry_allowed_length = static_cast<int32_t>(get_int(body, "dry_allowed_length", 2, 0, 1 << 20));
    s.dry_penalty_last_n = static_cast<int32_t>(get_int(body, "dry_penalty_last_n", -1, -1, 1 << 30));
    if (const json *br = find_field(body, "dry_sequence_breakers")) {
        if (!br->is_array() || br->empty() || br->size() > 64)
            bad_field("dry_sequence_breakers", "must be an array of 1 to 64 strings");
        s.dry_sequence_breakers.clear();
        for (const json &x : *br) {
            if (!x.is_string() || x.get<std::string>().empty() || x.get<std::string>().size() > 256)
                bad_field("dry_sequence_breakers", "must hold non-empty strings (at most 256 bytes)");
            s.dry_sequence_breakers.push_back(x.get<std::string>());
        }
    }
    s.xtc_probability = get_float(body, "xtc_probability", 0.0f, 0.0f, 1.0f);
    s.xtc_threshold = get_float(body, "xtc_threshold", 0.1f, 0.0f, 1.0f);
    s.min_keep = static_cast<int32_t>(get_int(body, "min_keep", 0, 0, 1 << 20));
    s.dynatemp_range = get_float(body, "dynatemp_range", 0.0f, 0.0f, 2.0f);
    s.dynatemp_exponent = get_float(body, "dynatemp_exponent", 1.0f, 0.0f, 100.0f);
    if (const json *sm = find_field(body, "samplers")) {
        // An array of names, or llama-server's string of letters (k top_k, y typ_p, p top_p, m min_p, x xtc,
        // t temperature, d dry, e penalties).
        static const char *kLetters = "kypmxtde";
        static const char *kNames[] = {"top_k", "typ_p",       "top_p", "min_p",
                                       "xtc",   "temperature", "dry",   "penalties"};
        if (sm->is_string()) {
            for (char c : sm->get<std::string>()) {
                const char *at = std::strchr(kLetters, c);
                if (c == '\0' || !at)
                    bad_field("samplers", std::string("has an unknown sampler letter '") + c + "'");
                r.sampling.samplers.push_back(kNames[at - kLetters]);
            }
        } else if (sm->is_array()) {
            for (const json &x : *sm) {
                if (!x.is_string()) bad_field("samplers", "must be an array of sampler names");
                const std::string n = canonical_sampler(x.get<std::string>());
                if (n.empty())
                    bad_field("samplers",
                              "has an unknown sampler '" + x.get<std::string>() +
                                  "' (top_k, typ_p, top_p, min_p, xtc, temperature, dry, penalties)");
                r.sampling.samplers.push_back(n);
            }
        } else {
            bad_field("samplers", "must be an array of sampler names or a string of sampler letters");
        }
        if (r.sampling.samplers.size() > 32) bad_field("samplers", "may name at most 32 samplers");
    }
    if (const json *v = find_field(body, "seed")) {
        if (!v->is_number_integer() && !v->is_number_unsigned()) bad_field("seed", "must be an integer");
        // Any 64-bit seed is accepted (clients send large ones); the sampler takes its low 32 bits.
        r.sampling.seed = static_cast<uint32_t>(
            v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>()));
    }
    if (const json *lb = find_field(body, "logit_bias")) {
        // OpenAI: {"token id": bias}; llama-server also takes [[id, bias], ...].
        auto add = [&](int32_t tok, const json &b) {
            if (!b.is_number()) bad_field("logit_bias", "values must be numbers");
            const double d = b.get<double>();
            if (!std::isfinite(d) || d < -100.0 || d > 100.0)
                bad_field("logit_bias", "values must be in [-100, 100]");
            r.sampling.logit_bias.emplace_back(tok, static_cast<float>(d));
        };
        if (lb->is_object()) {
            for (auto it = lb->begin(); it != lb->end(); ++it) {
                const std::string &k = it.key();
                size_t used = 0;
                long long id = -1;
                try {
                    id = std::stoll(k, &used);
                } catch (const std::exception &) {
                    used = 0;
                }
                if (k.empty() || used != k.size()) bad_field("logit_bias", "keys must be token ids");
                token_id(json(id), "logit_bias", lim.n_vocab);
                add(static_cast<int32_t>(id), it.value());
            }
        } else if (lb->is_array()) {
            for (const json &p : *lb) {
                if (!p.is_array() || p.size() != 2)
                    bad_field("logit_bias", "entries must be [token, bias] pairs");
                add(token_id(p[0], "logit_bias", lim.n_vocab), p[1]);
            }
        } else {
            bad_field("logit_bias", "must be an object mapping token ids to biases");
        }
    }

    if (const json *st = find_field(body, "stop")) {
        if (st->is_string()) {
            r.stop.push_back(st->get<std::string>());
        } else if (st->is_array()) {
            if (st->size() > static_cast<size_t>(lim.max_stop))
                bad_field("stop", "may hold at most " + std::to_string(lim.max_stop) + " strings");
            for (const json &x : *st) {
                if (!x.is_string()) bad_field("stop", "must be a string or an array of strings");
                r.stop.push_back(x.get<std::string>());
            }
        } else {
            bad_field("stop", "must be a string or an array of strings");
        }
        for (const std::string &x : r.stop)
            if (x.empty()) bad_field("stop", "strings must not be empty");
    }

    // Constrained output: response_format (OpenAI), or llama-server's grammar / json_schema fields.
    std::string grammar = get_string(body, "grammar", "");
    auto from_schema = [&](const json &schema, const char *name) {
        if (!schema.is_object() && !schema.is_boolean()) bad_field(name, "must be a JSON schema object");
        try {
            return grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()));
        } catch (const grammar::SchemaError &e) {
            bad_field(name, std::string("is not a usable JSON schema: ") + e.what());
        }
    };
    if (const json *js = find_field(body, "json_schema")) {
        if (!grammar.empty()) bad_field("json_schema", "cannot be combined with 'grammar'");
        grammar = from_schema(*js, "json_schema");
    }
    if (const json *rf = find_field(body, "response_format")) {
        if (!rf->is_object()) bad_field("response_format", "must be an object");
        const std::string type = get_string(*rf, "type", "text");
        if (type == "json_object") {
            // llama-server's form: {"type":"json_object","schema":{...}} constrains to that schema.
            if (const json *sc = find_field(*rf, "schema"))
                grammar = from_schema(*sc, "response_format.schema");
            else
                grammar = json_object_grammar();
        } else if (type == "json_schema") {
            const json *wrap = find_field(*rf, "json_schema");
            if (!wrap || !wrap->is_object()) bad_field("response_format.json_schema", "must be an object");
            const json *sc = find_field(*wrap, "schema");
            if (!sc) bad_field("response_format.json_schema.schema", "is required");
            grammar = from_schema(*sc, "response_format.json_schema.schema");
        } else if (type != "text") {
            bad_field("response_format.type", "must be 'text', 'json_object' or 'json_schema'");
        }
    }
    if (!grammar.empty()) {
        try {
            grammar::parse_gbnf(grammar);
        } catch (const grammar::GrammarError &e) {
            bad_field("grammar", std::string("is not a valid GBNF grammar: ") + e.what());
        }
    }
    r.grammar = std::move(grammar);
}

std::string message_content(const json &c, size_t i) {
    const std::string name = "messages[" + std::to_string(i) + "].content";
    if (c.is_string()) return c.get<std::string>();
    if (c.is_array()) {
        // Content parts: the text ones are joined; images and audio are refused.
        std::string out;
        for (const json &part : c) {
            if (!part.is_object()) bad_field(name, "parts must be objects");
            if (get_string(part, "type", "") != "text") bad_field(name, "parts must be of type 'text'");
            const json *t = find_field(part, "text");
            if (!t || !t->is_string()) bad_field(name, "text parts need a string 'text'");
            if (!out.empty()) out += "\n";
            out += t->get<std::string>();
        }
        return out;
    }
    bad_field(name, "must be a string or an array of text parts");
}
}  // namespace

json parse_body(const std::string &body) {
    json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
    if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
    return j;
}

bool valid_slot_filename(const std::string &name) {
    if (name.empty() || name.size() > 255 || name[0] == '.') return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    return true;
}

const std::string &json_object_grammar() {
    static const std::string g = grammar::json_schema_to_gbnf(std::string_view(R"({"type":"object"})"));
    return g;
}

namespace {
// A prompt given as an array of pieces: token ids and strings.
PromptInput prompt_pieces(const json &a, int32_t n_vocab) {
    if (a.empty()) bad_field("prompt", "must not hold an empty list");
    PromptInput p;
    for (const json &x : a) {
        if (x.is_string())
            p.push_back({false, -1, x.get<std::string>()});
        else
            p.push_back({true, token_id(x, "prompt", n_vocab), ""});
    }
    return p;
}

// Every choice takes a slot or a place in the queue: more than both hold could never be served.
void check_choices(const GenRequest &r, const RequestLimits &lim) {
    if (static_cast<int64_t>(r.prompts.size()) * r.n > lim.max_choices)
        bad_field(r.prompts.size() > 1 ? "prompt" : "n",
                  "asks for " + std::to_string(r.prompts.size() * static_cast<size_t>(r.n)) +
                      " choices (prompts times n); the server can hold " + std::to_string(lim.max_choices));
}

// `prompt`: a string, token ids (with strings among them), or a list of such prompts.
void parse_prompts(const json &body, const RequestLimits &lim, GenRequest &r) {
    const json *p = find_field(body, "prompt");
    if (!p) bad_field("prompt", "is required");
    if (p->is_string()) {
        r.prompts.push_back({{false, -1, p->get<std::string>()}});
    } else if (p->is_array()) {
        if (p->empty()) bad_field("prompt", "must not be empty");
        const bool one = std::any_of(p->begin(), p->end(), [](const json &x) { return x.is_number(); });
        if (one) {
            r.prompts.push_back(prompt_pieces(*p, lim.n_vocab));
        } else {
            if (p->size() > static_cast<size_t>(lim.max_prompts))
                bad_field("prompt", "may hold at most " + std::to_string(lim.max_prompts) + " prompts");
            for (const json &x : *p) {
                if (x.is_string())
                    r.prompts.push_back({{false, -1, x.get<std::string>()}});
                else if (x.is_array())
                    r.prompts.push_back(prompt_pieces(x, lim.n_vocab));
                else
                    bad_field("prompt",
                              "must be a string, an array of token ids, or an array of such prompts");
            }
        }
    } else {
        bad_field("prompt", "must be a string, an array of token ids, or an array of such prompts");
    }
    // The first prompt in the older fields, when it is all text or all tokens.
    const PromptInput &first = r.prompts[0];
    if (first.size() == 1 && !first[0].is_token) {
        r.prompt = first[0].text;
    } else if (std::all_of(first.begin(), first.end(), [](const PromptPiece &x) { return x.is_token; })) {
        for (const PromptPiece &x : first) r.prompt_tokens.push_back(x.token);
        r.prompt_is_tokens = true;
    }
}
}  // namespace

GenRequest parse_completion_request(const json &body, const RequestLimits &lim) {
    GenRequest r;
    r.endpoint = Endpoint::Completion;
    parse_prompts(body, lim, r);
    parse_common(body, lim, r);
    if (get_int(body, "n_probs", 0, 0, 1 << 20) != 0)
        bad_field("n_probs", "is /completion's: here use 'logprobs' (the number of alternatives)");
    // Completions take logprobs as the number of alternatives (OpenAI allows up to 5; llama-server more).
    if (const json *lp = find_field(body, "logprobs")) {
        if (lp->is_boolean()) {
            r.logprobs = lp->get<bool>();
        } else {
            r.top_logprobs = static_cast<int32_t>(get_int(body, "logprobs", 0, 0, 20));
            r.logprobs = true;
        }
    }
    r.echo = get_bool(body, "echo", false);
    if (r.echo && r.logprobs)
        bad_field("echo",
                  "cannot be combined with 'logprobs' (the prompt's tokens have no log-probabilities here)");
    check_choices(r, lim);
    return r;
}

GenRequest parse_native_completion_request(const json &body, const RequestLimits &lim, bool infill) {
    GenRequest r;
    r.endpoint = Endpoint::Completion;
    // llama-server's defaults for what the request leaves out (its README and /props), not OpenAI's.
    r.sampling.config = generate::llama_cpp_sampling_defaults();
    if (infill) {
        // /infill: the prompt is optional (it goes after the FIM middle token) and one text at most.
        if (const json *p = find_field(body, "prompt")) {
            if (!p->is_string()) bad_field("prompt", "must be a string (the text after the middle token)");
            r.prompt = p->get<std::string>();
        }
        r.prompts.push_back({{false, -1, r.prompt}});
    } else {
        parse_prompts(body, lim, r);
    }
    parse_common(body, lim, r);
    r.n_probs = static_cast<int32_t>(get_int(body, "n_probs", 0, 0, 100));
    r.return_tokens = get_bool(body, "return_tokens", false);
    if (find_field(body, "logprobs"))
        bad_field("logprobs", "is the OpenAI endpoints': /completion takes 'n_probs'");
    if (get_bool(body, "echo", false))
        bad_field("echo", "is /v1/completions': /completion returns the prompt as 'prompt'");
    if (r.n != 1) bad_field("n", "must be 1 on /completion (send several prompts instead)");
    check_choices(r, lim);
    return r;
}

InfillInput parse_infill_input(const json &body) {
    InfillInput in;
    in.prefix = get_string(body, "input_prefix", "");
    in.suffix = get_string(body, "input_suffix", "");
    if (const json *ex = find_field(body, "input_extra")) {
        if (!ex->is_array() || ex->size() > 256)
            bad_field("input_extra", "must be an array of {filename, text} objects");
        for (size_t i = 0; i < ex->size(); ++i) {
            const json &c = (*ex)[i];
            const std::string name = "input_extra[" + std::to_string(i) + "]";
            if (!c.is_object()) bad_field(name, "must be an object {filename, text}");
            const json *t = find_field(c, "text");
            if (!t || !t->is_string()) bad_field(name + ".text", "must be a string");
            in.extra.push_back({get_string(c, "filename", ""), t->get<std::string>()});
        }
    }
    return in;
}

GenRequest parse_chat_request(const json &body, const RequestLimits &lim) {
    GenRequest r;
    r.endpoint = Endpoint::Chat;
    const json *m = find_field(body, "messages");
    if (!m) bad_field("messages", "is required");
    if (!m->is_array() || m->empty()) bad_field("messages", "must be a non-empty array");
    for (size_t i = 0; i < m->size(); ++i) {
        const json &msg = (*m)[i];
        const std::string name = "messages[" + std::to_string(i) + "]";
        if (!msg.is_object()) bad_field(name, "must be an object");
        const json *role = find_field(msg, "role");
        if (!role || !role->is_string()) bad_field(name + ".role", "must be a string");
        const json *content = find_field(msg, "content");
        ChatTurn t;
        t.role = role->get<std::string>();
        if (t.role != "system" && t.role != "user" && t.role != "assistant" && t.role != "developer" &&
            t.role != "tool")
            bad_field(name + ".role", "must be system, developer, user, assistant or tool");
        if (t.role == "developer") t.role = "system";  // OpenAI's newer name for the system turn
        // Only an assistant turn may go without content (one that made tool calls); any other turn without
        // it is a mistake in the request, not an empty message.
        if (!content && t.role != "assistant")
            bad_field(name + ".content", "is required for a " + t.role + " message");
        t.content = content ? message_content(*content, i) : "";
        r.messages.push_back(std::move(t));
    }
    parse_common(body, lim, r);
    if (get_int(body, "n_probs", 0, 0, 1 << 20) != 0)
        bad_field("n_probs", "is /completion's: here use 'logprobs' and 'top_logprobs'");
    std::vector<std::string> contents;
    for (const ChatTurn &t : r.messages) contents.push_back(t.content);
    r.tools = parse_tool_request(body, contents);
    r.logprobs = get_bool(body, "logprobs", false);
    r.top_logprobs = static_cast<int32_t>(get_int(body, "top_logprobs", 0, 0, 20));
    if (r.top_logprobs > 0 && !r.logprobs) bad_field("top_logprobs", "needs 'logprobs': true");
    return r;
}

EmbeddingRequest parse_embedding_request(const json &body, int32_t n_vocab) {
    EmbeddingRequest r;
    auto in = body.find("input");
    if (in == body.end() && body.contains("content")) in = body.find("content");  // llama-server's name
    const char *kShape =
        "'input' must be a string, an array of strings, an array of token ids or an array "
        "of arrays of token ids";
    if (in == body.end() || in->is_null()) throw ApiError(400, kShape, "invalid_request_error", "input");
    auto ids = [&](const json &a) {
        EmbeddingInput e;
        e.is_tokens = true;
        for (const json &t : a) {
            if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
                throw ApiError(400, "'input' holds something that is not a token id of this model",
                               "invalid_request_error", "input");
            e.tokens.push_back(t.get<int32_t>());
        }
        if (e.tokens.empty())
            throw ApiError(400, "'input' holds an empty list of tokens", "invalid_request_error", "input");
        return e;
    };
    if (in->is_string()) {
        r.inputs.push_back({false, in->get<std::string>(), {}});
    } else if (in->is_array() && !in->empty() && (*in)[0].is_number()) {
        r.inputs.push_back(ids(*in));
    } else if (in->is_array() && !in->empty()) {
        for (const json &x : *in) {
            if (x.is_string())
                r.inputs.push_back({false, x.get<std::string>(), {}});
            else if (x.is_array())
                r.inputs.push_back(ids(x));
            else
                throw ApiError(400, kShape, "invalid_request_error", "input");
        }
    } else {
        throw ApiError(400, kShape, "invalid_request_error", "input");
    }
    auto f = body.find("encoding_format");
    if (f != body.end() && !f->is_null()) {
        if (!f->is_string() || (*f != "float" && *f != "base64"))
            throw ApiError(400, "'encoding_format' must be \"float\" or \"base64\"", "invalid_request_error",
                           "encoding_format");
        r.base64 = *f == "base64";
    }
    return r;
}

RerankRequest parse_rerank_request(const json &body) {
    RerankRequest r;
    auto q = body.find("query");
    if (q == body.end() || !q->is_string())
        throw ApiError(400, "'query' must be a string", "invalid_request_error", "query");
    r.query = q->get<std::string>();
    auto d = body.find("documents");
    if (d == body.end() || !d->is_array() || d->empty())
        throw ApiError(400, "'documents' must be a non-empty array of strings", "invalid_request_error",
                       "documents");
    for (const json &x : *d) {
        if (!x.is_string())
            throw ApiError(400, "'documents' must be a non-empty array of strings", "invalid_request_error",
                           "documents");
        r.documents.push_back(x.get<std::string>());
    }
    auto n = body.find("top_n");
    if (n != body.end() && !n->is_null()) {
        if (!n->is_number_integer() || n->get<int64_t>() < 1)
            throw ApiError(400, "'top_n' must be a positive integer", "invalid_request_error", "top_n");
        r.top_n = n->get<int64_t>();
    }
    return r;
}

TokenizeRequest parse_tokenize_request(const json &body) {
    TokenizeRequest r;
    auto it = body.find("content");
    if (it == body.end() || !it->is_string())
        throw ApiError(400, "'content' must be a string", "invalid_request_error", "content");
    r.content = it->get<std::string>();
    auto flag = [&](const char *name) {
        auto f = body.find(name);
        if (f == body.end() || f->is_null()) return false;
        if (!f->is_boolean())
            throw ApiError(400, std::string("'") + name + "' must be a boolean", "invalid_request_error",
                           name);
        return f->get<bool>();
    };
    r.add_special = flag("add_special");
    r.with_pieces = flag("with_pieces");
    return r;
}

std::vector<int32_t> parse_detokenize_request(const json &body, int32_t n_vocab) {
    auto it = body.find("tokens");
    if (it == body.end() || !it->is_array())
        throw ApiError(400, "'tokens' must be an array of token ids", "invalid_request_error", "tokens");
    std::vector<int32_t> toks;
    toks.reserve(it->size());
    for (const json &t : *it) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
            throw ApiError(400, "'tokens' holds something that is not a token id of this model",
                           "invalid_request_error", "tokens");
        toks.push_back(t.get<int32_t>());
    }
    return toks;
}

std::string parse_slot_filename(const json &body) {
    auto f = body.find("filename");
    if (f == body.end() || !f->is_string() || !valid_slot_filename(f->get<std::string>()))
        throw ApiError(400, "'filename' must be a plain file name (letters, digits, '.', '_', '-')",
                       "invalid_request_error", "filename");
    return f->get<std::string>();
}

}  // namespace lctx::server
