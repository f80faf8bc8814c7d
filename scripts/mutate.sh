#!/usr/bin/env bash
# Mutation testing: applies each small change of tests/mutations/*.mut (see its README.md) to the source,
# rebuilds the test binary it names, runs its filter, and restores the file; at the end the binaries used are
# built again from the restored sources. A mutation the tests do not notice (they still pass) survives: the
# summary lists the survivors, and the script fails when there are any.
# Needs a configured build/ (scripts/build.sh). Runs in place: the file is restored on every exit (error,
# Ctrl-C, TERM, HUP); a run killed outright (SIGKILL, power) is repaired by the next run, which restores
# what build/mutate/pending names before it starts.
#   scripts/mutate.sh [--layer L[,L...]]... [--list] [NAME ...]     (default: every mutation)
# Outcomes: killed (a test failed, crashed or timed out), SURVIVED, does not compile (the mutation is not a
# test of anything: fix its sed), build failed (not a compile error: see the log), stale (the sed changed
# nothing). Only "killed" is a pass; the script exits 1 on anything else.
# A table row per mutation goes to build/mutate/report.md (the table in docs/MUTATION.md).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
work="$build/mutate"
pending="$work/pending"
jobs=${MUTATE_JOBS:-2}

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
layers=()
names=()
list_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --layer) [ $# -ge 2 ] || { echo "mutate.sh: --layer needs a layer name" >&2; exit 2; }
             IFS=, read -r -a ls <<<"$2"; layers+=("${ls[@]}"); shift 2 ;;
    --layer=*) IFS=, read -r -a ls <<<"${1#--layer=}"; layers+=("${ls[@]}"); shift ;;
    --list) list_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "mutate.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done

field() { sed -n "s/^$1: //p" "$2" | head -1; }

# Restores a file a previous run left mutated (killed before its trap ran).
mkdir -p "$work"
if [ -f "$pending" ]; then
  read -r prev_target prev_backup <"$pending" || true
  if [ -n "${prev_backup:-}" ] && [ -f "$prev_backup" ]; then
    echo "mutate.sh: restoring $prev_target, left mutated by an interrupted run" >&2
    cp "$prev_backup" "$prev_target" || { echo "mutate.sh: cannot restore $prev_target" >&2; exit 2; }
    rm -f "$prev_backup"
  fi
  rm -f "$pending"
fi

