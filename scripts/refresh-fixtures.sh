#!/usr/bin/env bash
# Refreshes the in-repo copy of the shared fixtures that the tests use.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${1:-$root/../shared/fixtures}
for d in golden vocab state chat templates; do
  rm -rf "$root/fixtures/$d"
  cp -r "$shared/$d" "$root/fixtures/$d"
done
cp "$shared/SOURCES.md" "$root/fixtures/SOURCES.md"
cp "$shared/gguf/stories260K.gguf" "$root/models/stories260K.gguf"
chmod -R u+w "$root/fixtures" "$root/models"
echo "fixtures refreshed from $shared"
