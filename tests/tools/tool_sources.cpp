// The CLI helpers under test live in tools/lctx/ (compiled into the lctx binary, not the library); this
// file compiles them into the test binary too.
#include "../../tools/lctx/bench_core.cpp"
#include "../../tools/lctx/bench_peer.cpp"
#include "../../tools/lctx/synth_model.cpp"
