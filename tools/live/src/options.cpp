// read_live_options: the scenario's live.* keys (and trace, compression) into LiveOptions. Needs no MPI, so a
// build without MPI still rejects bad live settings the same way.
#include <cstdint>
#include <string>

#include "edgc/core/error.hpp"
#include "edgc/engine/replay.hpp"
#include "edgc/live/live.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/live_config.hpp"

namespace edgc::live {

void read_live_options(scenario::Scenario& sc, LiveOptions& o) {
  const std::string w = sc.where();
  o.compression = scenario::read_compression(sc);
  const std::string trace = scenario::read_trace_path(sc);  // read even when --trace wins, so it is known
  if (o.trace_dir.empty()) o.trace_dir = trace;
  const scenario::LiveSettings live = scenario::read_live_settings(
      sc, [&w](double bins, const std::string& key) { engine::check_bins_per_sigma(bins, w, key); });
  o.pp = live.pp;
  o.max_iterations = live.max_iterations;
  o.perturbation = live.perturbation;
  o.seed = live.seed;
  if (o.backend.empty()) {  // the scenario's backend and communicator, unless the command line gave them
    o.backend = live.backend;
    o.backend_where = w;
    o.backend_field = "live.backend";
  }
  if (o.comm.empty()) o.comm = live.comm;
  o.bins_per_sigma = live.bins_per_sigma;
  o.verify = live.verify.value_or(o.verify);
  o.calibration_min_bytes = live.calibration_min_bytes;
  o.calibration_max_bytes = live.calibration_max_bytes;
  o.calibration_repeats = live.calibration_repeats;
  if (live.probe_ranks) o.probe_ranks = *live.probe_ranks;
  o.probe_repeats = live.probe_repeats;
  if (o.comm != "mpi" && o.comm != "nccl")
    throw ConfigError(w, "live.comm", "expected mpi or nccl, got '" + o.comm + "'");
  if (o.backend != "cpu" && o.backend != "cuda")
    throw ConfigError(o.backend_where, o.backend_field, "expected cpu or cuda, got '" + o.backend + "'");
}

}  // namespace edgc::live
