// Fuzzes the parsing of a model's reply into content, reasoning and tool calls (src/chat/tool_calls.h):
// the text is what a model (or whoever fills its context) writes. Input: byte 0 picks the format (low 4
// bits), 0x10 says the prompt opened <think>, 0x20 turns reasoning off; byte 1 is where the streamed copy
// is cut (a fraction of the text); the rest is the reply. Checks: a whole parse gives calls with a name and
// arguments that are a JSON object; the deltas of a stream, cut at that point and fed again byte by byte,
// add up to what the stream parser reports, and every call streamed got an id.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/tool_calls.h"
#include "fuzz_util.h"

using namespace lctx::chat;

namespace {
[[noreturn]] void fail(const char *what) {
    std::fprintf(stderr, "fuzz_tool_calls: %s\n", what);
    std::abort();
}

void check_stream(const std::string &text, const ChatParseOptions &o, size_t cut, bool bytewise) {
    int ids = 0;
    ChatStreamParser sp(o, [&] { return "id" + std::to_string(ids++); });
    std::string content, reasoning;
    std::vector<ToolCall> calls;
    auto take = [&](const ChatDelta &d) {
        content += d.content;
        reasoning += d.reasoning;
        for (const ToolCallDelta &t : d.tool_calls) {
            if (t.index == static_cast<int>(calls.size())) {
                if (t.id.empty()) fail("a new streamed call without an id");
                calls.push_back({t.name, "", t.id});
            }
            if (t.index < 0 || t.index >= static_cast<int>(calls.size()))
                fail("a delta for a call never opened");
            calls[static_cast<size_t>(t.index)].arguments += t.arguments;
        }
    };
    if (bytewise) {
        for (char c : text) take(sp.push(std::string(1, c)));
    } else {
        take(sp.push(text.substr(0, cut)));
        take(sp.push(text.substr(cut)));
    }
    take(sp.finish());
    const ChatParsed &r = sp.result();
    if (r.content != content || r.reasoning != reasoning || r.tool_calls.size() != calls.size())
        fail("the deltas do not add up to the stream's result");
    for (size_t i = 0; i < calls.size(); ++i)
        if (calls[i].name != r.tool_calls[i].name || calls[i].arguments != r.tool_calls[i].arguments ||
            calls[i].id != r.tool_calls[i].id)
            fail("a streamed call differs from the stream's result");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lctx::fuzz::quiet_log();
    if (size < 2 || size > (64u << 10)) return 0;
    ChatParseOptions o;
    o.format = static_cast<ToolFormat>((data[0] & 0x0f) % 11);
    o.thinking_forced_open = (data[0] & 0x10) != 0;
    o.reasoning = (data[0] & 0x20) ? ReasoningFormat::None : ReasoningFormat::DeepSeek;
    const std::string text(reinterpret_cast<const char *>(data) + 2, size - 2);
    const size_t cut = text.size() * data[1] / 255;

    const ChatParsed whole = chat_parse(text, o, false);
    for (const ToolCall &c : whole.tool_calls) {
        if (c.name.empty()) fail("a call without a name");
        const auto args = nlohmann::json::parse(c.arguments, nullptr, false);
        if (args.is_discarded() || !args.is_object()) fail("a call's arguments are not a JSON object");
    }
    chat_parse(text.substr(0, cut), o, true);
    check_stream(text, o, cut, false);
    if (text.size() <= 512) check_stream(text, o, cut, true);
    return 0;
}
