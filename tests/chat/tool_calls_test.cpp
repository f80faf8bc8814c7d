// Tool-call and reasoning parsing (src/chat/tool_calls.h) on hand-written model replies: each format whole,
// and streamed split at every byte (the deltas add up to the whole parse and never hold markup); format
// detection on the fixture templates; the grammars of tool_choice required (src/chat/tool_grammar.h).
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "chat/chat_template.h"
#include "chat/tool_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"

using ojson = nlohmann::ordered_json;

namespace tool_calls_test {
using namespace lctx::chat;

namespace {

std::string read_template(const std::string &name) {
    std::ifstream f(std::string(LCTX_FIXTURES_DIR) + "/templates/" + name, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

ChatParseOptions with(ToolFormat f, bool forced_open = false, ReasoningFormat r = ReasoningFormat::DeepSeek) {
    ChatParseOptions o;
    o.format = f;
    o.reasoning = r;
    o.thinking_forced_open = forced_open;
    return o;
}

// Arguments compared as JSON (the parser keeps the model's spacing).
ojson args(const ToolCall &c) {
    return ojson::parse(c.arguments);
}

struct Case {
    const char *what;
    ToolFormat format;
    std::string text;
    std::string content, reasoning;
    std::vector<std::pair<std::string, std::string>> calls;  // name, arguments (JSON)
    bool forced_open = false;
};

const std::vector<Case> &cases() {
    static const std::vector<Case> c = {
        {"hermes one call",
         ToolFormat::Hermes,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
         "",
         "",
         {{"get_weather", R"({"city":"Paris"})"}}},
        {"hermes text then two calls",
         ToolFormat::Hermes,
         "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": "
         "1}}\n</tool_call>\n<tool_call>\n{"
         "\"name\": \"b\", \"arguments\": {\"y\": [1, {\"z\": \"}\"}]}}\n</tool_call>",
         "Let me check.",
         "",
         {{"a", R"({"x":1})"}, {"b", R"({"y":[1,{"z":"}"}]})"}}},
        {"hermes no call",
         ToolFormat::Hermes,
         "Just text, <b>bold</b> and {braces}.",
         "Just text, <b>bold</b> and {braces}.",
         "",
         {}},
        {"hermes bad json is content",
         ToolFormat::Hermes,
         "<tool_call>\n{\"name\": oops}\n</tool_call>",
         "<tool_call>\n{\"name\": oops}\n</tool_call>",
         "",
         {}},
        {"hermes unclosed at end",
         ToolFormat::Hermes,
         "<tool_call>{\"name\": \"f\", \"arguments\": {}}",
         "",
         "",
         {{"f", "{}"}}},
        {"qwen3 thinking then call",
         ToolFormat::Hermes,
         "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": "
         "{\"q\": \"x\"}}\n</tool_call>",
         "",
         "The user wants weather.",
         {{"w", R"({"q":"x"})"}}},
        {"qwq forced open",
         ToolFormat::Hermes,
         "Hmm, think.\n</think>\n\nThe answer is 4.",
         "The answer is 4.",
         "Hmm, think.",
         {},
         true},
        {"arguments as a string",
         ToolFormat::Hermes,
         "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 2}\"}</tool_call>",
         "",
         "",
         {{"f", R"({"a":2})"}}},
        {"llama3 json",
         ToolFormat::Llama3,
         "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Tokyo\"}}",
         "",
         "",
         {{"get_weather", R"({"location":"Tokyo"})"}}},
        {"llama3 two calls",
         ToolFormat::Llama3,
         "{\"type\": \"function\", \"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": "
         "{\"k\": true}}",
         "",
         "",
         {{"a", "{}"}, {"b", R"({"k":true})"}}},
        {"llama3 text", ToolFormat::Llama3, "The weather is {sunny}.", "The weather is {sunny}.", "", {}},
        {"llama3 brace text", ToolFormat::Llama3, "{not json", "{not json", "", {}},
        {"llama3 python tag builtin",
         ToolFormat::Llama3,
         "<|python_tag|>brave_search.call(query=\"lctx\", count=3)",
         "",
         "",
         {{"brave_search", R"({"query":"lctx","count":3})"}}},
        {"llama3 python tag code",
         ToolFormat::Llama3,
         "Running.<|python_tag|>print(1+1)",
         "Running.",
         "",
         {{"python", R"j({"code":"print(1+1)"})j"}}},
        {"llama3 python tag json",
         ToolFormat::Llama3,
         "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": 1}}",
         "",
         "",
         {{"f", R"({"a":1})"}}},
        {"mistral nemo",
         ToolFormat::MistralNemo,
         "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": \"]\"}, \"id\": \"abcdefghi\"}, {\"name\": "
         "\"b\", "
         "\"arguments\": {}}]",
         "",
         "",
         {{"a", R"({"x":"]"})"}, {"b", "{}"}}},
        {"mistral nemo text first",
         ToolFormat::MistralNemo,
         "Sure. [TOOL_CALLS][{\"arguments\": {\"x\": 1}, \"name\": \"a\"}]",
         "Sure.",
         "",
         {{"a", R"({"x":1})"}}},
        {"mistral nemo text", ToolFormat::MistralNemo, "[1, 2] is a list.", "[1, 2] is a list.", "", {}},
        {"functionary 3.1",
         ToolFormat::FunctionaryV31,
         "I'll look.<function=search>{\"q\": \"a<b\"}</function><function=open>{\"id\": 3}</function>",
         "I'll look.",
         "",
         {{"search", R"({"q":"a<b"})"}, {"open", R"({"id":3})"}}},
        {"functionary 3.1 python",
         ToolFormat::FunctionaryV31,
         "<|python_tag|>x = 1",
         "",
         "",
         {{"python", R"({"code":"x = 1"})"}}},
        {"functionary 3.2 call",
         ToolFormat::FunctionaryV32,
         "get_weather\n{\"city\": \"Oslo\"}",
         "",
         "",
         {{"get_weather", R"({"city":"Oslo"})"}}},
        {"functionary 3.2 text and calls",
         ToolFormat::FunctionaryV32,
         "all\nChecking both.>>>a\n{\"x\": 1}>>>b\n{\"y\": 2}",
         "Checking both.",
         "",
         {{"a", R"({"x":1})"}, {"b", R"({"y":2})"}}},
        {"functionary 3.2 text", ToolFormat::FunctionaryV32, "all\nHello there.", "Hello there.", "", {}},
        {"command-r7b",
         ToolFormat::CommandR7B,
         "<|START_THINKING|>I should search.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", "
         "\"tool_name\": \"search\", \"parameters\": {\"q\": \"x\"}}\n]<|END_ACTION|>",
         "",
         "I should search.",
         {{"search", R"({"q":"x"})"}}},
        {"command-r7b response",
         ToolFormat::CommandR7B,
         "<|START_RESPONSE|>Hello!<|END_RESPONSE|>",
         "Hello!",
         "",
         {}},
        {"firefunction",
         ToolFormat::FireFunctionV2,
         " functools[{\"name\": \"a\", \"arguments\": {\"n\": 1}}, {\"name\": \"b\", \"arguments\": {}}]",
         "",
         "",
         {{"a", R"({"n":1})"}, {"b", "{}"}}},
        {"firefunction text", ToolFormat::FireFunctionV2, "Hi.", "Hi.", "", {}},
        {"gpt-oss call",
         ToolFormat::GptOss,
         "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
         "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Rome\"}",
         "",
         "Need weather.",
         {{"get_weather", R"({"city":"Rome"})"}}},
        {"gpt-oss final",
         ToolFormat::GptOss,
         "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.",
         "It is 4.",
         "Easy.",
         {}},
        {"generic call",
         ToolFormat::Generic,
         "{\"tool_call\": {\"name\": \"f\", \"arguments\": {\"a\": \"b\"}}}",
         "",
         "",
         {{"f", R"({"a":"b"})"}}},
        {"generic calls",
         ToolFormat::Generic,
         "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": {\"z\": "
         "0}}]}",
         "",
         "",
         {{"f", "{}"}, {"g", R"({"z":0})"}}},
        {"generic response",
         ToolFormat::Generic,
         "{\"response\": \"Hello \\\"you\\\" \\u00e9\\ud83d\\ude00\"}",
         "Hello \"you\" \xc3\xa9\xf0\x9f\x98\x80",
         "",
         {}},
        {"qwen3-coder xml",
         ToolFormat::Qwen3Coder,
         "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew "
         "York\n</parameter>\n<parameter="
         "days>\n3\n</parameter>\n<parameter=opts>\n{\"a\": "
         "[1]}\n</parameter>\n</function>\n</tool_call>\n<tool_"
         "call>\n<function=get_time>\n</function>\n</tool_call>",
         "I'll check.",
         "",
         {{"get_weather", R"({"city":"New York","days":3,"opts":{"a":[1]}})"}, {"get_time", "{}"}}},
        {"qwen3-coder json inside",
         ToolFormat::Qwen3Coder,
         "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>",
         "",
         "",
         {{"f", R"({"x":1})"}}},
        {"qwen3-coder multi-line text value",
         ToolFormat::Qwen3Coder,
         "<tool_call>\n<function=write>\n<parameter=text>\nline 1\nline 2 "
         "</parameter>\n</function>\n</tool_call>",
         "",
         "",
         {{"write", R"({"text":"line 1\nline 2 "})"}}},
        {"qwen3-coder broken",
         ToolFormat::Qwen3Coder,
         "<tool_call>\n<function=f>\n<oops>\n</tool_call>",
         "<tool_call>\n<function=f>\n<oops>\n</tool_call>",
         "",
         {}},
        {"deepseek r1 no tools",
         ToolFormat::ContentOnly,
         "<think>\nstep 1\nstep 2\n</think>\n\nDone.",
         "Done.",
         "step 1\nstep 2",
         {}},
        {"content only", ToolFormat::ContentOnly, "a <tool_call> b", "a <tool_call> b", "", {}},
    };
    return c;
}

void expect_case(const Case &c, const ChatParsed &p, const std::string &how) {
    EXPECT_EQ(p.content, c.content) << c.what << how;
    EXPECT_EQ(p.reasoning, c.reasoning) << c.what << how;
    ASSERT_EQ(p.tool_calls.size(), c.calls.size()) << c.what << how;
    for (size_t i = 0; i < c.calls.size(); ++i) {
        EXPECT_EQ(p.tool_calls[i].name, c.calls[i].first) << c.what << how;
        EXPECT_EQ(args(p.tool_calls[i]), ojson::parse(c.calls[i].second)) << c.what << how;
    }
}

// Markup no streamed content or reasoning piece may show.
const char *const kMarkup[] = {"<tool_call", "</tool_call",  "[TOOL_CALLS", "<think",        "</think",
                               "<function=", "<|python_tag", "<|START_",    "<|END_",        "<|channel",
                               "<|message",  "functools",    ">>>",         "\"tool_call\"", "\"response\""};

// Streams `text` in pieces cut at `cuts` and checks the deltas against the whole parse.
void expect_stream(const Case &c, const std::vector<size_t> &cuts, const std::string &how) {
    int ids = 0;
    ChatStreamParser sp(with(c.format, c.forced_open), [&] { return "id" + std::to_string(ids++); });
    std::string content, reasoning;
    std::vector<ToolCall> calls;
    auto take = [&](const ChatDelta &d) {
        content += d.content;
        reasoning += d.reasoning;
        for (const char *m : kMarkup) {
            if (c.content.find(m) == std::string::npos) {
                EXPECT_EQ(d.content.find(m), std::string::npos) << c.what << how << ": " << d.content;
            }
            if (c.reasoning.find(m) == std::string::npos) {
                EXPECT_EQ(d.reasoning.find(m), std::string::npos) << c.what << how << ": " << d.reasoning;
            }
        }
        for (const ToolCallDelta &t : d.tool_calls) {
            if (t.index == static_cast<int>(calls.size())) {
                ASSERT_FALSE(t.id.empty()) << c.what << how;
                ASSERT_FALSE(t.name.empty()) << c.what << how;
                calls.push_back({t.name, "", t.id});
            }
            ASSERT_LT(t.index, static_cast<int>(calls.size())) << c.what << how;
            calls[static_cast<size_t>(t.index)].arguments += t.arguments;
        }
    };
    size_t at = 0;
    for (size_t cut : cuts) {
        take(sp.push(std::string_view(c.text).substr(at, cut - at)));
        at = cut;
    }
    take(sp.push(std::string_view(c.text).substr(at)));
    take(sp.finish());
    ChatParsed streamed{content, reasoning, calls};
    expect_case(c, streamed, how);
    for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].id, "id" + std::to_string(i));
}

}  // namespace

