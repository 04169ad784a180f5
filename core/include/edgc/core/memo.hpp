#pragma once
// One switch for every memo that reuses work across a sweep's points and a plan's options: the shared tables of
// the rank-error model (cqm.hpp), the in-process memos of trace entropy, gradient-fidelity replays and simulated
// iterations, the sweep's cache directory and its long-lived workers. Memoised and unmemoised runs give the same
// bytes (the memos are keyed by everything their results depend on); EDGC_NO_MEMO=1 in the environment turns them
// all off so that tests and benchmarks can show it.
#include <cstdlib>
#include <cstring>

namespace edgc::core {

/// False when the environment sets EDGC_NO_MEMO to anything but "" or "0".
inline bool memo_enabled() {
  const char* v = std::getenv("EDGC_NO_MEMO");
  return v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0;
}

}  // namespace edgc::core
