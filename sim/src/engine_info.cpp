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

}  // namespace edgc::sim
