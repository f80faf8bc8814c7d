#include "tools/lctx/args.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace lctx::cli {

std::vector<std::string> normalize_args(int argc, const char *const *argv) {
    // llama.cpp's spellings with more than one letter after a single dash.
    static const std::map<std::string, std::string> long_form = {
        {"-ub", "--ubatch-size"},
        {"-tb", "--threads-batch"},
        {"-ctk", "--cache-type-k"},
        {"-ctv", "--cache-type-v"},
        {"-fa", "--flash-attn"},
        {"-cnv", "--conversation"},
        {"-sys", "--system-prompt"},
        {"-ngl", "--n-gpu-layers"},
        {"-pg", "--pg"},
        {"-npp", "--npp"},
        {"-ntg", "--ntg"},
        {"-npl", "--npl"},
        {"-pps", "--pps"},
        {"-nkvo", "--no-kv-offload"},
        {"-mli", "--multiline-input"},
        {"-dkvc", "--dump-kv-cache"},
        {"-ngld", "--n-gpu-layers-draft"},
        {"-np", "--parallel"},
        {"-co", "--color"},
        {"-sp", "--special"},
        {"-to", "--timeout"},
        {"-md", "--model-draft"},
        {"-cd", "--ctx-size-draft"},
        {"-td", "--threads-draft"},
        {"-tbd", "--threads-batch-draft"},
    };
    std::vector<std::string> out;
    bool positional_only = false;  // after "--" nothing is an option
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        if (i > 0 && !positional_only) {
            if (a == "--") {
                positional_only = true;
            } else {
                const size_t eq = a.find('=');
                const std::string key = a.substr(0, eq);
                const auto it = long_form.find(key);
                if (it != long_form.end()) a = it->second + (eq == std::string::npos ? "" : a.substr(eq));
            }
        }
        out.push_back(std::move(a));
    }
    return out;
}

std::string process_escapes(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[i + 1];
        auto hexval = [](char h) {
            return h >= '0' && h <= '9'   ? h - '0'
                   : h >= 'a' && h <= 'f' ? h - 'a' + 10
                   : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                          : -1;
        };
        switch (c) {
            case 'n':
                out += '\n';
                ++i;
                continue;
            case 't':
                out += '\t';
                ++i;
                continue;
            case 'r':
                out += '\r';
                ++i;
                continue;
            case 'a':
                out += '\a';
                ++i;
                continue;
            case 'b':
                out += '\b';
                ++i;
                continue;
            case 'f':
                out += '\f';
                ++i;
                continue;
            case 'v':
                out += '\v';
                ++i;
                continue;
            case '\\':
                out += '\\';
                ++i;
                continue;
            case '\'':
                out += '\'';
                ++i;
                continue;
            case '"':
                out += '"';
                ++i;
                continue;
            case '?':
                out += '?';
                ++i;
                continue;
            case 'x':
                if (i + 3 < s.size() && hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0) {
                    out += static_cast<char>(hexval(s[i + 2]) * 16 + hexval(s[i + 3]));
                    i += 3;
                    continue;
                }
                break;
            default:
                if (c >= '0' && c <= '7') {
                    int v = 0;
                    size_t k = i + 1;
                    for (; k < s.size() && k < i + 4 && s[k] >= '0' && s[k] <= '7'; ++k)
                        v = v * 8 + (s[k] - '0');
                    out += static_cast<char>(v & 0xFF);
                    i = k - 1;
                    continue;
                }
                break;
        }
        out += s[i];  // unknown or cut escape: keep the backslash, the next character follows as usual
    }
    return out;
}

