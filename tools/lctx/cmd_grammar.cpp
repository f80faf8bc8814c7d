// lctx grammar check GRAMMAR INPUT: feeds the input's code points to a GBNF grammar the way llama.cpp's
// GBNF validator does. Exit 0 "valid"; 1 "invalid at code point N: unexpected character 'c'" or
// "...: unexpected end of input"; 2 when the grammar itself is refused (the reason, with line and column).
//
// lctx grammar from-schema SCHEMA: prints the GBNF for a JSON schema (what --json-schema constrains the
// output with). Exit 0; 1 when the file cannot be read; 2 when the schema is refused (the reason).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "tools/lctx/args.h"
#include "tools/lctx/commands.h"
#include "tools/lctx/read_file.h"
#include "vocab/unicode.h"

namespace lctx::cli {

namespace {

int from_schema(const std::string &path) {
    std::string text, why;
    if (!read_whole_file(path, &text, &why)) {
        std::fprintf(stderr, "lctx grammar: %s\n", why.c_str());
        return 1;
    }
    try {
        const std::string gbnf = grammar::json_schema_to_gbnf(std::string_view(text));
        std::fwrite(gbnf.data(), 1, gbnf.size(), stdout);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "lctx grammar: %s: %s\n", path.c_str(), e.what());
        return 2;
    }
}

}  // namespace

int cmd_grammar(int argc, char **argv) {
    CLI::App app{"GBNF grammar tools", "lctx grammar"};
    app.require_subcommand(1);
    CLI::App *check =
        app.add_subcommand("check", "is INPUT_FILE valid for GRAMMAR_FILE (llama.cpp's validator)");
    std::string grammar_path, input_path, root = "root";
    check->add_option("GRAMMAR", grammar_path, "GBNF file")->required();
    check->add_option("INPUT", input_path, "text file, read as it is (no newline stripped)")->required();
    check->add_option("--root", root, "start rule");
    CLI::App *from_schema_cmd = app.add_subcommand(
        "from-schema", "print the GBNF grammar for a JSON schema (what --json-schema uses)");
    std::string schema_path;
    from_schema_cmd->add_option("SCHEMA", schema_path, "JSON schema file")->required();
    // A usage error is 2, as a refused grammar: 1 means the input does not match.
    const int st = parse_or_report(app, "grammar", normalize_args(argc, argv));
    if (st >= 0) return st == 0 ? 0 : 2;
    if (from_schema_cmd->parsed()) return from_schema(schema_path);
    std::string gbnf, input, why;
    if (!read_whole_file(grammar_path, &gbnf, &why) || !read_whole_file(input_path, &input, &why)) {
        std::fprintf(stderr, "lctx grammar: %s\n", why.c_str());
        return 2;
    }
    std::shared_ptr<const grammar::Grammar> g;
    try {
        g = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf, root));
    } catch (const grammar::GrammarError &e) {
        std::fprintf(stderr, "lctx grammar: %s: %s\n", grammar_path.c_str(), e.what());
        return 2;
    }
    const std::vector<uint32_t> cps = grammar::decode_utf8(input);
    const grammar::MatchResult r = grammar::match_text(g, cps);
    if (r.accepted) {
        std::printf("valid\n");
        return 0;
    }
    if (r.unexpected_end)
        std::printf("invalid at code point %zu: unexpected end of input\n", r.position);
    else
        std::printf("invalid at code point %zu: unexpected character '%s'\n", r.position,
                    unicode::encode_utf8(cps[r.position]).c_str());
    return 1;
}

}  // namespace lctx::cli
