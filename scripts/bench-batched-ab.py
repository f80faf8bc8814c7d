#!/usr/bin/env python3
"""Before/after speeds of `lctx bench` batched mode, two lctx binaries alternating, on a shared machine.

  scripts/bench-batched-ab.py OLD_LCTX NEW_LCTX [-r ROUNDS] -c 'LABEL|MODEL|BENCH ARGS' [-c ...]

Each case runs `lctx bench -m MODEL -t 1 -o jsonl ARGS` (batched mode: -npp, -ntg, -npl) with the old binary,
then the new one, for ROUNDS rounds (default 3), and prints a markdown table of the medians: S_PP and S_TG
from wall time and from the process's CPU time (cpu_pp, cpu_tg; at 1 thread they leave out the time other
processes held the core). Standard library only.
"""
import argparse, json, statistics, subprocess, sys, time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("-c", "--case", action="append", required=True, help="LABEL|MODEL|BENCH ARGS")
    a = ap.parse_args()
    cases = [c.split("|", 2) for c in a.case]
    if any(len(c) != 3 for c in cases):
        sys.exit("bench-batched-ab.py: -c wants LABEL|MODEL|BENCH ARGS")
    res = {}
    for r in range(a.rounds):
        for name, exe in (("old", a.old), ("new", a.new)):
            for label, model, args in cases:
                p = subprocess.run([exe, "bench", "-m", model, "-t", "1", "-o", "jsonl"] + args.split(),
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit(f"bench-batched-ab.py: {exe} failed: {p.stderr.strip()}")
                for line in p.stdout.splitlines():
                    j = json.loads(line)
                    key = (label, j["pp"], j["tg"], j["pl"])
                    res.setdefault(key, {}).setdefault(name, []).append(
                        (j["pl"] * j["pp"] / j["t_pp"], j["pl"] * j["pp"] / j["cpu_pp"], j["speed_tg"],
                         j["pl"] * j["tg"] / j["cpu_tg"]))
            print(f"round {r + 1} {name} done {time.strftime('%T')}", file=sys.stderr, flush=True)
    print("| model | PP | TG | B | old S_PP wall / cpu | new S_PP wall / cpu | old S_TG wall / cpu | new S_TG wall / cpu |")
    print("|---|---|---|---|---|---|---|---|")
    for key, d in res.items():
        o, n = ([statistics.median(x[i] for x in d[k]) for i in range(4)] for k in ("old", "new"))
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {o[0]:.1f} / {o[1]:.1f} | {n[0]:.1f} / {n[1]:.1f} | "
              f"{o[2]:.1f} / {o[3]:.1f} | {n[2]:.1f} / {n[3]:.1f} |")


if __name__ == "__main__":
    main()