bool parse_logit_bias(const std::string &s, TokenBias *out, std::string *why) {
    size_t used = 0;
    long long tok = 0;
    try {
        tok = std::stoll(s, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used == 0 || s[0] == '-' || s[0] == '+' || tok > INT32_MAX) {
        *why = "'" + s + "' does not start with a token id (want TOKEN+BIAS or TOKEN-BIAS, e.g. 15043+1)";
        return false;
    }
    std::string rest = s.substr(used);
    const bool spaced = !rest.empty() && rest[0] == ' ';
    if (spaced) rest.erase(0, 1);
    if (rest.empty() || (!spaced && rest[0] != '+' && rest[0] != '-')) {
        *why = "'" + s + "' has no bias (want TOKEN+BIAS or TOKEN-BIAS, e.g. 15043+1)";
        return false;
    }
    char *end = nullptr;
    const float b = std::strtof(rest.c_str(), &end);
    if (end == rest.c_str() || *end != '\0' || std::isnan(b)) {
        *why = "'" + s + "': the bias '" + rest + "' is not a number";
        return false;
    }
    out->token = static_cast<int32_t>(tok);
    out->bias = b;
    return true;
}

std::string version_string() {
    return std::string("lctx ") + LCTX_VERSION + " (commit " + LCTX_BUILD_COMMIT + ")";
}

void configure_app(CLI::App &app) {
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->always_capture_default();
    app.set_version_flag("--version", version_string());
}

namespace {

// A single dash followed by two or more letters is one of llama.cpp's multi-letter options; those that
// normalize_args did not map are ones lctx lacks. CLI11 would read them as bundled one-letter options
// (-hf as -h -f: help), so they are refused here by their whole name. Empty when the args are fine.
std::string refuse_unmapped_multi_letter(CLI::App &app, const std::vector<std::string> &args) {
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (a == "--") break;
        // The value of an option before it may be such a word (tokenize --text -hello).
        const CLI::Option *prev = i > 1 ? app.get_option_no_throw(args[i - 1]) : nullptr;
        if (prev && prev->get_items_expected_max() > 0) continue;  // (a flag takes none)
        const std::string key = a.substr(0, a.find('='));
        if (key.size() < 3 || key[0] != '-' || key[1] == '-' || app.get_option_no_throw(key)) continue;
        if (!std::all_of(key.begin() + 1, key.end(), [](char c) { return c >= 'a' && c <= 'z'; })) continue;
        if (key == "-inf" || key == "-nan" || key == "-infinity") continue;  // a value: --temp -inf
        if (key.rfind("-hf", 0) == 0 || key == "-mu")
            return key + ": downloading is not supported: pass -m FILE";
        return key + ": not an option of lctx (llama.cpp's " + key + " has no counterpart here)";
    }
    return "";
}

}  // namespace

int parse_or_report(CLI::App &app, const std::string &cmd, std::vector<std::string> args) {
    if (const std::string why = refuse_unmapped_multi_letter(app, args); !why.empty()) {
        std::fprintf(stderr, "lctx %s: %s (see 'lctx %s --help')\n", cmd.c_str(), why.c_str(), cmd.c_str());
        return 1;
    }
    // CLI11 turns an empty value into 0 (`--temp ''` would mean greedy): numbers must be written out.
    for (CLI::Option *opt : app.get_options()) {
        const std::string type = opt->get_type_name();
        if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0)
            opt->check(CLI::Validator(
                [](std::string &v) { return v.empty() ? std::string("an empty value is not a number") : ""; },
                ""));
    }
    args.erase(args.begin());                // the program name
    std::reverse(args.begin(), args.end());  // CLI11 consumes the vector from its back
    try {
        app.parse(args);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        std::string why = e.what();
        if (dynamic_cast<const CLI::ExtrasError *>(&e)) {
            // CLI11 lists them last first; in the order given they are easier to find.
            const std::vector<std::string> extras = app.remaining();
            why = extras.size() > 1 ? "The following arguments were not expected:"
                                    : "The following argument was not expected:";
            for (const std::string &x : extras) why += " " + x;
        }
        for (char &c : why)
            if (c == '\n') c = ' ';
        while (!why.empty() && why.back() == ' ') why.pop_back();
        std::fprintf(stderr, "lctx %s: %s (see 'lctx %s --help')\n", cmd.c_str(), why.c_str(), cmd.c_str());
        return 1;
    }
    return -1;
}

}  // namespace lctx::cli
