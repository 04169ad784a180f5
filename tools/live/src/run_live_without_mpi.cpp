// run_live of a build without MPI (CMake compiles this file instead of the MPI ones): it refuses, naming the fix.
#include "edgc/core/error.hpp"
#include "edgc/live/live.hpp"

namespace edgc::live {

int run_live(const LiveOptions&) {
  throw UsageError("live", "this edgc was built without MPI (install an MPI and rebuild with EDGC_ENABLE_MPI=ON)");
}

}  // namespace edgc::live
