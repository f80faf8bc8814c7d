#!/usr/bin/env python3
"""Speculative decoding in `lctx serve`: greedy requests on a repetitive prompt, alternated between a plain
server and one with --lookup (both started here from build/bin/lctx, standard library only).

  scripts/serve-spec-bench.py MODEL ROUNDS N_TOKENS CONCURRENT [extra serve options for the lookup server]

Each round sends CONCURRENT requests of N_TOKENS at once to each server in turn; tokens/s is the round's
generated tokens over its wall-clock time (prompts included), the median of the rounds; acceptance is the
draft tokens accepted over those verified (timings.draft_n_accepted / draft_n). Also says whether both
servers gave the same texts.
"""
import concurrent.futures as cf
import json, socket, statistics, subprocess, sys, time, urllib.request

model, rounds, n, par = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
extra = sys.argv[5:]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(args):
    port = free_port()
    p = subprocess.Popen(["build/bin/lctx", "serve", "-m", model, "--port", str(port), "-c", "2048",
                          "--parallel", str(par), "-t", "1", "--log-disable"] + args, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/health").status == 200:
                return p, port
        except Exception:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


prompt = "The cat sat on the mat. The dog sat on the log. " * 6


def req(port, i):
    body = {"prompt": prompt + str(i), "n_predict": n, "temperature": 0, "cache_prompt": False}
    r = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/completion",
                                                      json.dumps(body).encode(),
                                                      {"Content-Type": "application/json"}), timeout=600)
    return json.load(r)


servers = {"plain": start([]), "lookup": start(["--lookup"] + extra)}
tps = {k: [] for k in servers}
outs = {k: [] for k in servers}
drafted = accepted = 0
for i in range(rounds):
    for k, (_, port) in servers.items():
        t0 = time.monotonic()
        with cf.ThreadPoolExecutor(par) as ex:
            js = list(ex.map(lambda c: req(port, i * 100 + c), range(par)))
        tps[k].append(sum(j["tokens_predicted"] for j in js) / (time.monotonic() - t0))
        outs[k].append([j["content"] for j in js])
        if k == "lookup":
            drafted += sum(j["timings"]["draft_n"] for j in js)
            accepted += sum(j["timings"]["draft_n_accepted"] for j in js)
for p, _ in servers.values():
    p.terminate()
    p.wait()
med = {k: statistics.median(v) for k, v in tps.items()}
print(f"{model}: {par} concurrent requests of {n} tokens, {rounds} rounds alternated; "
      f"same output: {outs['plain'] == outs['lookup']}")
for k in servers:
    print(f"  {k}: median {med[k]:.1f} tokens/s (runs: {', '.join(f'{x:.1f}' for x in tps[k])})")
print(f"  lookup / plain: {med['lookup'] / med['plain']:.2f}x; acceptance {accepted}/{drafted} = "
      f"{100.0 * accepted / max(drafted, 1):.1f}%")