TEST(ToolCalls, EveryFormatWhole) {
    for (const Case &c : cases())
        expect_case(c, chat_parse(c.text, with(c.format, c.forced_open), false), "");
}

TEST(ToolCalls, StreamedSplitAtEveryByte) {
    for (const Case &c : cases()) {
        for (size_t cut = 1; cut < c.text.size(); ++cut)
            expect_stream(c, {cut}, " (cut at " + std::to_string(cut) + ")");
        std::vector<size_t> every;
        for (size_t i = 1; i < c.text.size(); ++i) every.push_back(i);
        expect_stream(c, every, " (byte by byte)");
    }
}

TEST(ToolCalls, PartialArgumentsGrowAsWritten) {
    ChatStreamParser sp(with(ToolFormat::Hermes), [] { return std::string("call_1"); });
    EXPECT_TRUE(sp.push("<tool_call>\n{\"name\": \"f").empty());  // the name is not finished
    ChatDelta d = sp.push("\", \"arguments\": {\"a\"");
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].id, "call_1");
    EXPECT_EQ(d.tool_calls[0].name, "f");
    EXPECT_EQ(d.tool_calls[0].arguments, "{\"a\"");
    d = sp.push(": 1}}\n</tool");
    ASSERT_EQ(d.tool_calls.size(), 1u);
    EXPECT_EQ(d.tool_calls[0].name, "");
    EXPECT_EQ(d.tool_calls[0].arguments, ": 1}");
    EXPECT_TRUE(sp.push("_call>").empty());
    EXPECT_TRUE(sp.finish().empty());
}

