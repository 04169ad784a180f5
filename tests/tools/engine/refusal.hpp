#pragma once
// The InputError a request is refused with: the option or key it names and its message (both empty when `f` throws
// none), for the engine tests' "refused before simulating" cases.
#include <string>

#include "edgc/core/error.hpp"

namespace edgc::engine::test {

struct Refusal {
  std::string field;    ///< the option or dotted key named ("" for none)
  std::string message;  ///< what() of the error
};

template <class F>
Refusal refusal(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return {e.field(), e.what()};
  }
  return {};
}

}  // namespace edgc::engine::test
