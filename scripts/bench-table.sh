#!/usr/bin/env bash
# The speed tables of docs/BENCH.md: for each shape and weight type, synthesizes the model (once, into DIR,
# default ~/.cache/lctx/models) and runs `lctx bench` against the native llama.cpp peer, 1 and 2 threads, pp512
# and tg128 on an empty cache (flash attention off and on, each engine at its faster setting: llama.cpp's
# default is on); then the long-context table: the --depth-types models at depth N (default 4096)
# with flash attention off and on, F16 K/V and (flash attention on) Q8_0 K/V; then the batched-decoding table
# (`lctx bench -npp 128 -ntg 32 -npl 1,2,4,8,16,32 -fa 0,1 --peer`, as llama-batched-bench: total S_PP and S_TG
# of both engines, each at its faster setting, and their ratios) of the --batched-types models; then the Mamba table (the --mamba-shapes in the
# --mamba-types, pp512 and tg128 as the first table) and the embeddings table (`lctx bench` in embedding mode:
# one sequence of 512 tokens, 8 of 128 and 64 of 32 in one llama_encode, for the --embd-shapes in the
# --embd-types, 1 and 2 threads, flash attention off and on: each cell at llama.cpp's faster setting).
# Usage: scripts/bench-table.sh [-r REPS] [--shapes "smollm-135m tinyllama-1.1b"] [--types "F32 F16 ..."]
#        [--depth N] [--depth-shape tinyllama-1.1b] [--depth-types "Q4_0 Q8_0"] [--depth-threads 1,2]
#        [--batched-shape tinyllama-1.1b] [--batched-types "Q4_0 Q8_0"] [--batched-threads 1,2]
#        [--npp 128] [--ntg 32] [--npl 1,2,4,8,16,32]
#        [--mamba-shapes "mamba-tiny mamba-130m"] [--mamba-types "F16 Q8_0 Q4_0"]
#        [--embd-shapes "bge-small nomic-embed-text"] [--embd-types "F16 Q8_0"] [--doc] [DIR]
#   --depth 0 skips the long-context table, --types "" the empty-cache one, --batched-types "" the batched one,
#   --mamba-types "" the Mamba one, --embd-types "" the embeddings one
#   (with --doc, a run of some of the parts writes a section of its own, beside the other parts').
# The peer is llama.cpp built for this machine (scripts/install-peer.sh --native); with the kernels capped below
# AVX-512 on an AVX-512 machine (LCTX_ISA=avx2), llama.cpp built for AVX2 (--native-avx2), so that both engines
# run at the same level. Either is built on first use (about 10 minutes on 2 cores).
# Writes one JSON file per run into DIR and prints a header (date, CPU model, the kernels' ISA level, cores, the
# peer) and each markdown table; needs a build (scripts/build.sh). --doc also writes the tables into
# docs/BENCH.md, one section per machine kind (CPU model and ISA level): a rerun on the same kind replaces its
# section, another kind gets a section of its own.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=3
shapes="smollm-135m tinyllama-1.1b"
types="F32 F16 BF16 Q8_0 Q4_0 Q4_K Q6_K Q4_K_M"
depth=4096
depth_shape="tinyllama-1.1b"
depth_types="Q4_0 Q8_0"
depth_threads="1,2"
batched_shape="tinyllama-1.1b"
batched_types="Q4_0 Q8_0"
batched_threads="1,2"
npp=128
ntg=32
npl="1,2,4,8,16,32"
mamba_shapes="mamba-tiny mamba-130m"
mamba_types="F16 Q8_0 Q4_0"
embd_shapes="bge-small nomic-embed-text"
embd_types="F16 Q8_0"
doc=0
args=$(printf '%q ' "$@")  # for the header, quoted as given
args=${args% }
while [[ $# -gt 0 ]]; do
    case "$1" in
        -r) reps=$2; shift 2 ;;
        --shapes) shapes=$2; shift 2 ;;
        --types) types=$2; shift 2 ;;
        --depth) depth=$2; shift 2 ;;
        --depth-shape) depth_shape=$2; shift 2 ;;
        --depth-types) depth_types=$2; shift 2 ;;
        --depth-threads) depth_threads=$2; shift 2 ;;
        --batched-shape) batched_shape=$2; shift 2 ;;
        --batched-types) batched_types=$2; shift 2 ;;
        --batched-threads) batched_threads=$2; shift 2 ;;
        --npp) npp=$2; shift 2 ;;
        --ntg) ntg=$2; shift 2 ;;
        --npl) npl=$2; shift 2 ;;
        --mamba-shapes) mamba_shapes=$2; shift 2 ;;
        --mamba-types) mamba_types=$2; shift 2 ;;
        --embd-shapes) embd_shapes=$2; shift 2 ;;
        --embd-types) embd_types=$2; shift 2 ;;
        --doc) doc=1; shift ;;
        *) break ;;
    esac