TEST(ToolCalls, ReasoningNoneKeepsThink) {
    const ChatParsed p =
        chat_parse("<think>x</think>y", with(ToolFormat::ContentOnly, false, ReasoningFormat::None), false);
    EXPECT_EQ(p.content, "<think>x</think>y");
    EXPECT_EQ(p.reasoning, "");
    ReasoningFormat r;
    EXPECT_TRUE(reasoning_format_from_name("auto", r));
    EXPECT_EQ(r, ReasoningFormat::DeepSeek);
    EXPECT_TRUE(reasoning_format_from_name("none", r));
    EXPECT_EQ(r, ReasoningFormat::None);
    EXPECT_FALSE(reasoning_format_from_name("r1", r));
}

TEST(ToolCalls, UnfinishedThinkingIsReasoning) {
    const ChatParsed p = chat_parse("<think>still going", with(ToolFormat::Hermes), false);
    EXPECT_EQ(p.reasoning, "still going");
    EXPECT_EQ(p.content, "");
    EXPECT_TRUE(prompt_opens_thinking("<|im_start|>assistant\n<think>\n"));
    EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n"));
}

TEST(ToolCalls, FormatFromFixtureTemplates) {
    const std::pair<const char *, ToolFormat> expect[] = {
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolFormat::Hermes},
        {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolFormat::Hermes},
        {"Qwen-Qwen3-0.6B.jinja", ToolFormat::Hermes},
        {"Qwen-QwQ-32B.jinja", ToolFormat::Hermes},
        {"Qwen3-Coder.jinja", ToolFormat::Qwen3Coder},
        {"Qwen3.5-4B.jinja", ToolFormat::Qwen3Coder},
        {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", ToolFormat::Qwen3Coder},
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolFormat::Llama3},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolFormat::Llama3},
        {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolFormat::Llama3},
        {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolFormat::MistralNemo},
        {"meetkai-functionary-medium-v3.1.jinja", ToolFormat::FunctionaryV31},
        {"meetkai-functionary-medium-v3.2.jinja", ToolFormat::FunctionaryV32},
        {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", ToolFormat::CommandR7B},
        {"fireworks-ai-llama-3-firefunction-v2.jinja", ToolFormat::FireFunctionV2},
        {"openai-gpt-oss-120b.jinja", ToolFormat::GptOss},
        {"google-gemma-2-2b-it.jinja", ToolFormat::Generic},
        {"microsoft-Phi-3.5-mini-instruct.jinja", ToolFormat::Generic},
    };
    for (const auto &[file, format] : expect) {
        const std::string src = read_template(file);
        ASSERT_FALSE(src.empty()) << file;
        EXPECT_EQ(tool_format_detect(src), format)
            << file << ": " << tool_format_name(tool_format_detect(src));
    }
}

