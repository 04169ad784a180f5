// The bundled cluster library (scenarios/clusters/): every file cites a source for each figure it sets, and
// `simulate` runs a small GPT on one node of it, with the efficiency model and, where the GPU has measured GEMM
// figures, with the kernel-level model; the GPU's memory is checked and the GPU named in the result.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using edgc::cli::test::edgc;
using edgc::traces::test::read_file;
using edgc::traces::test::TempDir;
using nlohmann::json;

const std::string kSource = EDGC_SOURCE_DIR;
// 8 layers of hidden 512 at tp 2 x pp 2 x dp 2: 8 GPUs, one node of every bundled cluster.
const std::string kSmallGpt = kSource + "/tests/data/simulate/small.json";

std::vector<fs::path> bundled_clusters() {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(kSource + "/scenarios/clusters"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Every number a cluster file sets, as "cluster.<dotted key>"; the GEMM shape keys are cited with matmul_tflops and
// gpus_per_node with the node type in the description.
void numeric_keys(const json& j, const std::string& prefix, std::vector<std::string>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix + "." + it.key();
    const bool uncited = it.key() == "gpus_per_node" || it.key() == "matmul_m" || it.key() == "matmul_n" ||
                         it.key() == "matmul_k" || it.key() == "fp8_matmul_m" || it.key() == "fp8_matmul_n" ||
                         it.key() == "fp8_matmul_k";
    if (it->is_object())
      numeric_keys(*it, key, out);
    else if (it->is_number() && !uncited)
      out.push_back(key);
  }
}

TEST(ClusterLibrary, HoldsTheBundledNodeTypes) {
  std::vector<std::string> names;
  for (const fs::path& f : bundled_clusters()) names.push_back(f.filename().string());
  for (const char* expected : {"aws-p4de-a100.json", "dgx-a100.json", "dgx-b200.json", "dgx-h100.json", "dgx-h200.json",
                               "dgx1-v100.json", "roce-h100-2x200g.json"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

TEST(ClusterLibrary, EveryFigureHasASource) {
  for (const fs::path& f : bundled_clusters()) {
    SCOPED_TRACE(f.string());
    const json doc = json::parse(read_file(f));
    ASSERT_TRUE(doc.contains("description") && doc["description"].is_string());
    ASSERT_TRUE(doc.contains("sources") && doc["sources"].is_object());
    std::vector<std::string> keys;
    numeric_keys(doc.at("cluster"), "cluster", keys);
    EXPECT_GE(keys.size(), 10U);
    for (const std::string& k : keys) {
      ASSERT_TRUE(doc["sources"].contains(k)) << k << " has no source";
      EXPECT_FALSE(doc["sources"][k].get<std::string>().empty()) << k;
    }
  }
}

TEST(ClusterLibrary, EveryBundledClusterSimulatesASmallGpt) {
  for (const fs::path& f : bundled_clusters()) {
    SCOPED_TRACE(f.string());
    const json cluster = json::parse(read_file(f)).at("cluster");
    std::vector<std::string> models = {""};
    if (cluster.at("gpu").contains("matmul_tflops")) models.push_back(" --set compute.model=kernels");
    for (const std::string& model : models) {
      TempDir tmp;
      const auto r =
          edgc("simulate --scenario " + kSmallGpt + " --set cluster=" + f.string() +
                   " --set cluster.nodes=1 --set run.iterations=20" + model + " --out " + (tmp / "a").string(),
               tmp);
      ASSERT_EQ(r.code, 0) << model << ": " << r.err;
      const json result = json::parse(read_file(tmp / "a" / "result.json"));
      EXPECT_EQ(result.at("cluster").at("gpu"), cluster.at("gpu").at("name"));
      EXPECT_EQ(result.at("cluster").at("gpus"), 8);
      const json& memory = result.at("memory");
      EXPECT_TRUE(memory.at("checked").get<bool>());
      EXPECT_LT(memory.at("peak_GiB").get<double>(), memory.at("capacity_GiB").get<double>());
      for (const json& run : result.at("runs")) EXPECT_GT(run.at("iteration_time_s").get<double>(), 0.0);
      if (!model.empty()) {
        EXPECT_EQ(result.at("cost_model").at("compute"), "kernels") << result.at("cost_model").dump();
      }
    }
  }
}

}  // namespace
