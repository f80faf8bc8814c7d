#!/usr/bin/env python3
"""Speed of `lctx serve` (streamed requests at temperature 0, standard library only):
  1. one stream of N tokens: its tokens/s;
  2. 8 concurrent streams: their aggregate tokens/s, and the ratio to one stream;
  3. the time to the first token of a short request, idle and sent together with 7 prompts of ~390 tokens.

  scripts/serve-bench.py [-m MODEL] [-t THREADS] [-n TOKENS] [-b STEP_TOKENS] [-r ROUNDS] [--url URL]
                         [--llama-server PATH]
With --embd (an embedding model) it measures /v1/embeddings instead, and with --rerank (a reranker) /v1/rerank:
requests per second with 1, 4 and 16 concurrent clients, each sending -n requests in turn (an embedding request:
one text of ~32 tokens; a rerank request: a query and 8 documents of ~32 tokens).
The one-stream and 8-stream runs alternate for -r rounds (default 3) and each figure is the median of its
rounds, so a burst of noise on a shared machine moves one round, not the ratio.
Without --url it starts build/bin/lctx serve itself (-np 8) on a free port; with --llama-server it starts that
llama-server binary with the same options instead (scripts/install-peer.sh --native --server builds one from the
llama.cpp source node-llama-cpp ships), so the two servers are measured by one client on one machine: run the
two in turn, alternating. The issue's figures use a synthetic smollm-135m Q8_0:
  build/bin/lctx synth --shape smollm-135m --type Q8_0 -o /tmp/smollm.gguf
"""
import argparse, http.client, json, os, socket, statistics, subprocess, sys, threading, time, urllib.parse

def stream(url, body):
    """Sends a streamed completion; returns (seconds to the first text, total seconds, tokens)."""
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    body = dict(body, stream=True, stream_options={"include_usage": True}, temperature=0)
    t0 = time.monotonic()
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    first, tokens, events = None, 0, 0
    for line in r:
        line = line.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if ev.get("usage"):
            tokens = ev["usage"]["completion_tokens"]
        if ev.get("choices") and ev["choices"][0].get("text"):
            events += 1
            if first is None:
                first = time.monotonic() - t0
    c.close()
    # A server that sends no usage chunk streams one event per token (llama-server does both).
    return first, time.monotonic() - t0, tokens or events

def concurrent(url, bodies):
    out = [None] * len(bodies)
    def run(i):
        out[i] = stream(url, bodies[i])
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    t0 = time.monotonic()
    for t in ts: t.start()
    for t in ts: t.join()
    return out, time.monotonic() - t0