TEST(ToolCalls, ArgumentsAsTemplatesReadThem) {
    auto probe = [](const char *file) {
        const std::string src = read_template(file);
        return template_wants_string_arguments([&](const ojson &msgs) {
            JinjaChatOptions o;
            o.add_generation_prompt = false;
            return jinja_chat_render(src, msgs, o);
        });
    };
    // Joins strings with them: the JSON text; writes them with tojson: an object.
    EXPECT_TRUE(probe("meetkai-functionary-medium-v3.2.jinja"));
    EXPECT_FALSE(probe("Qwen-Qwen2.5-7B-Instruct.jinja"));
    EXPECT_FALSE(probe("meta-llama-Llama-3.1-8B-Instruct.jinja"));
}

TEST(ToolCalls, IdsForMistralAreNineAlphanumerics) {
    const std::string a = tool_call_id(ToolFormat::MistralNemo, 1),
                      b = tool_call_id(ToolFormat::MistralNemo, 2);
    EXPECT_EQ(a.size(), 9u);
    EXPECT_NE(a, b);
    for (char c : a) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)));
    EXPECT_EQ(tool_call_id(ToolFormat::Hermes, 1).rfind("call_", 0), 0u);
}

// ---- grammars ----

namespace {
std::vector<uint32_t> cps(const std::string &s) {
    std::vector<uint32_t> out;
    for (unsigned char c : s) out.push_back(c);  // ASCII texts
    return out;
}
bool accepts(const std::string &gbnf, const std::string &text) {
    auto g = std::make_shared<const lctx::grammar::Grammar>(lctx::grammar::parse_gbnf(gbnf));
    return lctx::grammar::match_text(g, cps(text)).accepted;
}
const std::vector<ToolSpec> &weather_tools() {
    static const std::vector<ToolSpec> t = {
        {"get_weather",
         ojson::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})")},
        {"get_time", ojson::object()},
    };
    return t;
}
}  // namespace

