#pragma once
// The simulation engine: booting it the one way edgc does, and what it is (SimGrid's version as linked at run
// time, not only as compiled against, so a result can say which engine produced it).
#include <memory>
#include <simgrid/s4u/Engine.hpp>
#include <string>

namespace edgc::sim {

/// "3.32.0"-style version of the SimGrid library in use.
std::string simgrid_version();

/// A SimGrid engine for this process, started without command-line options. SimGrid allows one simulation per
/// process: call it once (simulations of their own run in forked children).
std::unique_ptr<simgrid::s4u::Engine> boot_engine();

}  // namespace edgc::sim
