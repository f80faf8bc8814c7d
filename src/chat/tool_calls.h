// A model's reply split into what an OpenAI client expects: content, reasoning (`reasoning_content`) and
// tool calls. The format is recognized from the chat template's text (as newer llama.cpp's chat layer
// does), each format has its own parser, and every parser works on the whole text so far: `partial` says
// the text may still grow, so whatever could still turn into markup is held back and an unfinished tool
// call shows only what is certain (its name once written, the part of its arguments written so far).
// ChatStreamParser turns those successive parses into deltas (streaming). Pure functions, no model.
//
// Formats (what the model writes):
//   hermes          <tool_call>{"name": N, "arguments": {..}}</tool_call>  (Hermes 2 Pro, Qwen 2.5 / 3, QwQ)
//   qwen3-coder     <tool_call><function=N><parameter=K>\nvalue\n</parameter></function></tool_call>
//                   (Qwen3-Coder, Qwen 3.5, Nemotron 3; the hermes form inside <tool_call> is read too)
//   llama3          {"name": N, "parameters": {..}}, or <|python_tag|> then such an object, a builtin
//                   call name.call(k="v", ..) or python code (Llama 3.1 / 3.2 / 3.3)
//   mistral-nemo    [TOOL_CALLS][{"name": N, "arguments": {..}, "id": ..}, ..]
//   functionary-3.1 <function=N>{..}</function>, and <|python_tag|> code
//   functionary-3.2 N\n{..}>>>N2\n{..} (the prompt ends with ">>>"; the name "all" is plain content)
//   command-r7b     <|START_THINKING|>..<|END_THINKING|><|START_ACTION|>[{"tool_call_id", "tool_name",
//                   "parameters"}, ..]<|END_ACTION|>, content in <|START_RESPONSE|>..<|END_RESPONSE|>
//   firefunction-2  " functools[{"name": N, "arguments": {..}}, ..]"
//   gpt-oss         <|channel|>analysis<|message|>..<|end|><|start|>assistant<|channel|>commentary
//                   to=functions.N <|constrain|>json<|message|>{..}<|call|>; final channel = content
//   generic         a JSON reply {"tool_call": {"name", "arguments"}}, {"tool_calls": [..]} or
//                   {"response": "text"} (templates with no tool format of their own: a system message
//                   asks for it and a grammar keeps the reply to it)
// Reasoning: <think>..</think> at the start of the reply (or from the start when the prompt opened <think>).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace lctx::chat {

enum class ToolFormat {
    ContentOnly,  // no tool parsing (no tools in the request, or tool_choice none)
    Generic,
    Hermes,
    Llama3,
    MistralNemo,
    FunctionaryV31,
    FunctionaryV32,
    CommandR7B,
    FireFunctionV2,
    GptOss,
    Qwen3Coder,
};

const char *tool_format_name(ToolFormat f);
// The format a template's text stands for (Generic when it shows none of the known markers).
ToolFormat tool_format_detect(std::string_view template_source);

enum class ReasoningFormat {
    None,      // <think> stays in the content
    DeepSeek,  // <think>..</think> goes to reasoning_content
};
// "none", "deepseek" or "auto" (= deepseek, llama-server's default); false for another name.
bool reasoning_format_from_name(std::string_view name, ReasoningFormat &out);

struct ToolCall {
    std::string name;
    std::string arguments;  // JSON text (an object), as the model wrote it; partial: a prefix of it
    std::string id;         // filled in by whoever answers (ChatStreamParser, the server)
};

struct ChatParsed {
    std::string content, reasoning;
    std::vector<ToolCall> tool_calls;
};

struct ChatParseOptions {
    ToolFormat format = ToolFormat::ContentOnly;
    ReasoningFormat reasoning = ReasoningFormat::DeepSeek;
    bool thinking_forced_open = false;  // the prompt ended inside <think> (the reply starts in reasoning)
};

// Parses a reply. Whole (partial false): markup that does not form a valid call is content. Partial: the
// text may continue, and every field of the result is a prefix of what a longer text parses to (as long
// as the calls the text holds turn out valid).
ChatParsed chat_parse(std::string_view text, const ChatParseOptions &opts, bool partial);

// Whether the prompt a template rendered leaves the reply inside <think> (it ends with "<think>" and
// blanks): then the reply's text starts as reasoning.
bool prompt_opens_thinking(std::string_view prompt);

// What a streamed reply adds: content and reasoning pieces, tool-call pieces (index, and on a call's
// first piece its id and name, then argument pieces).
struct ToolCallDelta {
    int index = 0;
    std::string id, name, arguments;
};
struct ChatDelta {
    std::string content, reasoning;
    std::vector<ToolCallDelta> tool_calls;
    bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

// Streams one reply: push() each piece of text as it comes, finish() at the end. The deltas concatenated
// equal result() (the whole parse), and no delta holds markup: a piece that could still start a marker
// waits until it is known not to. New tool calls get their id from `make_id`.
class ChatStreamParser {
  public:
    ChatStreamParser(ChatParseOptions opts, std::function<std::string()> make_id);
    ChatDelta push(std::string_view piece);
    ChatDelta finish();
    // The whole parse (after finish(): of the final text), ids included.
    const ChatParsed &result() const { return sent_; }
    const std::string &text() const { return text_; }

  private:
    ChatDelta advance(const ChatParsed &now);
    ChatParseOptions opts_;
    std::function<std::string()> make_id_;
    std::string text_;
    ChatParsed sent_;  // what the deltas so far add up to
};

// Tool calls in a conversation's assistant messages as chat templates read them: the arguments an object
// (most templates write them with tojson) or the JSON text (templates that join strings with them).
// Detected by rendering a probe conversation with `render` (returns the prompt, or throws).
bool template_wants_string_arguments(
    const std::function<std::string(const nlohmann::ordered_json &messages)> &render);

// A random tool-call id: 9 letters and digits for mistral-nemo (its template insists), else "call_" and 24.
std::string tool_call_id(ToolFormat f, uint64_t random);

}  // namespace lctx::chat