TEST(ToolGrammar, EachFormatAcceptsItsCallsOnly) {
    struct G {
        ToolFormat f;
        std::string good, bad;
    };
    const G gs[] = {
        {ToolFormat::Hermes,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
         "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"},
        {ToolFormat::Llama3, "{\"name\": \"get_time\", \"parameters\": {}}",
         "{\"name\": \"get_weather\", \"parameters\": {}}"},
        {ToolFormat::MistralNemo, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}]",
         "[TOOL_CALLS][{\"name\": \"get_time\"}]"},
        {ToolFormat::FireFunctionV2, " functools[{\"name\": \"get_time\", \"arguments\": {}}]",
         " functools[{\"name\": \"other\", \"arguments\": {}}]"},
        {ToolFormat::CommandR7B,
         "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"get_time\", \"parameters\": "
         "{}}]<|END_ACTION|>",
         "<|START_ACTION|>[{\"tool_name\": \"get_time\", \"parameters\": {}}]<|END_ACTION|>"},
        {ToolFormat::FunctionaryV31, "<function=get_weather>{\"city\": \"Oslo\"}</function>",
         "<function=get_weather>{\"town\": \"Oslo\"}</function>"},
        {ToolFormat::FunctionaryV32, "get_weather\n{\"city\": \"Oslo\"}", "get_weather\n{}"},
        {ToolFormat::GptOss, "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}",
         "<|channel|>final<|message|>{}"},
        {ToolFormat::Qwen3Coder, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
         "<tool_call>\n<function=get_time>\n</function>\n</tool_call>"},
        {ToolFormat::Generic, "{\"tool_call\": {\"name\": \"get_time\", \"arguments\": {}}}",
         "{\"response\": \"hi\"}"},
    };
    for (const G &g : gs) {
        const std::string gbnf = tool_call_grammar(g.f, weather_tools(), false);
        EXPECT_TRUE(accepts(gbnf, g.good)) << tool_format_name(g.f) << "\n" << gbnf;
        EXPECT_FALSE(accepts(gbnf, g.bad)) << tool_format_name(g.f);
        // What the grammar lets through, the parser reads as that call.
        const ChatParsed p = chat_parse(g.good, with(g.f), false);
        ASSERT_EQ(p.tool_calls.size(), 1u) << tool_format_name(g.f);
        EXPECT_TRUE(p.tool_calls[0].name == "get_time" || p.tool_calls[0].name == "get_weather");
    }
}