if [ ${#names[@]} -eq 0 ]; then
  for f in "$root"/tests/mutations/*.mut; do
    n=$(basename "$f" .mut)
    if [ ${#layers[@]} -gt 0 ]; then
      l=$(field layer "$f")
      match=0
      for want in "${layers[@]}"; do [ "$l" = "$want" ] && match=1; done
      [ $match -eq 1 ] || continue
    fi
    names+=("$n")
  done
  if [ ${#names[@]} -eq 0 ]; then
    echo "mutate.sh: no mutation in layer(s) ${layers[*]}; layers are:" >&2
    for f in "$root"/tests/mutations/*.mut; do field layer "$f"; done | sort -u | sed 's/^/  /' >&2
    exit 2
  fi
fi
for n in "${names[@]}"; do
  mut="$root/tests/mutations/$n.mut"
  [ -f "$mut" ] || { echo "mutate.sh: no mutation $mut" >&2; exit 2; }
  for k in file sed target layer why; do
    [ -n "$(field "$k" "$mut")" ] || { echo "mutate.sh: $mut has no '$k:' line" >&2; exit 2; }
  done
  [ -f "$root/$(field file "$mut")" ] || { echo "mutate.sh: $mut: no file $(field file "$mut")" >&2; exit 2; }
done
if [ $list_only -eq 1 ]; then
  for n in "${names[@]}"; do
    m="$root/tests/mutations/$n.mut"
    printf '%-12s %-40s %s\n' "$(field layer "$m")" "$n" "$(field why "$m")"
  done
  exit 0
fi
[ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ] ||
  { echo "mutate.sh: no configured build/ (run scripts/build.sh first)" >&2; exit 2; }

backup=""
target_file=""
restore() {
  if [ -n "$backup" ] && [ -f "$backup" ]; then
    # A new time stamp: the next build rebuilds what the mutation built.
    cp "$backup" "$target_file" || { echo "mutate.sh: CANNOT RESTORE $target_file from $backup" >&2; return 1; }
    cmp -s "$backup" "$target_file" || { echo "mutate.sh: $target_file differs from $backup" >&2; return 1; }
    rm -f "$backup" "$pending"
  fi
  backup=""
}
# The build and the test run in the background under `wait`, so that a signal to this script alone (not
# only Ctrl-C to the whole process group) stops them at once instead of after the build finishes.
child=""
stop_child() {
  if [ -n "$child" ]; then
    for g in $(pgrep -P "$child" 2>/dev/null); do kill -TERM "$g" 2>/dev/null; done
    kill -TERM "$child" 2>/dev/null
    wait "$child" 2>/dev/null
    child=""
  fi
}
run() { "$@" & child=$!; wait "$child"; local rc=$?; child=""; return $rc; }
trap 'restore' EXIT
trap 'stop_child; restore; trap - INT; kill -INT $$' INT
trap 'stop_child; restore; exit 143' TERM
trap 'stop_child; restore; exit 129' HUP

report="$work/report.md"
: >"$report"
killed=()
survived=()
uncompiled=()
buildfail=()
stale=()
row() { echo "| \`$1\` | $2 | $3 | $4 |" >>"$report"; }
for n in "${names[@]}"; do
  mut="$root/tests/mutations/$n.mut"
  rel=$(field file "$mut")
  target_file="$root/$rel"
  expr=$(field sed "$mut")
  target=$(field target "$mut")
  filter=$(field filter "$mut")
  layer=$(field layer "$mut")
  why=$(field why "$mut")
  envs=$(field env "$mut")
  limit=$(field timeout "$mut")
  [ -n "$filter" ] || filter='*'
  [ -n "$limit" ] || limit=${MUTATE_TIMEOUT:-600}
  log="$work/$n.log"
  backup="$work/$(basename "$target_file").orig"
  cp -p "$target_file" "$backup" || { echo "mutate.sh: cannot back up $target_file" >&2; exit 2; }
  echo "$target_file $backup" >"$pending"
  if ! sed -i -e "$expr" "$target_file" 2>"$log"; then
    echo "== $n: the sed expression fails: $(head -1 "$log")"
    stale+=("$n"); row "$n" "$layer" "$why" "stale (sed fails)"; restore; continue
  fi
  if cmp -s "$backup" "$target_file"; then
    echo "== $n: the sed expression changed nothing (stale mutation)"
    stale+=("$n"); row "$n" "$layer" "$why" "stale (sed changes nothing)"; restore; continue
  fi
  echo "== $n [$layer]: $why"
  diff "$backup" "$target_file" | sed -n 's/^[<>] /   /p' | head -4 | cut -c1-160
  t0=$(date +%s)
  if ! run cmake --build "$build" -j"$jobs" --target "$target" >"$log" 2>&1; then
    if grep -q -E 'error:|undefined reference|ld returned' "$log"; then
      echo "   DOES NOT COMPILE: $(grep -m1 -E 'error:|undefined reference' "$log" | cut -c1-200)"
      uncompiled+=("$n"); row "$n" "$layer" "$why" "does not compile"
    else
      echo "   BUILD FAILED (not a compile error; test discovery?): see $log"
      buildfail+=("$n"); row "$n" "$layer" "$why" "build failed"
    fi
    restore; continue
  fi
  t1=$(date +%s)
  # shellcheck disable=SC2086  # env: holds NAME=VALUE words
  run env $envs timeout "$limit" "$build/bin/$target" --gtest_filter="$filter" >>"$log" 2>&1
  rc=$?
  t2=$(date +%s)
  times="build $((t1 - t0)) s, test $((t2 - t1)) s"
  if [ $rc -eq 0 ]; then
    echo "   SURVIVED: $target --gtest_filter=$filter still passes ($times)"
    survived+=("$n"); row "$n" "$layer" "$why" "**survived** \`$target --gtest_filter=$filter\`"
  else
    if [ $rc -eq 124 ]; then
      how="timed out after $limit s"
    elif [ $rc -gt 128 ]; then
      how="crashed (signal $((rc - 128)))"
    else
      how=$(grep -m1 -E '^\[  FAILED  \]' "$log" | sed 's/^\[  FAILED  \] //; s/ (.*//' || true)
      [ -n "$how" ] || how="the tests failed (rc $rc)"
    fi
    echo "   killed: $how ($times)"
    killed+=("$n"); row "$n" "$layer" "$why" "killed by \`$how\`"
  fi
  restore
done
trap - EXIT
# Each test binary was last built with a mutation applied: build the ones this run touched again from the
# restored sources, so that tests run after this script test the real code.
rebuilt=()
for n in "${names[@]}"; do
  t=$(field target "$root/tests/mutations/$n.mut")
  case " ${rebuilt[*]} " in *" $t "*) continue ;; esac
  rebuilt+=("$t")
done
if [ ${#rebuilt[@]} -gt 0 ]; then
  targets=()
  for t in "${rebuilt[@]}"; do targets+=(--target "$t"); done
  if ! cmake --build "$build" -j"$jobs" "${targets[@]}" >"$work/rebuild.log" 2>&1; then
    echo "mutate.sh: rebuilding ${rebuilt[*]} from the restored sources failed: see $work/rebuild.log" >&2
  fi
fi
echo "mutate.sh: ${#killed[@]} killed, ${#survived[@]} survived, ${#uncompiled[@]} do not compile," \
  "${#buildfail[@]} build failures, ${#stale[@]} stale (table rows: $report)"
for s in "${survived[@]}"; do echo "  survivor: $s"; done
for s in "${uncompiled[@]}"; do echo "  does not compile: $s"; done
for s in "${buildfail[@]}"; do echo "  build failed: $s"; done
for s in "${stale[@]}"; do echo "  stale: $s"; done
[ ${#survived[@]} -eq 0 ] && [ ${#uncompiled[@]} -eq 0 ] && [ ${#buildfail[@]} -eq 0 ] && [ ${#stale[@]} -eq 0 ]
