// The official OpenAI client library (npm `openai`) against lctx serve: non-streaming and streaming
// completions and chat completions, and the Responses API (whole and streamed). Usage: node openai_client.mjs BASE_URL. Prints "ok" and exits 0, or
// prints what failed and exits 1.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "unused", maxRetries: 0 });
function check(cond, what) {
  if (!cond) { console.log("failed: " + what); process.exit(1); }
}
const models = await client.models.list();
check(models.data.length === 1 && models.data[0].id === "stories260K.gguf", "models.list");

const chat = await client.chat.completions.create({
  model: "stories260K.gguf", messages: [{ role: "user", content: "Hello" }], max_tokens: 12, temperature: 0 });
check(chat.choices[0].message.role === "assistant", "chat role");
check(typeof chat.choices[0].message.content === "string" && chat.choices[0].message.content.length > 0, "chat text");
check(chat.usage.completion_tokens === 12, "chat usage");

let streamed = "", finish = null, usage = null;
const stream = await client.chat.completions.create({
  model: "stories260K.gguf", messages: [{ role: "user", content: "Hello" }], max_tokens: 12, temperature: 0,
  stream: true, stream_options: { include_usage: true } });
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta && c.delta.content) streamed += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
check(streamed === chat.choices[0].message.content, "streamed chat text equals the non-streamed one");
check(finish === "length", "stream finish_reason");
check(usage && usage.completion_tokens === 12, "stream usage");

const comp = await client.completions.create({
  model: "stories260K.gguf", prompt: "Once upon a time", max_tokens: 8, temperature: 0 });
check(comp.choices[0].text.length > 0, "completion text");
let ctext = "";
for await (const chunk of await client.completions.create({
  model: "stories260K.gguf", prompt: "Once upon a time", max_tokens: 8, temperature: 0, stream: true })) {
  ctext += chunk.choices.length ? chunk.choices[0].text : "";
}
check(ctext === comp.choices[0].text, "streamed completion text");

// Responses: the SDK's output_text helper and its typed stream events.
const resp = await client.responses.create({
  model: "stories260K.gguf", instructions: "Be brief.", input: "Hello", max_output_tokens: 12, temperature: 0 });
check(resp.object === "response" && resp.output[0].role === "assistant", "responses object");
check(typeof resp.output_text === "string" && resp.output_text.length > 0, "responses output_text");
check(resp.usage.output_tokens === 12 && resp.status === "incomplete", "responses usage and status");
let rtext = "", last = null, seq = -1;
for await (const ev of await client.responses.create({
  model: "stories260K.gguf", instructions: "Be brief.", input: "Hello", max_output_tokens: 12, temperature: 0,
  stream: true })) {
  check(ev.sequence_number === seq + 1, "responses stream sequence_number");
  seq = ev.sequence_number;
  if (ev.type === "response.output_text.delta") rtext += ev.delta;
  if (ev.type === "response.completed" || ev.type === "response.incomplete") last = ev.response;
}
check(rtext === resp.output_text, "streamed responses text equals the non-streamed one");
check(last && last.output[0].content[0].text === rtext, "responses final event");

try {
  await client.completions.create({ model: "x", prompt: "a", max_tokens: -3 });
  check(false, "a bad request must throw");
} catch (e) {
  check(e.status === 400, "bad request status " + e.status);
}
console.log("ok");
