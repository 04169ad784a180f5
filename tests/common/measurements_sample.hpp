// A measurements document with every field different from its default, shared by the results and engine tests.
#pragma once

#include "edgc/results/measurements.hpp"

namespace edgc::results::test {

// Every field different from its default, so a field the writer or the reader drops shows up.
inline Measurements sample() {
  Measurements m;
  m.world_size = 4;
  m.pp = 2;
  m.dp = 2;
  m.comm = "nccl";
  m.backend = "cuda";
  m.element_bytes = 2;
  m.cluster_file = "machines/cluster.json";
  m.trace = "/traces/tinygpt";
  for (int g = 0; g < 4; ++g) m.placement.push_back({g, "host" + std::to_string(g / 2), g / 2, g % 2, g / 2, g % 2});
  m.calibration.ranks = 2;
  m.calibration.rows = {{1024, 1.25e-5}, {1 << 20, 3.0000000000000004e-4}};
  m.calibration.latency_s = 6.1e-6;
  m.calibration.bandwidth_Bps = 9.87654321e9;
  MeasuredRun run;
  run.policy = "edgc";
  Step step;
  step.step = 3;
  step.iteration = 300;
  step.iteration_s = 0.1 + 0.2;  // not exactly representable: the round trip must keep every bit
  for (int s = 0; s < 2; ++s) {
    StageStep st;
    st.rank = 8 * (s + 1);
    st.sync_s = 0.01 * (s + 1);
    st.compute_s = 1e-3 / 3;
    st.wire_bytes = 123456 + s;
    st.dense_bytes = 9876543210LL;  // past 2^32
    st.collectives = {{"dense", 4096, 1e-5}, {"P", 40960, 2.5e-5}, {"Q", 40961, 2.75e-5}};
    st.matrices = {{256, 1024, st.rank, 2}, {1024, 256, st.rank, 3}};
    step.stages.push_back(st);
  }
  run.steps.push_back(step);
  m.runs.push_back(run);
  m.runs.push_back({"none", {}});
  m.tcom_points = {{0, 4, 1.5e-4, 2e-5}, {1, 8, 1.75e-4, 3e-5}};
  m.tcom_fit = {{0, 4.1e-6, -1.2e-5, 0.987, 3}, {1, 0.0, 1.75e-4, 1.0, 1}};
  return m;
}

}  // namespace edgc::results::test
