// The official OpenAI client library (npm `openai`) calling tools on lctx serve: a forced call whole, the
// same call streamed through the client's stream helper (chat.completions.stream, which assembles
// delta.tool_calls), and the tool's result sent back. Usage: node openai_tools.mjs BASE_URL. Prints "ok" and
// exits 0, or prints what failed and exits 1.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "unused", maxRetries: 0 });
function check(cond, what) {
  if (!cond) { console.log("failed: " + what); process.exit(1); }
}
const tools = [
  { type: "function", function: { name: "get_weather", description: "Weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", enum: ["Paris", "Oslo"] } },
                  required: ["city"] } } },
];
const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const base = { model: "stories260K.gguf", messages, tools, tool_choice: "required", temperature: 0, max_tokens: 120 };

const whole = await client.chat.completions.create(base);
const msg = whole.choices[0].message;
check(whole.choices[0].finish_reason === "tool_calls", "finish_reason " + whole.choices[0].finish_reason);
check(Array.isArray(msg.tool_calls) && msg.tool_calls.length === 1, "one tool call: " + JSON.stringify(msg));
const call = msg.tool_calls[0];
check(call.type === "function" && typeof call.id === "string" && call.id.length > 0, "call id and type");
check(call.function.name === "get_weather", "call name " + call.function.name);
const args = JSON.parse(call.function.arguments);
check(args.city === "Paris" || args.city === "Oslo", "call arguments " + call.function.arguments);

// The stream helper: events per argument piece, and the final completion assembled from the deltas.
let argsDone = null, pieces = 0;
const stream = client.chat.completions.stream(base);
stream.on("tool_calls.function.arguments.delta", () => { pieces++; });
stream.on("tool_calls.function.arguments.done", (e) => { argsDone = e; });
const final = await stream.finalChatCompletion();
const scall = final.choices[0].message.tool_calls;
check(final.choices[0].finish_reason === "tool_calls", "streamed finish_reason " + final.choices[0].finish_reason);
check(Array.isArray(scall) && scall.length === 1, "streamed tool calls: " + JSON.stringify(final.choices[0].message));
check(scall[0].function.name === call.function.name, "streamed name");
check(scall[0].function.arguments === call.function.arguments, "streamed arguments " + scall[0].function.arguments);
check(scall[0].id && scall[0].id.length > 0, "streamed id");
check(!final.choices[0].message.content, "streamed content is empty: " + final.choices[0].message.content);
check(argsDone && argsDone.name === "get_weather" && argsDone.arguments === call.function.arguments,
      "arguments.done event " + JSON.stringify(argsDone));
check(pieces >= 1, "argument delta events");

// The tool's result goes back; the server renders it and answers.
const after = await client.chat.completions.create({
  model: "stories260K.gguf", temperature: 0, max_tokens: 8, tools,
  messages: [...messages, msg, { role: "tool", tool_call_id: call.id, content: "18 degrees, sunny" }] });
check(typeof after.choices[0].message.content === "string", "reply after the tool result");

try {
  await client.chat.completions.create({ ...base, tool_choice: "sometimes" });
  check(false, "a bad tool_choice must throw");
} catch (e) {
  check(e.status === 400, "bad tool_choice status " + e.status);
}
console.log("ok");
