#pragma once
// What the simulation engine is: SimGrid's version as linked at run time (not only as compiled against), so a
// result can say which engine produced it.
#include <string>

namespace edgc::sim {

/// "3.32.0"-style version of the SimGrid library in use.
std::string simgrid_version();

}  // namespace edgc::sim
