// `edgc version`: the versions of edgc and of the libraries it runs on, and which optional parts were built.
#include <Eigen/Core>
#include <boost/version.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/traces/manifest.hpp"

namespace edgc::cli {
namespace {

int run_version(const std::vector<std::string>& args) {
  po::options_description opts;
  opts.add_options()("json", "print one JSON document");
  po::variables_map vm;
  if (!parse("version", "[--json]", opts, {}, args, vm)) return 0;
  nlohmann::ordered_json j = {
      {"edgc", EDGC_VERSION},
      {"trace_format_version", nlohmann::ordered_json::parse(std::to_string(traces::kTraceFormatVersion) + "." +
                                                             std::to_string(traces::kTraceFormatMinor))},
      {"simgrid", sim::simgrid_version()},
      {"eigen", std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                    std::to_string(EIGEN_MINOR_VERSION)},
      {"boost", std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000)},
      {"cuda", EDGC_BUILT_WITH_CUDA != 0},
      {"mpi", EDGC_BUILT_WITH_MPI != 0}};
  if (vm.count("json") != 0U) {
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& [k, v] : j.items())
      std::cout << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  }
  return 0;
}

}  // namespace

void add_version_command(std::vector<Command>& commands) {
  commands.push_back({"version", "versions of edgc and its libraries", run_version});
}

}  // namespace edgc::cli