done
dir=${1:-$HOME/.cache/lctx/models}
mkdir -p "$dir"
lctx="$root/build/bin/lctx"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

synth() {  # the model file of shape $1, type $2 (synthesized on first use)
    local model="$dir/$1-$2.gguf"
    [[ -f "$model" ]] || "$lctx" synth --shape "$1" --type "$2" -o "$model" >&2
    echo "$model"
}

# The level the kernels run at (LCTX_ISA caps it), as lctx bench names it under its table.
probe=$(synth smollm-135m Q8_0)
level=$("$lctx" bench -m "$probe" -p 8 -n 0 -t 1 -r 1 --bw-mib 0 |
    sed -n 's/.* at the \([a-z0-9_]*\) level.*/\1/p')
if [[ $level != avx512 && $level != amx ]] && grep -qw avx512f /proc/cpuinfo; then
    peer=$("$root/scripts/install-peer.sh" --native-avx2 | tail -1)
else
    peer=$("$root/scripts/install-peer.sh" --native | tail -1)
fi
peer_desc=$(head -1 "$peer/../../lctx-peer-native" 2>/dev/null || echo "libllama in $peer")

echo "### Results ($(date -u +%Y-%m-%d), ${cpu:-unknown CPU}, kernels at the ${level:-unknown} level," \
    "$(nproc) cores; \`scripts/bench-table.sh${args:+ $args}\`)" | tee -a "$out"
echo | tee -a "$out"
echo "Peer: $peer_desc. Roof: the compute peak for prompts (f32 FMA, int8 or bf16 dot products, probed)," \
    "the memory bandwidth limit for generation." | tee -a "$out"

heading() {  # a table's heading, into the output
    printf '\n#### %s\n\n' "$1" | tee -a "$out"
}

table() {  # markdown rows of one lctx bench JSON file; $2 = 1 adds the attention columns
    # Without them (the empty-cache and Mamba tables), a file of -fa 0,1 runs gives each engine at its faster
    # setting, named in an "fa" column: llama.cpp's own default (-fa auto) is flash attention on the CPU, and
    # its prompts run faster with it.
    python3 - "$1" "$2" <<'PY'
import json, sys
rows, attn = json.load(open(sys.argv[1])), sys.argv[2] == "1"
by = {}
best_of_fa = not attn and len({bool(r['flash_attn']) for r in rows}) > 1
for r in rows:
    test = f"pp{r['n_prompt']}" if r['n_prompt'] else f"tg{r['n_gen']}"
    if r.get('n_depth'):
        test += f" @ d{r['n_depth']}"
    fa = -1 if best_of_fa else int(r['flash_attn'])
    key = (r['n_prompt'] == 0, fa, r['type_k'], r['type_v'], test, r['n_threads'])
    e = by.setdefault(key, {})
    if r['engine'] not in e or r['avg_ts'] > e[r['engine']]['avg_ts']:
        e[r['engine']] = r
head = "| test | " + ("fa | K/V | " if attn else "fa, lctx / llama.cpp | " if best_of_fa else "") + \
       "threads | lctx t/s | llama.cpp t/s | ratio | lctx % of roof | llama.cpp % of roof |"
print(head)
print("| --- | " + ("---: | --- | " if attn else "---: | " if best_of_fa else "") +
      "---: | ---: | ---: | ---: | ---: | ---: |")
for key in sorted(by):
    _, fa, tk, tv, test, th = key
    e = by[key]
    a, b = e.get('lctx'), e.get('llama.cpp')
    f = lambda r: f"{r['avg_ts']:.2f} ± {r['stddev_ts']:.2f}" if r else "-"
    ratio = f"**{a['avg_ts'] / b['avg_ts']:.2f}**" if a and b else "-"
    def roof(r):
        if not r:
            return "-"
        v = r.get('frac_of_peak', r.get('frac_of_limit'))
        return f"{100 * v:.0f}%" if v is not None else "-"
    kv = tk if tk == tv else f"{tk}/{tv}"
    fas = " / ".join(str(int(r['flash_attn'])) if r else "-" for r in (a, b))
    cols = [test] + ([str(fa), kv] if attn else [fas] if best_of_fa else []) + \
        [str(th), f(a), f(b), ratio, roof(a), roof(b)]
    print("| " + " | ".join(cols) + " |")
PY
}

