// The up-front key check of sweeps and plans (tools/engine/src/sweep_keys.hpp): every key simulate reads passes, a
// misspelt one in any section is refused naming the spec's field, bad values are left to the points.
#include "sweep_keys.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "trace_test_util.hpp"

namespace {

using edgc::ConfigError;
using edgc::engine::assignment;
using edgc::engine::check_spec_keys;
using edgc::engine::SpecSetting;
using nlohmann::json;

const std::string kSmall = std::string(EDGC_SOURCE_DIR) + "/tests/data/simulate/small.json";

SpecSetting axis(const std::string& key, const json& value) { return {"axes[0].key", key, assignment(key, value)}; }

// The message check_spec_keys throws for one setting, or "" when it passes.
std::string refusal(const std::vector<SpecSetting>& settings, const std::string& base = kSmall) {
  try {
    check_spec_keys("spec.json", base, settings);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Every key simulate's own readers read (scanned from their sources: simulation.cpp, the simulate settings and
// trace.path in edgc::scenario, so a key added there without adding it to sweep_keys.cpp fails here) and a key of
// every reader's section passes.
TEST(SweepKeys, EveryKeySimulateReadsPasses) {
  const std::regex read(R"(sc\.(number|integer|int32|string|boolean)\("([a-z_.]+)\")");
  std::set<std::string> keys;
  for (const char* file : {"/tools/engine/src/simulation.cpp", "/tools/scenario/src/simulate_config.cpp",
                           "/tools/scenario/src/config.cpp"}) {
    const std::string source = edgc::traces::test::read_file(std::string(EDGC_SOURCE_DIR) + file);
    for (auto it = std::sregex_iterator(source.begin(), source.end(), read); it != std::sregex_iterator(); ++it)
      keys.insert((*it)[2]);
  }
  ASSERT_GE(keys.size(), 15U) << "the scan found too few reads: did simulate's reading move?";
  for (const std::string& key : keys) EXPECT_EQ(refusal({axis(key, 1)}), "") << key;
  for (const char* key :
       {"cluster.nodes", "cluster.gpu.memory_GiB", "network.profile", "model.layers", "parallelism.microbatches",
        "compute.efficiency", "compression.window", "compression.warmup.stable_windows", "compression.dac.enabled"})
    EXPECT_EQ(refusal({axis(key, 1)}), "") << key;
}

TEST(SweepKeys, AMisspeltKeyIsRefusedNamingTheFieldThatSetIt) {
  for (const char* key : {"cluster.nodez", "cluster.gpu.memory_gib", "network.profil", "model.layerz",
                          "parallelism.ddp", "compute.eficiency", "compression.windw", "run.iteratons", "trace.pth",
                          "entropy.synthetic.sead", "simulate.policy", "variability.sed"}) {
    const std::string why = refusal({{"set." + std::string(key), key, assignment(key, 2)}});
    EXPECT_EQ(why, "spec.json: set." + std::string(key) + ": '" + key +
                       "' is not a scenario key simulate reads (unknown key; no point was run)")
        << key;
  }
  EXPECT_EQ(refusal({axis("compresion.window", 10)}),
            "spec.json: axes[0].key: 'compresion.window': simulate reads no section 'compresion' (it reads cluster, "
            "network, model, parallelism, compute, compression, run, trace, entropy, simulate, variability, fidelity, "
            "framework)");
  // In a bundle, the value that holds the typo is named.
  EXPECT_NE(refusal({{"axes[1].values[0].cluster.nodes", "cluster.nodes", "cluster.nodes=2"},
                     {"axes[1].values[1].cluster.nodez", "cluster.nodez", "cluster.nodez=4"}})
                .find("spec.json: axes[1].values[1].cluster.nodez: 'cluster.nodez'"),
            std::string::npos);
}

TEST(SweepKeys, AnUnknownKeyOfTheBaseScenarioIsNamedInTheBase) {
  edgc::traces::test::TempDir tmp;
  json base = json::parse(edgc::traces::test::read_file(kSmall));
  base["run"]["iteratons"] = 5;
  edgc::traces::test::write_file(tmp / "base.json", base.dump());
  EXPECT_EQ(refusal({axis("compression.window", 10)}, (tmp / "base.json").string()),
            (tmp / "base.json").string() + ": run.iteratons: unknown key (found before the sweep ran any point)");
}

// Values are each point's business: a layout that does not fit, an unreadable cluster file, a wrong type.
TEST(SweepKeys, BadValuesAreLeftToThePoints) {
  EXPECT_EQ(refusal({axis("cluster.nodes", 3)}), "");
  EXPECT_EQ(refusal({axis("cluster", "no-such-cluster.json")}), "");
  EXPECT_EQ(refusal({axis("model.layers", "eight")}), "");
  EXPECT_EQ(refusal({axis("compression.policy", "nonsense")}), "");
  // A value error in one reader still lets a typo elsewhere be found.
  EXPECT_NE(
      refusal({axis("model.layers", "eight"), {"set.compression.windw", "compression.windw", "compression.windw=3"}})
          .find("set.compression.windw"),
      std::string::npos);
}

}  // namespace
