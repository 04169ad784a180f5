// The typed readers of the simulate, replay and live settings (simulate_config.hpp, replay_config.hpp,
// live_config.hpp) and read_trace_path: their defaults, the values a scenario gives, and the key each refusal names.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/live_config.hpp"
#include "edgc/scenario/replay_config.hpp"
#include "edgc/scenario/simulate_config.hpp"

namespace edgc::scenario {
namespace {

Scenario with(const std::vector<std::string>& sets) {
  Scenario sc;
  for (const std::string& s : sets) sc.set(s);
  return sc;
}

// The key of the ConfigError `f` throws ("" when none).
template <class F>
std::string refused_key(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.field();
  }
  return "";
}

const auto kNoCheck = [](const std::string&, const std::string&) {};
const auto kNoBinsCheck = [](double, const std::string&) {};

TEST(SimulateSettings, DefaultsAndGivenValues) {
  Scenario empty;
  EXPECT_EQ(read_run_iterations(empty), 100000);
  const sim::ComputeVariability v = read_variability(empty);
  EXPECT_EQ(v.compute_jitter_cv, 0.0);
  EXPECT_EQ(v.straggler_slowdown, 1.0);
  const SimulateSettings s = read_simulate_settings(empty);
  EXPECT_TRUE(s.compose_allowed);
  EXPECT_EQ(s.policies, "");
  const EntropySourceSettings e = read_entropy_source(empty);
  EXPECT_FALSE(e.from_trace);
  EXPECT_EQ(e.trace_path, "");
  const FidelitySettings f = read_fidelity_settings(empty, kNoCheck);
  EXPECT_TRUE(f.measure);
  EXPECT_EQ(f.backend, "cpu");
  EXPECT_FALSE(f.max_error.has_value());

  Scenario given =
      with({"run.iterations=500", "simulate.composition=exact", "simulate.policies=none,edgc", "trace.path=/traces/t",
            "entropy.bins_per_sigma=4", "fidelity.max_error=0.2", "entropy.synthetic.start_nats=-4"});
  EXPECT_EQ(read_run_iterations(given), 500);
  EXPECT_FALSE(read_simulate_settings(given).compose_allowed);
  const EntropySourceSettings t = read_entropy_source(given);
  EXPECT_TRUE(t.from_trace);  // the default source with a trace
  EXPECT_EQ(t.trace_path, "/traces/t");
  EXPECT_EQ(t.bins_per_sigma, 4.0);
  EXPECT_EQ(read_fidelity_settings(given, kNoCheck).max_error, 0.2);
  EXPECT_EQ(read_synthetic_entropy(given).start_nats, -4.0);
  EXPECT_EQ(read_synthetic_entropy(empty).end_nats, sim::SyntheticEntropy{}.end_nats);
}

TEST(SimulateSettings, RefusalsNameTheKey) {
  EXPECT_EQ(refused_key([] {
              Scenario sc = with({"run.iterations=0"});
              read_run_iterations(sc);
            }),
            "run.iterations");
  EXPECT_EQ(refused_key([] {
              Scenario sc = with({"simulate.composition=maybe"});
              read_simulate_settings(sc);
            }),
            "simulate.composition");
  EXPECT_EQ(refused_key([] {
              Scenario sc = with({"entropy.source=trace"});
              read_entropy_source(sc);
            }),
            "trace.path");
  EXPECT_EQ(refused_key([] {
              Scenario sc = with({"entropy.source=oracle"});
              read_entropy_source(sc);
            }),
            "entropy.source");
  EXPECT_EQ(refused_key([] {
              Scenario sc = with({"fidelity.max_error=0"});
              read_fidelity_settings(sc, kNoCheck);
            }),
            "fidelity.max_error");
  // The backend check runs before max_error is read.
  std::string checked;
  Scenario sc = with({"fidelity.backend=tpu", "fidelity.max_error=0"});
  EXPECT_EQ(refused_key([&] {
              read_fidelity_settings(sc, [&](const std::string& backend, const std::string& key) {
                checked = backend;
                throw ConfigError("", key, "no such backend");
              });
            }),
            "fidelity.backend");
  EXPECT_EQ(checked, "tpu");
}

TEST(ReplaySettings, DefaultsGivenValuesAndRefusals) {
  Scenario empty;
  const ReplaySettings d = read_replay_settings(empty, kNoBinsCheck);
  EXPECT_EQ(d.world_size, 4);
  EXPECT_EQ(d.perturbation, 0.1);
  EXPECT_TRUE(d.compare_full);
  EXPECT_EQ(d.stages, 0);
  Scenario given = with({"replay.world_size=2", "replay.seed=7", "replay.compare_full=false"});
  const ReplaySettings g = read_replay_settings(given, kNoBinsCheck);
  EXPECT_EQ(g.world_size, 2);
  EXPECT_EQ(g.seed, 7U);
  EXPECT_FALSE(g.compare_full);
  EXPECT_EQ(refused_key([] {
              Scenario sc = with({"replay.stages=-1"});
              read_replay_settings(sc, kNoBinsCheck);
            }),
            "replay.stages");
}

TEST(LiveSettings, DefaultsGivenValuesAndRefusals) {
  Scenario empty;
  const LiveSettings d = read_live_settings(empty, kNoBinsCheck);
  EXPECT_EQ(d.comm, "mpi");
  EXPECT_FALSE(d.verify.has_value());
  EXPECT_FALSE(d.probe_ranks.has_value());
  EXPECT_EQ(d.calibration_max_bytes, std::int64_t{4} << 20);
  Scenario given = with({"live.probe.ranks=8,4,8", "live.verify=true", "live.pp=2"});
  const LiveSettings g = read_live_settings(given, kNoBinsCheck);
  EXPECT_EQ(g.probe_ranks, (std::vector<int>{4, 8}));
  EXPECT_EQ(g.verify, true);
  EXPECT_EQ(g.pp, 2);
  for (const auto& [set, key] : std::vector<std::pair<std::string, std::string>>{
           {"live.probe.ranks=4,x", "live.probe.ranks"},
           {"live.pp=-1", "live.pp"},
           {"live.perturbation=-0.5", "live.perturbation"},
           {"live.calibration.repeats=0", "live.calibration.repeats"},
           {"live.calibration.min_bytes=2", "live.calibration.max_bytes"}}) {
    const std::string setting = set;  // Clang 14 cannot capture a structured binding
    EXPECT_EQ(refused_key([&] {
                Scenario sc = with({setting});
                read_live_settings(sc, kNoBinsCheck);
              }),
              key)
        << set;
  }
}

TEST(TracePath, ResolvedAgainstTheScenarioOrEmpty) {
  Scenario empty;
  EXPECT_EQ(read_trace_path(empty), "");
  Scenario given = with({"trace.path=/traces/a/../b"});
  EXPECT_EQ(read_trace_path(given), "/traces/b");
}

// Every integer of a scenario is read through core/checked_int.hpp: values past the type are refused naming the key
// and the range, never wrapped (2^64 - 1 read as -1 before), and seeds take the whole of uint64 but no sign.
TEST(ScenarioIntegers, ReadCheckedNeverWrapped) {
  const auto message = [](auto&& read) {
    try {
      read();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Scenario sc = with({"a=18446744073709551615", "b=2147483648", "c=-2147483648", "d=1.5", "e=\"7\"",
                      "f=9223372036854775807", "s=18446744073709551615", "t=-1"});
  EXPECT_EQ(message([&] { sc.integer("a", 0); }),
            "(defaults): a: must be in [-9223372036854775808, 9223372036854775807], got 18446744073709551615");
  EXPECT_EQ(sc.integer("f", 0), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(message([&] { sc.int32("b", 0); }), "(defaults): b: must be in [-2147483648, 2147483647], got 2147483648");
  EXPECT_EQ(sc.int32("c", 0), std::numeric_limits<int>::min());
  EXPECT_EQ(message([&] { sc.int32("d", 0); }), "(defaults): d: expected an integer, got 1.5");
  EXPECT_EQ(message([&] { sc.integer("e", 0); }), "(defaults): e: expected an integer, got \"7\"");
  EXPECT_EQ(sc.seed("s", 0), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(message([&] { sc.seed("t", 0); }), "(defaults): t: must be in [0, 18446744073709551615], got -1");
  EXPECT_EQ(sc.seed("absent", 42), 42U);
}

// trace.error_path is read with the fidelity settings, resolved and normalised like trace.path, and independent of it;
// an empty string is refused (it would silently mean "the entropy's trace").
TEST(TracePath, TheErrorSidesTraceIsResolvedLikeTracePathAndAnEmptyOneRefused) {
  Scenario empty;
  EXPECT_EQ(read_fidelity_settings(empty, kNoCheck).trace_path, "");
  Scenario given = with({"trace.path=/traces/blocks", "trace.error_path=/traces/a/../full"});
  EXPECT_EQ(read_fidelity_settings(given, kNoCheck).trace_path, "/traces/full");
  EXPECT_EQ(read_trace_path(given), "/traces/blocks");
  EXPECT_EQ(read_entropy_source(given).trace_path, "/traces/blocks");
  EXPECT_EQ(refused_key([] {
              Scenario sc = with({"trace.error_path="});
              read_fidelity_settings(sc, kNoCheck);
            }),
            "trace.error_path");
}

}  // namespace
}  // namespace edgc::scenario