batched_table() {  # markdown rows of one lctx bench batched JSON-lines file (both engines)
    python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
by = {}
for r in rows:
    by.setdefault((r['n_threads'], r['pp'], r['tg'], r['pl']), {}).setdefault(r['engine'], []).append(r)
peer = next((r for r in rows if r['engine'] == 'llama.cpp'), None)
if peer:
    print(f"llama.cpp's CPU backend: {peer.get('isa') or 'unknown'} ({peer.get('cpu_features', '')}).\n")
if len({r['flash_attn'] for r in rows}) > 1:
    print("Each figure is the engine's faster of its -fa 0 and -fa 1 runs (llama.cpp's default is -fa auto, on "
          "for the CPU).\n")
# Speeds from wall time (as llama-batched-bench) and, for the ratios, also from each process's CPU time (on a
# shared machine, at 1 thread, CPU time leaves out the time other processes held the core).
def cpu(r, span):
    n = (r['pp'] if r['is_pp_shared'] else r['pl'] * r['pp']) if span == 'pp' else r['pl'] * r['tg']
    return n / r['cpu_' + span] if r['cpu_' + span] > 0 else 0
print("| threads | B | S_PP t/s, lctx / llama.cpp | ratio | from CPU time | ratio | S_TG t/s, lctx / llama.cpp "
      "| ratio | from CPU time | ratio |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for key in sorted(by):
    th, pp, tg, pl = key
    a, b = by[key].get('lctx'), by[key].get('llama.cpp')
    if not (a and b):
        continue
    cols = [str(th), str(pl)]
    best = lambda runs, fig: max(fig(r) for r in runs)
    for fig in (lambda r: r['speed_pp'], lambda r: cpu(r, 'pp'), lambda r: r['speed_tg'], lambda r: cpu(r, 'tg')):
        x, y = best(a, fig), best(b, fig)
        cols += [f"{x:.1f} / {y:.1f}", f"**{x / y:.2f}**" if y > 0 else "-"]
    print("| " + " | ".join(cols) + " |")
PY
}

embd_table() {  # markdown rows of one lctx bench embedding-mode JSON file (both engines, -fa 0 and 1)
    # llama.cpp's default is flash attention "auto", which is on for the CPU, and for many short texts in one
    # batch it is several times faster than -fa 0 (its masked blocks are skipped). Each cell compares the two
    # engines at the setting where llama.cpp is faster; lctx's encoder pass does not depend on it.
    python3 - "$1" <<'PY'
import json, sys
by = {}
for r in json.load(open(sys.argv[1])):
    by.setdefault((r['n_seq'], r['n_prompt'], r['n_threads']), {}).setdefault(r['engine'], {})[
        bool(r['flash_attn'])] = r
print("| test | threads | llama.cpp's faster fa | lctx t/s | llama.cpp t/s | ratio | lctx % of peak | "
      "llama.cpp % of peak |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for key in sorted(by, key=lambda k: (-k[1], k[0], k[2])):
    s, l, th = key
    peer = by[key].get('llama.cpp', {})
    fa = max(peer, key=lambda k: peer[k]['avg_ts']) if peer else True
    a, b = by[key].get('lctx', {}).get(fa), peer.get(fa)
    f = lambda r: f"{r['avg_ts']:.1f} ± {r['stddev_ts']:.1f}" if r else "-"
    pk = lambda r: f"{100 * r['frac_of_peak']:.0f}%" if r and r.get('frac_of_peak') is not None else "-"
    ratio = f"**{a['avg_ts'] / b['avg_ts']:.2f}**" if a and b else "-"
    print(f"| embd {s} x {l} | {th} | {int(fa)} | {f(a)} | {f(b)} | {ratio} | {pk(a)} | {pk(b)} |")
PY
}

bench_shapes() {  # pp512 and tg128 of each of the shapes $1 in each of the types $2, flash attention $3
    for shape in $1; do
        for type in $2; do
            model=$(synth "$shape" "$type")
            heading "$shape $type"
            json="$dir/$shape-$type.${level}.json"
            "$lctx" bench -m "$model" -p 512 -n 128 -t 1,2 -fa "$3" -r "$reps" --peer "$peer" --json >"$json"
            table "$json" 0 | tee -a "$out"
        done
    done
}

# (each engine at its faster flash-attention setting; a Mamba model has no attention)
[[ -z $types ]] || bench_shapes "$shapes" "$types" 0,1

if [[ $depth -gt 0 ]]; then
    for type in $depth_types; do
        model=$(synth "$depth_shape" "$type")
        heading "$depth_shape $type at depth $depth"
        json="$dir/$depth_shape-$type.d$depth.${level}.json"
        # Flash attention off and on with F16 K/V, then Q8_0 K/V (llama.cpp runs a quantized V only with
        # flash attention): one JSON array.
        "$lctx" bench -m "$model" -p 512 -n 128 -d "$depth" -t "$depth_threads" -r "$reps" -fa 0,1 \
            --peer "$peer" --json >"$json.f16"
        "$lctx" bench -m "$model" -p 512 -n 128 -d "$depth" -t "$depth_threads" -r "$reps" -fa 1 \
            -ctk q8_0 -ctv q8_0 --peer "$peer" --json >"$json.q8"
        python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1])) + json.load(open(sys.argv[2])),
            open(sys.argv[3], "w"), indent=1)' "$json.f16" "$json.q8" "$json"
        rm -f "$json.f16" "$json.q8"
        table "$json" 1 | tee -a "$out"
    done
