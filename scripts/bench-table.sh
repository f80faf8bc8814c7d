#!/usr/bin/env bash
# The speed table of docs/BENCH.md: for each shape and weight type, synthesizes the model (once, into
# DIR, default ~/.cache/lctx/models) and runs `lctx bench` against the llama.cpp peer, 1 and 2 threads.
# Usage: scripts/bench-table.sh [-r REPS] [--shapes "smollm-135m tinyllama-1.1b"] [--types "F16 ..."] [DIR]
# Writes one JSON file per model and prints each markdown table; needs a build (scripts/build.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=3
shapes="smollm-135m tinyllama-1.1b"
types="F16 BF16 Q8_0 Q4_0 Q4_K Q6_K Q4_K_M"
while [[ $# -gt 0 ]]; do
    case "$1" in
        -r) reps=$2; shift 2 ;;
        --shapes) shapes=$2; shift 2 ;;
        --types) types=$2; shift 2 ;;
        *) break ;;
    esac
done
dir=${1:-$HOME/.cache/lctx/models}
mkdir -p "$dir"
lctx="$root/build/bin/lctx"
peer=$("$root/scripts/install-peer.sh" | tail -1)
for shape in $shapes; do
    for type in $types; do
        model="$dir/$shape-$type.gguf"
        [[ -f "$model" ]] || "$lctx" synth --shape "$shape" --type "$type" -o "$model" >&2
        echo "### $shape $type"
        "$lctx" bench -m "$model" -p 512 -n 128 -t 1,2 -r "$reps" --peer "$peer" --json >"$dir/$shape-$type.json"
        python3 - "$dir/$shape-$type.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
by = {}
for r in rows:
    test = f"pp{r['n_prompt']}" if r['n_prompt'] else f"tg{r['n_gen']}"
    by.setdefault((test, r['n_threads']), {})[r['engine']] = r
print("| test | threads | lctx t/s | llama.cpp t/s | ratio | lctx % of bw limit | llama.cpp % of bw limit |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for (test, th), e in sorted(by.items(), key=lambda kv: (kv[0][0][:2] != 'pp', kv[0][1])):
    a, b = e.get('lctx'), e.get('llama.cpp')
    f = lambda r: f"{r['avg_ts']:.2f} ± {r['stddev_ts']:.2f}" if r else "-"
    ratio = f"{a['avg_ts'] / b['avg_ts']:.2f}" if a and b else "-"
    lim = lambda r: f"{100 * r['frac_of_limit']:.0f}%" if r and 'frac_of_limit' in r else "-"
    print(f"| {test} | {th} | {f(a)} | {f(b)} | {ratio} | {lim(a)} | {lim(b)} |")
PY
    done
done
