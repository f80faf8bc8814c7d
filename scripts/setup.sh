#!/usr/bin/env bash
# Installs the Debian 12 packages lctx needs to build and test, when they are missing.
# Runs as root, or through sudo for a normal user.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git   # compiler and build
  ninja-build                             # the build tool (schedules both cores better than make)
  libpcre2-dev                            # Unicode pre-tokenizer regexes (BPE vocabularies)
  nlohmann-json3-dev                      # JSON: CLI --json, golden fixtures, server
  libcli11-dev                            # command-line parsing
  libreadline-dev                         # line editing and history in `lctx chat` on a terminal
  tmux                                    # the test that drives `lctx chat` in a terminal
  libcpp-httplib-dev                      # HTTP server
  libzmq3-dev cppzmq-dev                  # the server's KV-cache events (--kv-events): ZMQ PUB
  libmsgpack-cxx-dev                      # ... their msgpack encoding
  python3-zmq python3-msgpack python3-cbor2   # the routing harness (tests/scaleout/, /usr/bin/python3)
  curl                                    # the server test that talks to `lctx serve` with curl
  prometheus                              # the server test that scrapes `lctx serve` with a real Prometheus
  libgtest-dev libgmock-dev               # unit tests
  libbenchmark-dev                        # micro-benchmarks
  clang libclang-rt-14-dev                # sanitizer and fuzzing builds
  ccache                                  # serves repeated compiles (the test script builds three times)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
