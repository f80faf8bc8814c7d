// Drives a headless chromium through the DevTools protocol: opens the chat page, types a message,
// presses Send, and waits for the streamed reply to finish. Prints the reply's text and the speed line
// as JSON and exits 0, or says what failed and exits 1.
// Usage: node --experimental-websocket browser_chat.mjs CHROMIUM PAGE_URL
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [browser, url] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "lctx-chromium-"));
const chrome = spawn(browser, ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
                               "--user-data-dir=" + profile, "about:blank"], { stdio: ["ignore", "ignore", "pipe"] });
// Best effort: chromium may still be writing its profile as it dies.
function cleanup() {
  chrome.kill("SIGKILL");
  try { rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }); } catch (e) {}
}
function fail(what) {
  console.log("failed: " + what);
  cleanup();
  process.exit(1);
}
setTimeout(() => fail("timed out"), 40000).unref();

// The DevTools port is printed on stderr: "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/...".
const port = await new Promise((resolve) => {
  let err = "";
  chrome.stderr.on("data", (d) => {
    err += d;
    const m = err.match(/DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//);
    if (m) resolve(m[1]);
  });
  chrome.on("exit", () => fail("chromium exited: " + err.slice(-500)));
});
const pages = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
const page = pages.find((p) => p.type === "page");
if (!page) fail("no page target");
const ws = new WebSocket(page.webSocketDebuggerUrl);
await new Promise((r, j) => { ws.onopen = r; ws.onerror = () => j(new Error("websocket")); });
let nextId = 1;
const waiting = new Map();
ws.onmessage = (ev) => {
  const msg = JSON.parse(ev.data);
  if (msg.id && waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); }
};
function send(method, params = {}) {
  const id = nextId++;
  ws.send(JSON.stringify({ id, method, params }));
  return new Promise((r) => waiting.set(id, r));
}
async function evaluate(expr) {
  const r = await send("Runtime.evaluate", { expression: expr, returnByValue: true, awaitPromise: true });
  return r.result && r.result.result ? r.result.result.value : undefined;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

await send("Page.enable");
await send("Runtime.enable");
await send("Page.navigate", { url });
for (let i = 0; i < 100 && (await evaluate("document.readyState")) !== "complete"; ++i) await sleep(50);
// Like a user: type into the box and press the button.
await evaluate(`document.getElementById("input").value = "Hello there"; document.getElementById("send").click(); true`);
let seenPartial = false;
let done = false;
for (let i = 0; i < 600 && !done; ++i) {
  const s = await evaluate(`(() => { const a = document.querySelectorAll(".msg.assistant, .msg.error");
    const l = a[a.length - 1]; return l ? JSON.stringify({ text: l.textContent, done: l.dataset.done === "1",
    error: l.className.includes("error") }) : null; })()`);
  if (s) {
    const st = JSON.parse(s);
    if (st.error) fail("the page shows an error: " + st.text);
    if (st.text && !st.done) seenPartial = true;
    done = st.done;
  }
  if (!done) await sleep(20);
}
if (!done) fail("no finished reply");
const out = await evaluate(`JSON.stringify({ model: document.getElementById("model").textContent,
  speed: document.getElementById("speed").textContent,
  reply: [...document.querySelectorAll(".msg.assistant")].pop().textContent })`);
console.log(JSON.stringify({ ...JSON.parse(out), seenPartial }));
ws.close();
cleanup();
process.exit(0);
