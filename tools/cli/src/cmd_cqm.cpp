// `edgc cqm`: the rank-error model g(r; m, n) of one gradient shape, as a table over ranks 1..R. It answers
// "which rank would a structure-free gradient of this shape need" before any trace exists.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.hpp"
#include "edgc/core/cqm.hpp"
#include "edgc/core/error.hpp"
#include "edgc/results/table.hpp"

namespace edgc::cli {
namespace {

void require_at_least_one(std::int64_t value, const std::string& option) {
  if (value < 1) throw UsageError(option, "must be >= 1, got " + std::to_string(value));
}

int run_cqm(const std::vector<std::string>& args) {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t rmax = 0;
  po::options_description opts;
  auto add = opts.add_options();
  add("m", po::value(&m)->required(), "rows of the gradient matrix");
  add("n", po::value(&n)->required(), "columns of the gradient matrix");
  add("rmax", po::value(&rmax), "largest rank listed (default min(64, min(m, n)); capped at min(m, n))");
  add("json", "print one JSON document");
  po::variables_map vm;
  if (!parse("cqm", "--m M --n N [--rmax R] [--json]", opts, {}, args, vm)) return 0;
  require_at_least_one(m, "--m");
  require_at_least_one(n, "--n");
  if (vm.count("rmax") != 0U) require_at_least_one(rmax, "--rmax");

  const core::RankErrorModel model(m, n);
  const std::int64_t p = model.max_rank();
  const std::int64_t last = vm.count("rmax") != 0U ? std::min(rmax, p) : std::min<std::int64_t>(64, p);

  if (vm.count("json") != 0U) {
    nlohmann::ordered_json j = {
        {"schema", "edgc.cqm/1"}, {"m", m}, {"n", n}, {"rows", nlohmann::ordered_json::array()}};
    for (std::int64_t r = 1; r <= last; ++r) {
      const double g = model.g(static_cast<double>(r));
      j["rows"].push_back({{"r", r},
                           {"g", g},
                           {"captured", 1.0 - g},
                           {"compression_ratio", core::compression_ratio(m, n, static_cast<double>(r))}});
    }
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  std::cout << "g(r) = expected share of the squared norm left out by the best rank-r approximation of an i.i.d. " << m
            << "x" << n << " matrix (Marchenko-Pastur model); real gradients are correlated, so their error is "
            << "lower.\n\n";
  results::Table table({"r", "g(r)", "captured", "ratio"});
  for (std::int64_t r = 1; r <= last; ++r) {
    const double g = model.g(static_cast<double>(r));
    table.add_row({std::to_string(r), results::fmt_f(g, 4), results::fmt_f(1.0 - g, 4),
                   results::fmt_f(core::compression_ratio(m, n, static_cast<double>(r)), 1)});
  }
  table.print(std::cout);
  return 0;
}

}  // namespace

void add_cqm_command(std::vector<Command>& commands) {
  commands.push_back({"cqm", "expected rank-r approximation error of an m x n gradient (i.i.d. model)", run_cqm});
}

}  // namespace edgc::cli
