#pragma once
// The error a trace gives when read to the end, for the rejection tests.
#include <filesystem>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/traces/reader.hpp"

namespace edgc::traces::test {

/// Reads every iteration of a trace; returns the TraceFormatError's message, empty when it was accepted.
inline std::string read_error(const std::filesystem::path& dir) {
  try {
    TraceReader r(dir);
    IterationData d;
    while (r.next(d)) {
    }
  } catch (const TraceFormatError& e) {
    return e.what();
  }
  return "";
}

}  // namespace edgc::traces::test