fi

if [[ -n $batched_types ]]; then
    # S_PP and S_TG of both engines from one `lctx bench` batched run per model: the engines alternate run by
    # run (-r REPS runs of each row, the median by total time kept).
    for type in $batched_types; do
        model=$(synth "$batched_shape" "$type")
        heading "$batched_shape $type, batched: $npp-token prompts, $ntg generated tokens per sequence"
        json="$dir/$batched_shape-$type.batched.${level}.jsonl"
        "$lctx" bench -m "$model" -npp "$npp" -ntg "$ntg" -npl "$npl" -t "$batched_threads" -fa 0,1 \
            -r "$reps" --peer "$peer" -o jsonl >"$json"
        batched_table "$json" | tee -a "$out"
    done
fi

[[ -z $mamba_types ]] || bench_shapes "$mamba_shapes" "$mamba_types" 0

if [[ -n $embd_types ]]; then
    # One long text, 8 of 128 tokens and 64 short ones per llama_encode (one JSON array of the three runs).
    for shape in $embd_shapes; do
        for type in $embd_types; do
            model=$(synth "$shape" "$type")
            heading "$shape $type, embeddings: S sequences of L tokens in one llama_encode"
            json="$dir/$shape-$type.embd.${level}.json"
            parts=()
            for sl in "1 512" "8 128" "64 32"; do
                set -- $sl
                "$lctx" bench -m "$model" --embd --n-seq "$1" -p "$2" -t 1,2 -fa 0,1 -r "$reps" --peer "$peer" --json \
                    >"$json.$1"
                parts+=("$json.$1")
            done
            python3 -c 'import json,sys; json.dump(sum((json.load(open(p)) for p in sys.argv[2:]), []),
                open(sys.argv[1], "w"), indent=1)' "$json" "${parts[@]}"
            rm -f "${parts[@]}"
            embd_table "$json" | tee -a "$out"
        done
    done
fi

if [[ $doc == 1 ]]; then
    # A run of some parts (--depth 0, --types "", --batched-types "") has a section of its own beside the
    # others'.
    ran=()
    [[ -n $types ]] && ran+=("empty cache")
    [[ $depth -gt 0 ]] && ran+=("depth $depth")
    [[ -n $batched_types ]] && ran+=("batched")
    [[ -n $mamba_types ]] && ran+=("mamba")
    [[ -n $embd_types ]] && ran+=("embeddings")
    part=""
    if [[ ${#ran[@]} -lt 5 ]]; then
        part=" / $(IFS=,; echo "${ran[*]}" | sed 's/,/, /g')"
    fi
    python3 - "$root/docs/BENCH.md" "${cpu:-unknown CPU} / ${level:-unknown}$part" "$out" <<'PY'
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
