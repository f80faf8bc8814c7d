// The GBNF parser and matcher against llama.cpp's own verdicts (fixtures/grammar, see its README): every
// string of grammar-cases.json accepted or rejected as llama.cpp's validator does, at the same code point
// and for the same reason; every grammar of invalid-grammars.json refused or loaded as llama.cpp does it,
// except the two where llama.cpp crashes or runs out of memory, which must be refused with an error here.
#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "grammar/matcher.h"
#include "vocab/unicode.h"

namespace lctx::grammar::gbnf_test {
namespace {

std::string fixture_dir() {
    return std::string(LCTX_FIXTURES_DIR) + "/grammar/";
}

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

nlohmann::json read_json(const std::string &name) {
    return nlohmann::json::parse(read_file(fixture_dir() + name));
}

// llama.cpp's validator message for a rejected input.
std::string verdict_error(const MatchResult &r, const std::vector<uint32_t> &cps) {
    if (r.unexpected_end) return "Unexpected end of input";
    return "Unexpected character '" + unicode::encode_utf8(cps[r.position]) + "'";
}

void expect_verdict(const std::shared_ptr<const Grammar> &g, const nlohmann::json &c,
                    const std::string &what) {
    const std::string input =
        c.contains("input") ? c["input"].get<std::string>() : c["json"].get<std::string>();
    const std::vector<uint32_t> cps = decode_utf8(input);
    const MatchResult r = match_text(g, cps);
    EXPECT_EQ(r.accepted, c["accepted"].get<bool>()) << what << ": " << input;
    if (!r.accepted && !c["accepted"].get<bool>()) {
        EXPECT_EQ(verdict_error(r, cps), c["error"].get<std::string>()) << what << ": " << input;
        EXPECT_EQ(r.position, c["error_pos"].get<size_t>()) << what << ": " << input;
    }
}

TEST(Gbnf, EveryStockGrammarCaseGetsLlamaCppsVerdict) {
    const nlohmann::json cases = read_json("grammar-cases.json");
    ASSERT_GE(cases.size(), 90u);
    std::map<std::string, std::shared_ptr<const Grammar>> grammars;
    for (const nlohmann::json &c : cases) {
        const std::string file = c["grammar"];
        if (!grammars.count(file))
            grammars[file] = std::make_shared<const Grammar>(parse_gbnf(read_file(fixture_dir() + file)));
        expect_verdict(grammars[file], c, file + " (" + c["note"].get<std::string>() + ")");
    }
}

TEST(Gbnf, InvalidGrammarsAreRefusedAndOddOnesLoadAsInLlamaCpp) {
    const nlohmann::json cases = read_json("invalid-grammars.json");
    ASSERT_GE(cases.size(), 20u);
    for (const nlohmann::json &c : cases) {
        const std::string name = c["name"], outcome = c["outcome"];
        // llama.cpp crashes (nullable left recursion) or exhausts memory ({2,1}) on two of them: refused
        // here.
        const bool must_refuse = outcome != "accepted";
        try {
            auto g = std::make_shared<const Grammar>(parse_gbnf(c["gbnf"].get<std::string>()));
            EXPECT_FALSE(must_refuse) << name << ": loaded, but llama.cpp's outcome is " << outcome;
            for (const nlohmann::json &p : c["probes"]) expect_verdict(g, p, name);
        } catch (const GrammarError &e) {
            EXPECT_TRUE(must_refuse) << name << ": refused (" << e.what() << ") but llama.cpp loads it";
            EXPECT_NE(std::string(e.what()).find("line"), std::string::npos) << e.what();
        }
    }
}

TEST(Gbnf, JsonSchemaSamplesAgainstTheConvertersGrammars) {
    // The converter's own output is a grammar too: each sample's verdict must match (the converter itself is
    // tested where it lives).
    const nlohmann::json cases = read_json("schema-cases.json");
    size_t checked = 0;
    for (const nlohmann::json &c : cases) {
        const std::string key = c["samples_validated_against"];
        if (!c.contains(key) || c[key].is_null()) continue;
        auto g = std::make_shared<const Grammar>(parse_gbnf(c[key].get<std::string>()));
        for (const nlohmann::json &s : c["samples"]) {
            expect_verdict(g, s, c["name"].get<std::string>());
            ++checked;
        }
    }
    EXPECT_GT(checked, 30u);
}

TEST(Gbnf, ErrorsNameLineAndColumn) {
    try {
        parse_gbnf("root ::= \"a\"\nitem ::= \"b\" )\n");
        FAIL() << "no error";
    } catch (const GrammarError &e) {
        EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_gbnf("root ::= \"a\"", "start"), GrammarError);  // no such start rule
    EXPECT_THROW(parse_gbnf("root ::= a\na ::= b\nb ::= a \"x\"\n"),
                 GrammarError);  // indirect left recursion
}

TEST(Gbnf, RepetitionBoundsExpandExactly) {
    auto g = std::make_shared<const Grammar>(parse_gbnf("root ::= \"ab\"{2,3} [0-9]{1,} \"x\"?\n"));
    auto ok = [&](const std::string &s) { return match_text(g, decode_utf8(s)).accepted; };
    EXPECT_FALSE(ok("ab1"));
    EXPECT_TRUE(ok("abab1"));
    EXPECT_TRUE(ok("ababab12x"));
    EXPECT_FALSE(ok("abababab1"));
    EXPECT_FALSE(ok("abab"));
    EXPECT_TRUE(ok("abab99999999x"));
    EXPECT_FALSE(ok("abab1xx"));
}

}  // namespace
}  // namespace lctx::grammar::gbnf_test
