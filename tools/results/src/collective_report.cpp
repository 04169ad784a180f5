#include "edgc/results/collective_report.hpp"

#include "edgc/results/table.hpp"

namespace edgc::results {
namespace {

// Algorithm bandwidth, GB/s.
double algbw_GBps(const CollectiveRow& r) { return static_cast<double>(r.size_bytes) / r.time_s / 1e9; }

}  // namespace

nlohmann::ordered_json to_json(const CollectiveReport& report) {
  nlohmann::ordered_json j = {
      {"schema", kCollectiveSchema}, {"cluster", report.cluster},     {"op", report.op},
      {"ranks", report.ranks},       {"placement", report.placement}, {"network", report.network},
      {"channels", report.channels}, {"simgrid", report.simgrid},     {"rows", nlohmann::ordered_json::array()}};
  for (const CollectiveRow& r : report.rows) {
    const double algbw = algbw_GBps(r);
    j["rows"].push_back({{"size_bytes", r.size_bytes},
                         {"count", r.size_bytes / kCollectiveElementBytes},
                         {"type", "float"},
                         {"time_us", r.time_s * 1e6},
                         {"algbw_GBps", algbw},
                         {"busbw_GBps", algbw * report.bus_factor},
                         {"algorithm", r.algorithm}});
  }
  return j;
}

void print_collective_table(std::ostream& os, const CollectiveReport& report) {
  os << "# edgc collective: " << report.op << " on " << report.ranks << " of " << report.cluster_gpus << " GPUs of '"
     << report.cluster << "' (" << report.placement << " placement, " << report.network << " network, "
     << report.channels << " ring channel" << (report.channels == 1 ? "" : "s") << ", simulated with SimGrid "
     << report.simgrid << ")\n";
  Table table({"size(B)", "count", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "algo"});
  double busbw_sum = 0;
  for (const CollectiveRow& r : report.rows) {
    const double algbw = algbw_GBps(r);
    busbw_sum += algbw * report.bus_factor;
    table.add_row({std::to_string(r.size_bytes), std::to_string(r.size_bytes / kCollectiveElementBytes), "float",
                   fmt_f(r.time_s * 1e6, 2), fmt_f(algbw, 2), fmt_f(algbw * report.bus_factor, 2), r.algorithm});
  }
  table.print(os);
  os << "# Avg bus bandwidth    : " << fmt_f(busbw_sum / static_cast<double>(report.rows.size()), 3) << "\n";
}

}  // namespace edgc::results
