#!/usr/bin/env bash
# The speed table of docs/BENCH.md: for each shape and weight type, synthesizes the model (once, into
# DIR, default ~/.cache/lctx/models) and runs `lctx bench` against the llama.cpp peer, 1 and 2 threads.
# Usage: scripts/bench-table.sh [-r REPS] [--shapes "smollm-135m tinyllama-1.1b"] [--types "F16 ..."] [--doc]
#        [DIR]
# Writes one JSON file per model and prints a header (date, CPU model, the kernels' ISA level, cores) and each
# markdown table; needs a build (scripts/build.sh). --doc also writes the tables into docs/BENCH.md, one
# section per machine kind (CPU model and ISA level): a rerun on the same kind replaces its section, another
# kind gets a section of its own.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=3
shapes="smollm-135m tinyllama-1.1b"
types="F16 BF16 Q8_0 Q4_0 Q4_K Q6_K Q4_K_M"
doc=0
args="$*"
while [[ $# -gt 0 ]]; do
    case "$1" in
        -r) reps=$2; shift 2 ;;
        --shapes) shapes=$2; shift 2 ;;
        --types) types=$2; shift 2 ;;
        --doc) doc=1; shift ;;
        *) break ;;
    esac
done
dir=${1:-$HOME/.cache/lctx/models}
mkdir -p "$dir"
lctx="$root/build/bin/lctx"
peer=$("$root/scripts/install-peer.sh" | tail -1)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
level=""
for shape in $shapes; do
    for type in $types; do
        model="$dir/$shape-$type.gguf"
        [[ -f "$model" ]] || "$lctx" synth --shape "$shape" --type "$type" -o "$model" >&2
        if [[ -z "$level" ]]; then
            # The level the kernels run at (LCTX_ISA caps it), as lctx bench names it under its table.
            level=$("$lctx" bench -m "$model" -p 8 -n 0 -t 1 -r 1 --bw-mib 0 |
                sed -n 's/.* at the \([a-z0-9_]*\) level.*/\1/p')
            echo "### Results ($(date -u +%Y-%m-%d), ${cpu:-unknown CPU}, kernels at the ${level:-unknown} level," \
                "$(nproc) cores; \`scripts/bench-table.sh${args:+ $args}\`)" | tee -a "$out"
        fi
        echo | tee -a "$out"
        echo "#### $shape $type" | tee -a "$out"
        echo | tee -a "$out"
        "$lctx" bench -m "$model" -p 512 -n 128 -t 1,2 -r "$reps" --peer "$peer" --json >"$dir/$shape-$type.json"
        (python3 - "$dir/$shape-$type.json" <<'PY'
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
        ) | tee -a "$out"
    done
done
if [[ $doc == 1 ]]; then
    python3 - "$root/docs/BENCH.md" "${cpu:-unknown CPU} / ${level:-unknown}" "$out" <<'PY'
import sys
path, kind, table = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().rstrip("\n")
begin, end = f"<!-- bench-table: {kind} -->", f"<!-- /bench-table: {kind} -->"
block = f"{begin}\n{table}\n{end}"
doc = open(path).read()
if begin in doc and end in doc:  # this machine kind's section: replaced
    doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
else:  # a new kind: its own section, before the older results
    anchor = "### Peak memory of `lctx run`"
    at = doc.index(anchor) if anchor in doc else len(doc)
    doc = doc[:at] + block + "\n\n" + doc[at:]
open(path, "w").write(doc)
print(f"bench-table: wrote the {kind} section of {path}", file=sys.stderr)
PY
fi
