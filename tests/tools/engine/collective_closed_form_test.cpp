// `edgc collective`'s closed forms (sim::lone_collective_s) against the simulation they replace
// (CollectiveRequest::simulate_all): every row of every table must agree within 1e-9 relative, over the operations,
// 2 to 512 ranks, spread and packed placements, the ideal and calibrated profiles and sizes from 4 B to 1 GiB; where
// the argument holds nothing is simulated (no SimGrid communication is started), and where it does not (GPUs
// sharing a DGX-1 NIC, NVLink shared by the channels of a packed multi-node group, a forced tree, fabric links that
// several hops cross, an all-to-all) every size is still simulated. Each sweep runs in a forked child (SimGrid runs
// one simulation per process).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "edgc/core/isolated.hpp"
#include "edgc/engine/collective_sweep.hpp"
#include "edgc/results/collective_report.hpp"
#include "trace_test_util.hpp"

namespace edgc::engine {
namespace {

using nlohmann::json;

const std::string kSource = EDGC_SOURCE_DIR;

// The report of one sweep and the SimGrid communications it started, from a forked child.
struct Sweep {
  json report;
  std::uint64_t comms = 0;
};

Sweep sweep(const CollectiveRequest& request) {
  const std::vector<std::string> out = core::run_isolated(
      {[&] {
        std::uint64_t comms = 0;
        simgrid::s4u::Comm::on_send_cb([&comms](const simgrid::s4u::Comm&) { ++comms; });
        const results::CollectiveReport report = run_collective_sweep(request);
        return json{{"report", json::parse(results::to_json(report).dump())}, {"comms", comms}}.dump();
      }},
      1);
  const json j = json::parse(out.front());
  return {j.at("report"), j.at("comms").get<std::uint64_t>()};
}

bool same_time(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// Sweeps `request` with the closed forms and fully simulated, expects the same report (every number within 1e-9
// relative, everything else equal) and returns the closed-form run's communications and the simulated run's.
std::pair<std::uint64_t, std::uint64_t> expect_same_tables(CollectiveRequest request) {
  const std::string what = request.op + " over " + std::to_string(request.ranks) + " ranks, " + request.placement +
                           ", " + (request.network.empty() ? "scenario's" : request.network) + " network";
  request.simulate_all = false;
  const Sweep closed = sweep(request);
  request.simulate_all = true;
  const Sweep simulated = sweep(request);
  json a = closed.report;
  json b = simulated.report;
  const json rows_a = a.at("rows");
  const json rows_b = b.at("rows");
  EXPECT_EQ(rows_a.size(), rows_b.size()) << what;
  for (std::size_t i = 0; i < std::min(rows_a.size(), rows_b.size()); ++i) {
    const json& ra = rows_a[i];
    const json& rb = rows_b[i];
    EXPECT_EQ(ra.size(), rb.size()) << what;
    for (const auto& [key, value] : rb.items()) {
      if (value.is_number_float())
        EXPECT_TRUE(same_time(ra.at(key).get<double>(), value.get<double>()))
            << what << ", " << rb.at("size_bytes") << " B, " << key << ": " << ra.at(key) << " vs " << value;
      else
        EXPECT_EQ(ra.at(key), value) << what << ", " << key;
    }
  }
  a.erase("rows");
  b.erase("rows");
  EXPECT_EQ(a, b) << what;
  EXPECT_GT(simulated.comms, 0U) << what;
  return {closed.comms, simulated.comms};
}

CollectiveRequest request(const std::string& cluster, const std::string& op, int ranks, const std::string& placement) {
  CollectiveRequest r;
  r.cluster = kSource + "/scenarios/clusters/" + cluster;
  r.op = op;
  r.ranks = ranks;
  r.placement = placement;
  r.min_bytes = "4";
  r.max_bytes = "1G";
  r.step_factor = 8;
  return r;
}

// The calibrated profile of tests/data/nccl's two H100 logs as `edgc calibrate` fits them (efficiencies rounded),
// written where `dir` points; the sets that select it.
std::vector<std::string> calibrated(const traces::test::TempDir& dir) {
  const std::string path = (dir / "calibration.json").string();
  std::ofstream(path) << R"({"schema": "edgc.calibration/1",
    "intra": {"points": [[4096, 1.0], [131072, 0.68077], [524288, 0.57293], [2097152, 0.69766], [8388608, 0.87304],
                         [33554432, 1.0], [134217728, 1.0], [2147483648, 1.0]], "latency_factor": 4.7619},
    "inter": {"points": [[0.5, 1.0], [65536, 0.061679], [1048576, 0.092096], [8388608, 0.4105], [67108864, 0.75881],
                         [536870912, 0.8497]], "latency_factor": 1.5185}})";
  return {"network.profile=calibrated", "network.calibration=" + path};
}

// One operation on 64 DGX H100 GPUs (8 nodes), both placements, both profiles, 2 to 64 ranks, 4 B to 1 GiB. Spread
// groups (one GPU per node, then the next GPU of each) and packed groups inside one node run alone on their links;
// a packed group over several nodes runs 8 channels whose hops share the GPUs' NVLink links, so it is simulated.
void expect_every_row_as_simulated(const std::string& op) {
  const traces::test::TempDir dir;
  for (const bool cal : {false, true})
    for (const std::string placement : {"spread", "packed"})
      for (const int ranks : {2, 3, 8, 64}) {
        CollectiveRequest r = request("dgx-h100.json", op, ranks, placement);
        if (cal) r.sets = calibrated(dir);
        const auto [closed, simulated] = expect_same_tables(r);
        const bool alone = placement == "spread" || ranks <= 8;
        EXPECT_EQ(closed, alone ? 0U : simulated) << op << " " << placement << " " << ranks << (cal ? " cal" : "");
      }
}

TEST(CollectiveClosedForm, AllReduceEveryRowAsSimulated) { expect_every_row_as_simulated("all_reduce"); }
TEST(CollectiveClosedForm, ReduceScatterEveryRowAsSimulated) { expect_every_row_as_simulated("reduce_scatter"); }
TEST(CollectiveClosedForm, AllGatherEveryRowAsSimulated) { expect_every_row_as_simulated("all_gather"); }
TEST(CollectiveClosedForm, SendRecvEveryRowAsSimulated) { expect_every_row_as_simulated("sendrecv"); }

// 512 ranks spread over 64 DGX H100 nodes (eight per node, every hop across the fabric), 1 KiB and 1 GiB: the
// table the benchmark times, against the simulation it replaces.
TEST(CollectiveClosedForm, FiveHundredTwelveRanksAsSimulated) {
  const traces::test::TempDir dir;
  for (const std::string op : {"all_reduce", "all_gather"})
    for (const bool cal : {false, true}) {
      if (op == "all_gather" && cal) continue;  // the calibrated curves are checked on all_reduce; keep the test short
      CollectiveRequest r = request("dgx-h100.json", op, 512, "spread");
      r.sets = {"cluster.nodes=64"};
      if (cal) {
        const std::vector<std::string> sets = calibrated(dir);
        r.sets.insert(r.sets.end(), sets.begin(), sets.end());
      }
      r.min_bytes = "1K";
      r.step_factor = std::int64_t{1} << 20;
      EXPECT_EQ(expect_same_tables(r).first, 0U) << op;
    }
}

// Outside the argument every size is simulated: two GPUs of a DGX-1 node share a NIC (spread 8 over 4 nodes) and a
// cube-mesh node runs several rings over shared NVLinks (packed); a forced tree; an oversubscribed fat tree whose node
// links carry eight hops (64 ranks spread over 8 nodes); an all-to-all. One GPU per DGX-1 node, and one per node of
// the same fat tree (the ring crosses each leaf uplink once), do run alone.
TEST(CollectiveClosedForm, OutsideTheArgumentStillSimulates) {
  const auto all_simulated = [](const CollectiveRequest& r) {
    const auto [closed, simulated] = expect_same_tables(r);
    EXPECT_EQ(closed, simulated) << r.cluster << " " << r.op << " " << r.ranks << " " << r.placement;
  };
  all_simulated(request("dgx1-v100.json", "all_reduce", 8, "spread"));
  all_simulated(request("dgx1-v100.json", "all_reduce", 8, "packed"));
  EXPECT_EQ(expect_same_tables(request("dgx1-v100.json", "all_reduce", 4, "spread")).first, 0U);

  CollectiveRequest tree = request("dgx-h100.json", "all_reduce", 8, "spread");
  tree.sets = {"network.algorithm=tree"};
  all_simulated(tree);
  const Sweep forced = sweep(tree);
  for (const json& row : forced.report.at("rows")) EXPECT_EQ(row.at("algorithm"), "tree");

  CollectiveRequest fat = request("dgx-h100.json", "all_reduce", 64, "spread");
  fat.sets = {"cluster.inter_node.fabric=fat-tree", "cluster.inter_node.oversubscription=2"};
  all_simulated(fat);
  fat.ranks = 8;
  EXPECT_EQ(expect_same_tables(fat).first, 0U);

  all_simulated(request("dgx-h100.json", "all_to_all", 8, "spread"));
}

}  // namespace
}  // namespace edgc::engine
