#include "server/web_page.h"

namespace lctx::server {

const char *web_page_html() {
    return R"lctxhtml(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lctx</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 0; display: flex; flex-direction: column; height: 100vh; }
  header { padding: 8px 16px; background: #223; color: #eef; display: flex; justify-content: space-between; }
  #log { flex: 1; overflow-y: auto; padding: 16px; }
  .msg { margin: 8px 0; padding: 8px 12px; border-radius: 8px; white-space: pre-wrap; max-width: 80ch; }
  .user { background: #dde8ff; margin-left: auto; }
  .assistant { background: #eee; }
  .error { background: #fdd; }
  form { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid #ccc; }
  textarea { flex: 1; font: inherit; padding: 6px; }
  button { font: inherit; padding: 6px 16px; }
</style>
</head>
<body>
<header><span id="model">lctx</span><span id="speed"></span></header>
<div id="log"></div>
<form id="form">
  <textarea id="input" rows="2" placeholder="Say something (Enter sends, Shift+Enter for a new line)"></textarea>
  <button id="send" type="submit">Send</button>
</form>
<script>
"use strict";
const messages = [];
const log = document.getElementById("log");
const input = document.getElementById("input");
const sendButton = document.getElementById("send");
const speed = document.getElementById("speed");
let apiKey = new URLSearchParams(location.search).get("key") || "";
function headers() {
  const h = { "Content-Type": "application/json" };
  if (apiKey) h["Authorization"] = "Bearer " + apiKey;
  return h;
}
fetch("/v1/models", { headers: headers() }).then(r => r.json()).then(j => {
  if (j.data && j.data.length) document.getElementById("model").textContent = "lctx: " + j.data[0].id;
}).catch(() => {});
function bubble(role, text) {
  const d = document.createElement("div");
  d.className = "msg " + role;
  d.textContent = text;
  log.appendChild(d);
  log.scrollTop = log.scrollHeight;
  return d;
}
async function send(text) {
  messages.push({ role: "user", content: text });
  bubble("user", text);
  const out = bubble("assistant", "");
  sendButton.disabled = true;
  let reply = "", tokens = 0, first = 0;
  const start = performance.now();
  try {
    const res = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(),
      body: JSON.stringify({ messages, stream: true, max_tokens: 256,
                             stream_options: { include_usage: true } })
    });
    if (!res.ok) throw new Error((await res.json()).error.message);
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n\n")) >= 0) {
        const ev = buf.slice(0, nl); buf = buf.slice(nl + 2);
        if (!ev.startsWith("data: ")) continue;
        const data = ev.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        if (j.usage) tokens = j.usage.completion_tokens;
        const c = j.choices && j.choices[0];
        if (c && c.delta && c.delta.content) {
          if (!first) first = performance.now();
          reply += c.delta.content;
          out.textContent = reply;
          log.scrollTop = log.scrollHeight;
        }
      }
    }
    const secs = (performance.now() - (first || start)) / 1000;
    speed.textContent = tokens + " tokens, " + (secs > 0 ? (tokens / secs).toFixed(1) : "-") + " tokens/s";
    messages.push({ role: "assistant", content: reply });
    out.dataset.done = "1";
  } catch (e) {
    out.className = "msg error";
    out.textContent = "error: " + e.message;
  }
  sendButton.disabled = false;
}
document.getElementById("form").addEventListener("submit", e => {
  e.preventDefault();
  const t = input.value.trim();
  if (!t) return;
  input.value = "";
  send(t);
});
input.addEventListener("keydown", e => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); document.getElementById("form").requestSubmit(); }
});
</script>
</body>
</html>
)lctxhtml";
}

}  // namespace lctx::server