def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=os.path.join(root, "models", "stories260K.gguf"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-n", "--tokens", type=int, default=128,
                    help="tokens per stream (with --embd / --rerank: requests per client)")
    ap.add_argument("-c", "--ctx", type=int, default=8192)
    ap.add_argument("-b", "--batch-size", type=int, default=0, help="lctx serve -b (0: its default)")
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("--url")
    ap.add_argument("--lctx", default=os.path.join(root, "build", "bin", "lctx"),
                    help="the lctx binary to start (default build/bin/lctx; another build for before/after runs)")
    ap.add_argument("--embd", action="store_true", help="measure /v1/embeddings (an embedding model)")
    ap.add_argument("--rerank", action="store_true", help="measure /v1/rerank (a reranker)")
    ap.add_argument("--llama-server", metavar="PATH",
                    help="start this llama-server binary (same options) instead of lctx serve")
    a = ap.parse_args()
    proc = None
    url = a.url
    if not url:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        common = ["-m", a.model, "--port", str(port), "-np", "8", "-c", str(a.ctx), "-t", str(a.threads),
                  "--log-disable"] + (["-b", str(a.batch_size)] if a.batch_size else [])
        # (llama-server serves embeddings and reranking only when told; lctx serve by the model's pooling)
        extra = (["--embeddings"] if a.embd else ["--reranking"] if a.rerank else []) if a.llama_server else []
        cmd = [a.llama_server] + common + extra if a.llama_server else [a.lctx, "serve"] + common
        print(f"server: {' '.join(cmd)}", flush=True)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2); c.request("GET", "/health")
                if c.getresponse().status == 200: break
            except OSError:
                pass
            time.sleep(0.1)
    try:
        if a.embd or a.rerank:
            return embedding_requests(url, a)
        gen = {"prompt": "Once upon a time", "max_tokens": a.tokens}
        stream(url, dict(gen, max_tokens=8))  # warm-up
        ones, aggs = [], []
        for k in range(max(1, a.rounds)):
            _, secs, toks = stream(url, gen)
            ones.append(toks / secs)
            res, wall = concurrent(url, [dict(gen, prompt=f"Story {i}: once upon a time") for i in range(8)])
            aggs.append(sum(r[2] for r in res) / wall)
            print(f"round {k + 1}: 1 stream {ones[-1]:.1f} tokens/s ({toks} tokens), 8 streams {aggs[-1]:.1f} "
                  f"tokens/s aggregate ({sum(r[2] for r in res)} tokens)", flush=True)
        one, agg = statistics.median(ones), statistics.median(aggs)
        print(f"1 stream:  {one:.1f} tokens/s (median of {len(ones)})")
        print(f"8 streams: {agg:.1f} tokens/s aggregate (median of {len(aggs)}): {agg / one:.2f}x one stream")
        short = {"prompt": "Hello", "max_tokens": 4}
        idle = stream(url, short)[0]
        sentence = "the quick brown fox jumps over the lazy dog. "
        u = urllib.parse.urlparse(url)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        c.request("POST", "/tokenize", json.dumps({"content": sentence}), {"Content-Type": "application/json"})
        per = max(1, len(json.loads(c.getresponse().read())["tokens"]))
        long_prompt = sentence * max(1, 390 // per)  # ~390 tokens in this model's vocabulary
        bodies = [dict(prompt=f"{i} {long_prompt}", max_tokens=a.tokens) for i in range(7)]
        out = [None]
        def later():
            time.sleep(0.05)  # the long prompts are in first
            out[0] = stream(url, short)
        t = threading.Thread(target=later); t.start()
        concurrent(url, bodies)
        t.join()
        print(f"first token of a short request: {idle * 1000:.0f} ms idle, {out[0][0] * 1000:.0f} ms with 7 prompts "
              f"of ~390 tokens")
    finally:
        if proc:
            proc.terminate()
            proc.wait(15)

def post(url, path, body):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status} from {path}: {data[:300]!r}")
    return json.loads(data)

def embedding_requests(url, a):
    """Requests/s of /v1/embeddings or /v1/rerank with 1, 4 and 16 clients, the median of -r rounds each."""
    text = "the quick brown fox jumps over the lazy dog while the cat sleeps in the warm afternoon sun. "
    if a.rerank:
        path = "/v1/rerank"
        body = lambda i: {"query": f"question {i}: what does the fox do?",
                          "documents": [f"document {d}: {text}" for d in range(8)]}
    else:
        path = "/v1/embeddings"
        body = lambda i: {"input": f"{i} {text}"}
    post(url, path, body(0))  # warm-up
    n = max(1, a.tokens)
    for clients in (1, 4, 16):
        rates = []
        for _ in range(max(1, a.rounds)):
            def client(k):
                for i in range(n):
                    post(url, path, body(k * n + i))
            ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
            t0 = time.monotonic()
            for t in ts: t.start()
            for t in ts: t.join()
            rates.append(clients * n / (time.monotonic() - t0))
        print(f"{path}, {clients:2d} clients x {n} requests: {statistics.median(rates):.1f} requests/s "
              f"(median of {len(rates)}: {', '.join(f'{r:.1f}' for r in rates)})", flush=True)

if __name__ == "__main__":
    main()
