#!/usr/bin/env bash
# Mutation testing: applies each small change of tests/mutations/*.mut (see its README.md) to the source,
# rebuilds the test binary it names, runs it, and restores the file. A mutation the tests do not notice
# (they still pass) survives: the summary lists the survivors, and the script fails when there are any.
# Needs a configured build/ (scripts/build.sh). Runs in place: the file is restored even on Ctrl-C.
#   scripts/mutate.sh [NAME ...]     (default: every mutation)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
[ -d "$build" ] || { echo "mutate.sh: no build/ (run scripts/build.sh first)" >&2; exit 2; }
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$root"/tests/mutations/*.mut; do names+=("$(basename "$f" .mut)"); done
fi
field() { sed -n "s/^$1: //p" "$2" | head -1; }
backup=""
target_file=""
restore() {
  if [ -n "$backup" ] && [ -f "$backup" ]; then
    cp "$backup" "$target_file"  # a new time stamp: the next build rebuilds what the mutation built
    rm -f "$backup"
  fi
  backup=""
}
trap restore EXIT INT TERM
killed=()
survived=()
broken=()
for n in "${names[@]}"; do
  mut="$root/tests/mutations/$n.mut"
  [ -f "$mut" ] || { echo "mutate.sh: no mutation $mut" >&2; exit 2; }
  target_file="$root/$(field file "$mut")"
  expr=$(field sed "$mut")
  target=$(field target "$mut")
  filter=$(field filter "$mut")
  [ -n "$filter" ] || filter='*'
  backup=$(mktemp "$target_file.mutate.XXXXXX")
  cp -p "$target_file" "$backup"
  sed -i -e "$expr" "$target_file"
  if cmp -s "$backup" "$target_file"; then
    echo "== $n: the sed expression changed nothing (stale mutation)"
    broken+=("$n")
    restore
    continue
  fi
  echo "== $n: $(field why "$mut")"
  if ! cmake --build "$build" -j"$(nproc)" --target "$target" >"$build/mutate_$n.log" 2>&1; then
    echo "   killed (does not compile)"
    killed+=("$n")
  elif "$build/bin/$target" --gtest_filter="$filter" >>"$build/mutate_$n.log" 2>&1; then
    echo "   SURVIVED: $target --gtest_filter=$filter still passes"
    survived+=("$n")
  else
    echo "   killed: $(grep -m1 -E '^\[  FAILED  \]' "$build/mutate_$n.log" || echo 'the tests failed')"
    killed+=("$n")
  fi
  restore
done
echo "mutate.sh: ${#killed[@]} killed, ${#survived[@]} survived, ${#broken[@]} stale"
for s in "${survived[@]}"; do echo "  survivor: $s"; done
for s in "${broken[@]}"; do echo "  stale: $s"; done
[ ${#survived[@]} -eq 0 ] && [ ${#broken[@]} -eq 0 ]
