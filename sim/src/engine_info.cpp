#include "edgc/sim/engine_info.hpp"

// simgrid/version.h needs the declaration macros of xbt/base.h: keep them in two blocks.
#include <xbt/base.h>

#include <simgrid/version.h>

namespace edgc::sim {

std::string simgrid_version() {
  int major = 0;
  int minor = 0;
  int patch = 0;
  sg_version_get(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::unique_ptr<simgrid::s4u::Engine> boot_engine() {
  // SimGrid keeps argv[0] as the program name; the arrays outlive the engine.
  static int argc = 1;
  static char name[] = "edgc";
  static char* argv[] = {name, nullptr};
  return std::make_unique<simgrid::s4u::Engine>(&argc, argv);
}

}  // namespace edgc::sim