TEST(ToolGrammar, ParallelAndResponse) {
    const std::string h = tool_call_grammar(ToolFormat::Hermes, weather_tools(), true);
    EXPECT_TRUE(
        accepts(h,
                "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{"
                "\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
    const std::string one = tool_call_grammar(ToolFormat::Hermes, weather_tools(), false);
    EXPECT_FALSE(
        accepts(one,
                "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{"
                "\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
    const std::string gen = tool_call_grammar(ToolFormat::Generic, weather_tools(), false, true);
    EXPECT_TRUE(accepts(gen, "{\"response\": \"hi\"}"));
    EXPECT_THROW(tool_call_grammar(ToolFormat::Hermes, {}, false), std::invalid_argument);
    EXPECT_THROW(
        tool_call_grammar(ToolFormat::Hermes, {{"f", ojson::parse(R"({"type":"nonsense"})")}}, false),
        std::exception);
}

TEST(ToolGrammar, PrefixRulesLeavesLiteralsAlone) {
    EXPECT_EQ(gbnf_prefix_rules("root ::= \"a b\" [a-z] x{2,3} # c d\nx ::= \"\\\"q\" root\n", "p-"),
              "p-root ::= \"a b\" [a-z] p-x{2,3} # c d\np-x ::= \"\\\"q\" p-root\n");
}

// A reply is not always valid UTF-8 (a byte-level vocabulary emits any byte): code passed to the python tool
// keeps its text with U+FFFD for the bad bytes, and the parse neither throws nor drops the call (a fuzzer
// finding: fuzz/corpus/tool_calls/regression_invalid_utf8).
TEST(ToolCalls, InvalidUtf8InAPythonCallIsReplacedNotThrown) {
    ChatParseOptions o;
    o.format = ToolFormat::Llama3;
    const std::string text = "<|python_tag|>print(\"a\xff\xfe b\")";
    ChatParsed r;
    ASSERT_NO_THROW(r = chat_parse(text, o, false));
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].name, "python");
    const auto args = nlohmann::json::parse(r.tool_calls[0].arguments);
    EXPECT_EQ(args.at("code").get<std::string>(), "print(\"a\xEF\xBF\xBD\xEF\xBF\xBD b\")");
    ASSERT_NO_THROW(chat_parse(text, o, true));
}

// The same in Qwen3-Coder's XML parameters, whose values are copied from the reply into the arguments' JSON.
TEST(ToolCalls, InvalidUtf8InAnXmlParameterIsReplacedNotThrown) {
    ChatParseOptions o;
    o.format = ToolFormat::Qwen3Coder;
    const std::string text =
        "<tool_call>\n<function=f>\n<parameter=city>\nOs\xfflo\n</parameter>\n</function>\n</tool_call>";
    ChatParsed r;
    ASSERT_NO_THROW(r = chat_parse(text, o, false));
    ASSERT_EQ(r.tool_calls.size(), 1u);
    const auto args = nlohmann::json::parse(r.tool_calls[0].arguments);
    EXPECT_EQ(args.at("city").get<std::string>(), "Os\xEF\xBF\xBDlo");
    ASSERT_NO_THROW(chat_parse(text, o, true));
}
}  // namespace tool_calls_test
