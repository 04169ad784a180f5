// The model/parallelism/compute readers of the CLI and the two paper scenarios checked in under scenarios/paper.
#include "edgc/scenario/model_config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/sim/cost_model.hpp"
#include "edgc/sim/layout.hpp"
#include "expect_error.hpp"

namespace edgc::scenario {
namespace {

namespace fs = std::filesystem;

const std::string kScenarios = std::string(EDGC_SOURCE_DIR) + "/scenarios";

// A paper scenario as `edgc` reads it: the included cluster file, then the included model file.
struct Loaded {
  ModelConfig config;
  sim::ClusterSpec cluster;
  std::string where;
};

Loaded load(const std::string& relative) {
  Scenario sc = load_scenario(kScenarios + "/" + relative, {});
  sc.splice_include("model");
  const sim::ClusterSpec cluster = read_cluster(sc);
  Loaded l{.config = read_model_config(sc, cluster.gpu), .cluster = cluster, .where = sc.where()};
  return l;
}

TEST(PaperScenarios, Gpt2_2_5bOn32V100LoadsAndValidates) {
  const Loaded l = load("paper/gpt2-2.5b-32xv100.json");
  const ModelConfig& c = l.config;
  EXPECT_EQ(l.cluster.total_gpus(), 32);
  EXPECT_EQ(c.model.name, "GPT2-2.5B");
  EXPECT_EQ(c.model.layers, 52);
  EXPECT_EQ(c.model.micro_batch_size, 8);
  EXPECT_EQ(c.model.recompute, sim::Recompute::kFull);
  EXPECT_DOUBLE_EQ(c.cost.compute_efficiency, 0.32);
  const sim::ParallelSpec p = sim::validate(c.model, c.parallel, l.cluster, l.where);
  EXPECT_EQ(p.tp * p.pp * p.dp, 32);
  EXPECT_GE(p.dp, 2);
  EXPECT_EQ(p.microbatches, 32);
  const double params = static_cast<double>(sim::parameter_count(c.model));
  EXPECT_GT(params, 2.4e9);
  EXPECT_LT(params, 2.5e9);
}

TEST(PaperScenarios, Gpt2_12_1bOn64H100LoadsAndValidates) {
  const Loaded l = load("paper/gpt2-12.1b-64xh100.json");
  const ModelConfig& c = l.config;
  EXPECT_EQ(l.cluster.total_gpus(), 64);
  EXPECT_EQ(c.model.name, "GPT2-12.1B");
  EXPECT_EQ(c.model.dtype, "bf16");
  const sim::ParallelSpec p = sim::validate(c.model, c.parallel, l.cluster, l.where);
  EXPECT_EQ(p.tp * p.pp * p.dp, 64);
  EXPECT_GE(p.dp, 2);
  EXPECT_EQ(p.microbatches, 64);
  // 12·L·h² + 13·L·h of the transformer blocks is the "12.1B"; the embeddings add about 0.21B.
  const double params = static_cast<double>(sim::parameter_count(c.model));
  EXPECT_GT(params, 12.0e9);
  EXPECT_LT(params, 12.4e9);
}

class ModelConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("edgc_model_config_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "models");
    write("models/m.json",
          R"({"description": "x", "model": {"name": "m", "layers": 4, "hidden": 64, "heads": 4, "seq_len": 32,
                                            "vocab": 512}})");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Loads `text` as a scenario and returns the field of the ConfigError its reading throws ("" if none).
  std::string failing_field(const std::string& text) {
    write("s.json", text);
    try {
      Scenario sc = Scenario::load(path("s.json"));
      sc.splice_include("model");
      (void)read_model_config(sc, sim::GpuSpec{});
    } catch (const ConfigError& e) {
      return e.field();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(ModelConfigFile, IncludeByPathAndWithLocalOverrides) {
  write("a.json", R"({"model": "models/m.json", "parallelism": {"tp": 2, "schedule": "gpipe"}})");
  Scenario a = Scenario::load(path("a.json"));
  a.splice_include("model");
  a.set("model.micro_batch_size=2");  // overrides apply to the spliced section
  const ModelConfig ca = read_model_config(a, sim::GpuSpec{});
  EXPECT_EQ(ca.model.layers, 4);
  EXPECT_EQ(ca.model.micro_batch_size, 2);
  EXPECT_EQ(ca.parallel.tp, 2);
  EXPECT_EQ(ca.parallel.schedule, sim::PipelineSchedule::kGpipe);
  EXPECT_DOUBLE_EQ(ca.cost.compute_efficiency, sim::CostParams{}.compute_efficiency);

  write("b.json", R"({"model": {"include": "models/m.json", "layers": 8, "global_batch_size": 16}})");
  Scenario b = Scenario::load(path("b.json"));
  b.splice_include("model");
  const ModelConfig cb = read_model_config(b, sim::GpuSpec{});
  EXPECT_EQ(cb.model.layers, 8);
  EXPECT_EQ(cb.model.hidden, 64);
  EXPECT_EQ(cb.model.global_batch_size, 16);
}

TEST_F(ModelConfigFile, ATopLevelKeyOutsideTheCommandsSectionsAndNotesIsAnUnknownSection) {
  write("s.json", R"({"description": "d", "assumptions": ["a"], "sources": {}, "published": {},
                      "model": "models/m.json", "compresion": {"window": 20}})");
  Scenario sc = Scenario::load(path("s.json"));
  EXPECT_NO_THROW(sc.reject_unknown_sections({"model", "compresion"}));
  edgc::test::expect_config_error(
      [&] {
        sc.reject_unknown_sections({"model", "compression"});
      },
      path("s.json"), "compresion", {"unknown section (this command reads model, compression; notes: "});
}

TEST_F(ModelConfigFile, AnIncludedFileMayIncludeAnotherRelativeToItself) {
  write("models/base.json", R"({"model": {"include": "m.json", "layers": 6}})");  // models/m.json, beside it
  write("c.json", R"({"model": {"include": "models/base.json", "global_batch_size": 32}})");
  Scenario c = Scenario::load(path("c.json"));
  c.splice_include("model");
  const ModelConfig mc = read_model_config(c, sim::GpuSpec{});
  EXPECT_EQ(mc.model.hidden, 64);             // from models/m.json
  EXPECT_EQ(mc.model.layers, 6);              // models/base.json over models/m.json
  EXPECT_EQ(mc.model.global_batch_size, 32);  // c.json over both
  EXPECT_FALSE(c.json()["model"].contains("include"));
}

TEST_F(ModelConfigFile, IncludeCyclesAndDirectoriesAreErrorsNamingTheChain) {
  write("models/x.json", R"({"model": "y.json"})");
  write("models/y.json", R"({"model": {"include": "x.json", "layers": 2}})");
  write("d.json", R"({"model": "models/x.json"})");
  Scenario d = Scenario::load(path("d.json"));
  edgc::test::expect_config_error([&] { d.splice_include("model"); }, std::nullopt, std::nullopt,
                                  {"cycle", "x.json -> ", "y.json -> "});
  fs::create_directories(dir_ / "models" / "dir.json");
  write("e.json", R"({"model": "models/dir.json"})");
  Scenario e = Scenario::load(path("e.json"));
  edgc::test::expect_config_error([&] { e.splice_include("model"); }, std::nullopt, std::nullopt, {"is a directory"});
  EXPECT_THROW((void)Scenario::load((dir_ / "models").string()), ConfigError);
}

// Fuzz finding: a scenario, an included file or a calibration file nested this deep parsed, then overflowed the
// stack in the first message that printed the value (nlohmann's dump() recurses once per level).
TEST_F(ModelConfigFile, NestingDeeperThanTheLimitIsAnErrorNamingTheFile) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto expect_deep = [&](const std::function<void()>& read, const std::string& where) {
    SCOPED_TRACE(where);
    edgc::test::expect_error<InputError>(read, where, std::nullopt,
                                         {"arrays and objects nested deeper than 64 levels"});
  };
  write("deep.json", R"({"cluster": )" + deep + "}");
  expect_deep([&] { (void)Scenario::load(path("deep.json")); }, path("deep.json"));
  write("includes-deep.json", R"({"cluster": "deep.json"})");
  expect_deep([&] { (void)load_scenario(path("includes-deep.json"), {}); }, path("deep.json"));
  write("calibration.json", R"({"schema": "edgc.calibration/1", "intra": {"points": )" + deep + "}}");
  expect_deep([&] { (void)load_calibration(path("calibration.json")); }, path("calibration.json"));
  Scenario s;
  expect_deep([&] { s.set("cluster.nodes=" + deep); }, "");
}

// Fuzz finding: an include whose file name is too long for the OS (ENAMETOOLONG) threw std::filesystem's
// filesystem_error from the cycle check instead of naming the file.
TEST_F(ModelConfigFile, AnIncludeNameTooLongForTheOsIsAConfigErrorNamingIt) {
  const std::string name = std::string(300, 'a') + ".json";
  write("long.json", R"({"cluster": ")" + name + R"("})");
  edgc::test::expect_config_error([&] { (void)load_scenario(path("long.json"), {}); }, path(name), std::nullopt,
                                  {"cannot open the scenario file"});
}

TEST_F(ModelConfigFile, ClusterFactsWithoutADefaultAreRequiredNamingTheKey) {
  const std::string full = std::string(EDGC_SOURCE_DIR) + "/scenarios/clusters/dgx-h100.json";
  for (const char* key : {"intra_node.latency_us", "inter_node.latency_us", "price_per_gpu_hour_usd"}) {
    Scenario sc = load_scenario(full, {});
    nlohmann::json doc = sc.json();
    nlohmann::json* node = &doc["cluster"];
    const std::string k = key;
    const auto dot = k.find('.');
    if (dot != std::string::npos) node = &(*node)[k.substr(0, dot)];
    node->erase(dot == std::string::npos ? k : k.substr(dot + 1));
    write("c.json", doc.dump());
    Scenario without = Scenario::load(path("c.json"));
    SCOPED_TRACE(std::string(key) + " missing");
    edgc::test::expect_config_error([&] { (void)read_cluster(without); }, std::nullopt, std::string("cluster.") + key,
                                    {"missing: "});
  }
  Scenario sc = load_scenario(full, {"cluster.price_per_gpu_hour_usd=0"});  // zero, when given, is a value
  EXPECT_EQ(read_cluster(sc).price_per_gpu_hour_usd, 0.0);
}

TEST_F(ModelConfigFile, GemmFiguresOfTheGpuComeAllOrNone) {
  const std::string full = std::string(EDGC_SOURCE_DIR) + "/scenarios/clusters/dgx-h100.json";
  Scenario sc = load_scenario(full, {});
  const sim::ClusterSpec c = read_cluster(sc);
  EXPECT_TRUE(c.gpu.has_kernel_model());
  EXPECT_EQ(c.gpu.sm_count, 132);
  EXPECT_DOUBLE_EQ(c.gpu.matmul_k, 13312);
  nlohmann::json doc = sc.json();
  doc["cluster"]["gpu"].erase("matmul_tflops");
  write("c.json", doc.dump());
  Scenario partial = Scenario::load(path("c.json"));
  edgc::test::expect_config_error([&] { (void)read_cluster(partial); }, std::nullopt, "cluster.gpu.matmul_tflops");
  for (const char* bad : {"cluster.gpu.matmul_tflops=2000", "cluster.gpu.sm_count=0", "cluster.gpu.matmul_k=-1"}) {
    Scenario wrong = load_scenario(full, {bad});
    EXPECT_THROW((void)read_cluster(wrong), ConfigError) << bad;
  }
}

TEST_F(ModelConfigFile, MegatronFeatureKeysAndTheirDefaults) {
  write("d.json", R"({"model": {"include": "models/m.json", "dtype": "bf16"}})");
  Scenario d = Scenario::load(path("d.json"));
  d.splice_include("model");
  const ModelConfig cd = read_model_config(d, sim::GpuSpec{});
  EXPECT_EQ(cd.model.recompute, sim::Recompute::kNone);
  EXPECT_FALSE(cd.parallel.sequence_parallel);
  EXPECT_FALSE(cd.parallel.distributed_optimizer);
  EXPECT_FALSE(cd.parallel.overlap_grad_reduce);
  EXPECT_TRUE(cd.parallel.embedding_allreduce);
  EXPECT_TRUE(cd.parallel.scatter_gather_p2p);
  EXPECT_TRUE(cd.parallel.grad_accumulation_fusion);
  EXPECT_TRUE(cd.parallel.async_tp_allreduce);
  EXPECT_FALSE(cd.parallel.fused_embedding_sync);
  EXPECT_EQ(cd.parallel.grad_reduce_bytes, 4);                       // Megatron-Core reduces bf16 gradients in fp32
  EXPECT_EQ(cd.cost.compute_model, sim::ComputeModel::kEfficiency);  // no GEMM figures for this GPU
  EXPECT_LT(cd.cost.optimizer_step_s, 0.0);                          // modelled

  write("e.json", R"({"model": {"include": "models/m.json", "recompute": "selective"},
                      "parallelism": {"sequence_parallel": true, "distributed_optimizer": true,
                                      "overlap_grad_reduce": true, "grad_bucket_params": 1000,
                                      "grad_reduce_dtype": "fp16", "embedding_allreduce": false,
                                      "scatter_gather_p2p": false, "fused_embedding_sync": true,
                                      "grad_accumulation_fusion": false, "async_tp_allreduce": false},
                      "compute": {"optimizer_step_ms": 2.5}})");
  Scenario e = Scenario::load(path("e.json"));
  e.splice_include("model");
  sim::GpuSpec measured;
  measured.sm_count = 108;
  measured.matmul_tflops = 271.2;
  const ModelConfig ce = read_model_config(e, measured);
  EXPECT_EQ(ce.model.recompute, sim::Recompute::kSelective);
  EXPECT_TRUE(ce.parallel.sequence_parallel);
  EXPECT_TRUE(ce.parallel.distributed_optimizer);
  EXPECT_TRUE(ce.parallel.overlap_grad_reduce);
  EXPECT_DOUBLE_EQ(ce.parallel.grad_bucket_params, 1000);
  EXPECT_EQ(ce.parallel.grad_reduce_bytes, 2);
  EXPECT_FALSE(ce.parallel.embedding_allreduce);
  EXPECT_FALSE(ce.parallel.scatter_gather_p2p);
  EXPECT_FALSE(ce.parallel.grad_accumulation_fusion);
  EXPECT_FALSE(ce.parallel.async_tp_allreduce);
  EXPECT_TRUE(ce.parallel.fused_embedding_sync);
  EXPECT_DOUBLE_EQ(ce.cost.optimizer_step_s, 2.5e-3);
  EXPECT_EQ(ce.cost.compute_model, sim::ComputeModel::kKernels);  // auto with measured GEMM figures
  e.set("compute.efficiency=0.5");                                // an explicit efficiency selects that model
  EXPECT_EQ(read_model_config(e, measured).cost.compute_model, sim::ComputeModel::kEfficiency);
}

TEST_F(ModelConfigFile, MegatronFeatureKeysRejectBadValuesNamingTheKey) {
  const auto with = [](const std::string& section) {
    return R"({"model": {"include": "models/m.json"}, )" + section + "}";
  };
  EXPECT_EQ(failing_field(R"({"model": {"include": "models/m.json", "recompute": "some"}})"), "model.recompute");
  EXPECT_EQ(failing_field(R"({"model": {"include": "models/m.json", "recompute": "selective",
                                        "activation_recompute": true}})"),
            "model.activation_recompute");
  EXPECT_EQ(failing_field(with(R"("parallelism": {"grad_reduce_dtype": "int8"})")), "parallelism.grad_reduce_dtype");
  EXPECT_EQ(failing_field(with(R"("parallelism": {"grad_bucket_params": -1})")), "parallelism.grad_bucket_params");
  EXPECT_EQ(failing_field(with(R"("parallelism": {"sequence_parallel": "yes"})")), "parallelism.sequence_parallel");
  EXPECT_EQ(failing_field(with(R"("parallelism": {"grad_accumulation_fusion": 0})")),
            "parallelism.grad_accumulation_fusion");
  EXPECT_EQ(failing_field(with(R"("parallelism": {"async_tp_allreduce": "on"})")), "parallelism.async_tp_allreduce");
  EXPECT_EQ(failing_field(with(R"("compute": {"optimizer_step_ms": -1})")), "compute.optimizer_step_ms");
  EXPECT_EQ(failing_field(with(R"("compute": {"model": "fast"})")), "compute.model");
  EXPECT_EQ(failing_field(with(R"("compute": {"model": "kernels"})")), "compute.model");  // no GEMM figures
}

// `framework` sets the defaults of the stack's keys; a key the scenario gives still wins.
TEST_F(ModelConfigFile, FrameworkSetsTheStacksDefaultsAndGivenKeysWin) {
  write("f.json", R"({"framework": "megatron-core-2024", "model": {"include": "models/m.json", "dtype": "bf16"},
                      "parallelism": {"tp": 2}})");
  Scenario f = Scenario::load(path("f.json"));
  f.splice_include("model");
  const ModelConfig cf = read_model_config(f, sim::GpuSpec{});
  EXPECT_EQ(cf.framework.name, "megatron-core-2024");
  EXPECT_EQ(cf.model.attention, sim::Attention::kFlash);
  EXPECT_TRUE(cf.parallel.sequence_parallel);
  EXPECT_TRUE(cf.parallel.distributed_optimizer);
  EXPECT_TRUE(cf.parallel.overlap_grad_reduce);
  EXPECT_TRUE(cf.parallel.overlap_param_gather);
  EXPECT_TRUE(cf.parallel.tp_comm_overlap);
  EXPECT_TRUE(cf.parallel.grad_accumulation_fusion);
  f.set("parallelism.tp=1");  // no sequence parallelism without TP, and so no TP-communication overlap
  const ModelConfig single = read_model_config(f, sim::GpuSpec{});
  EXPECT_FALSE(single.parallel.sequence_parallel);
  EXPECT_FALSE(single.parallel.tp_comm_overlap);
  f.set("model.attention=materialised");
  f.set("parallelism.overlap_param_gather=false");
  const ModelConfig own = read_model_config(f, sim::GpuSpec{});
  EXPECT_EQ(own.model.attention, sim::Attention::kMaterialised);
  EXPECT_FALSE(own.parallel.overlap_param_gather);
  EXPECT_TRUE(own.parallel.overlap_grad_reduce);

  write("o.json", R"({"framework": "megatron-lm-2021", "model": {"include": "models/m.json"}})");
  Scenario o = Scenario::load(path("o.json"));
  o.splice_include("model");
  const ModelConfig co = read_model_config(o, sim::GpuSpec{});
  EXPECT_FALSE(co.parallel.grad_accumulation_fusion);
  EXPECT_FALSE(co.parallel.async_tp_allreduce);
  EXPECT_FALSE(co.parallel.distributed_optimizer);
  EXPECT_EQ(co.model.attention, sim::Attention::kMaterialised);
  o.set("framework=megatron-lm-2022");  // the keys' own defaults
  EXPECT_TRUE(read_model_config(o, sim::GpuSpec{}).parallel.async_tp_allreduce);
  EXPECT_TRUE(read_model_config(o, sim::GpuSpec{}).parallel.grad_accumulation_fusion);
}

TEST_F(ModelConfigFile, StackKeysRefuseWhatMegatronRefusesNamingTheKey) {
  const auto with = [](const std::string& rest) {
    return R"({"model": {"include": "models/m.json", "dtype": "bf16"}, )" + rest + "}";
  };
  EXPECT_EQ(failing_field(with(R"("framework": "megatron-2019")")), "framework");
  EXPECT_EQ(failing_field(with(R"("framework": 2024)")), "framework");
  EXPECT_EQ(failing_field(R"({"model": {"include": "models/m.json", "attention": "sparse"}})"), "model.attention");
  EXPECT_EQ(failing_field(R"({"model": {"include": "models/m.json", "precision": "fp4"}})"), "model.precision");
  // FP8 training keeps bf16 weights and activations: not with fp16 (the default dtype here).
  EXPECT_EQ(failing_field(R"({"model": {"include": "models/m.json", "precision": "fp8"}})"), "model.precision");
  EXPECT_EQ(failing_field(with(R"("parallelism": {"overlap_param_gather": true})")),
            "parallelism.overlap_param_gather");
  EXPECT_EQ(failing_field(with(R"("parallelism": {"tp": 2, "tp_comm_overlap": true})")), "parallelism.tp_comm_overlap");
  EXPECT_EQ(failing_field(with(R"("parallelism": {"overlap_param_gather": true, "distributed_optimizer": true})")), "");
}

// Flash attention and FP8 under the kernel-level model need the GPU's measured rates: refused on a GPU without
// them, with the key named; the bundled H100 has both.
TEST_F(ModelConfigFile, FlashAndFp8NeedTheGpusMeasuredRates) {
  write("k.json", R"({"model": {"include": "models/m.json", "dtype": "bf16", "attention": "flash",
                                 "precision": "fp8"}})");
  Scenario k = Scenario::load(path("k.json"));
  k.splice_include("model");
  sim::GpuSpec bare;
  bare.name = "A100";
  bare.sm_count = 108;
  bare.matmul_tflops = 271.2;
  edgc::test::expect_config_error([&] { (void)read_model_config(k, bare); }, std::nullopt, "model.attention",
                                  {"measured attention rates", "A100"});
  const std::string h100 = std::string(EDGC_SOURCE_DIR) + "/scenarios/clusters/dgx-h100.json";
  Scenario hs = load_scenario(h100, {});
  const sim::GpuSpec gpu = read_cluster(hs).gpu;
  ASSERT_FALSE(gpu.attention_rates.empty());
  EXPECT_GT(gpu.fp8_matmul_tflops, gpu.matmul_tflops);
  sim::GpuSpec no_fp8 = gpu;
  no_fp8.fp8_matmul_tflops = 0.0;
  edgc::test::expect_config_error([&] { (void)read_model_config(k, no_fp8); }, std::nullopt, "model.precision",
                                  {"FP8 GEMM rate"});
  const ModelConfig ok = read_model_config(k, gpu);
  EXPECT_TRUE(ok.model.fp8);
  EXPECT_EQ(ok.cost.compute_model, sim::ComputeModel::kKernels);
  k.set("compute.efficiency=0.4");  // the efficiency model needs neither
  EXPECT_NO_THROW((void)read_model_config(k, bare));
}

// cluster.gpu.attention and the FP8 figure: read from the bundled H100, refused by field when malformed.
TEST_F(ModelConfigFile, MeasuredAttentionAndFp8FiguresAreCheckedByField) {
  const std::string full = std::string(EDGC_SOURCE_DIR) + "/scenarios/clusters/dgx-h100.json";
  Scenario sc = load_scenario(full, {});
  const sim::GpuSpec gpu = read_cluster(sc).gpu;
  EXPECT_EQ(gpu.attention_rates.size(), 24u);  // head_dim 64, 128 x seq 2k, 4k, 8k x 8, 32 heads x group 1, 4
  EXPECT_DOUBLE_EQ(gpu.fp8_matmul_m, 16384);
  for (const auto& [bad, field] :
       {std::pair{std::string("cluster.gpu.attention.rows=[[64, 2048, 8, 1, 39.1]]"), "cluster.gpu.attention.rows[0]"},
        std::pair{std::string("cluster.gpu.attention.rows=[[64, 2048, 8, 1, 39.1, -1]]"),
                  "cluster.gpu.attention.rows[0]"},
        std::pair{std::string("cluster.gpu.attention.rows=[[64, 2048, 8, 1, 39, 45], [64, 4096, 32, 1, 39, 45]]"),
                  "cluster.gpu.attention.rows"},
        std::pair{std::string("cluster.gpu.attention.rows=[]"), "cluster.gpu.attention.rows"},
        std::pair{std::string("cluster.gpu.fp8_matmul_tflops=-3"), "cluster.gpu.fp8_matmul_tflops"}}) {
    Scenario wrong = load_scenario(full, {bad});
    edgc::test::expect_config_error([&] { (void)read_cluster(wrong); }, std::nullopt, field);
  }
  nlohmann::json doc = sc.json();
  doc["cluster"]["gpu"].erase("fp8_matmul_k");
  write("c.json", doc.dump());
  Scenario partial = Scenario::load(path("c.json"));
  edgc::test::expect_config_error([&] { (void)read_cluster(partial); }, std::nullopt, "cluster.gpu.fp8_matmul_k");
}

TEST_F(ModelConfigFile, ErrorsNameTheKey) {
  EXPECT_EQ(failing_field(R"({"model": "models/m.json"})"), "");
  EXPECT_EQ(failing_field(R"({"model": 3})"), "model");
  EXPECT_EQ(failing_field(R"({"model": {"include": 3}})"), "model.include");
  EXPECT_EQ(failing_field(R"({"model": {"layers": 2.5}})"), "model.layers");
  EXPECT_EQ(failing_field(R"({"model": {"layer": 2}})"), "model.layer");
  EXPECT_EQ(failing_field(R"({"model": {"dtype": "fp8"}})"), "model.dtype");
  EXPECT_EQ(failing_field(R"({"parallelism": {"schedule": "zb"}})"), "parallelism.schedule");
  EXPECT_EQ(failing_field(R"({"parallelism": {"tp": 4294967296}})"), "parallelism.tp");
  EXPECT_EQ(failing_field(R"({"parallelism": {"tpp": 2}})"), "parallelism.tpp");
  EXPECT_EQ(failing_field(R"({"compute": {"efficiency": 0}})"), "compute.efficiency");
  EXPECT_EQ(failing_field(R"({"compute": {"hbm_efficiency": 1.5}})"), "compute.hbm_efficiency");
  EXPECT_EQ(failing_field(R"({"compute": {"orth_column_latency_us": -1}})"), "compute.orth_column_latency_us");
  write("models/flat.json", R"({"layers": 4})");  // a model file must hold a "model" section
  EXPECT_EQ(failing_field(R"({"model": "models/flat.json"})"), "model");
  // A missing include names the included file.
  write("s.json", R"({"model": "models/missing.json"})");
  Scenario sc = Scenario::load(path("s.json"));
  if (const auto e = edgc::test::expect_config_error([&] { sc.splice_include("model"); }, std::nullopt, std::nullopt)) {
    EXPECT_NE(e->where().find("missing.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace edgc::scenario

namespace edgc::scenario {
namespace {

TEST(KernelProfileFile, ReadsEntriesSkipsFailedOnesAndRejectsBadFilesNamingTheField) {
  const fs::path dir = fs::temp_directory_path() / ("edgc-profile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& body) {
    std::ofstream(dir / name) << body;
    return (dir / name).string();
  };
  const auto good = write("good.json", R"({"schema": "edgc.kernel_profile/1", "device": "x", "entries": [
      {"m": 1920, "n": 5760, "r": 4, "step_s": 0.001, "ok": true},
      {"m": 1920, "n": 5760, "r": 64, "step_s": 0.004, "count": 3},
      {"m": 7, "n": 7, "r": 1, "step_s": 1.0, "ok": false}],
      "copies": [{"bytes": 1024, "step_s": 1e-6}, {"bytes": 4096, "step_s": 3e-6}]})");
  const auto read = read_kernel_profile(good);
  const auto& profile = read.entries;
  ASSERT_EQ(profile.size(), 2U);
  EXPECT_EQ(profile[0].count, 1);
  EXPECT_EQ(profile[1].rows, 1920);
  EXPECT_EQ(profile[1].cols, 5760);
  EXPECT_EQ(profile[1].rank, 64);
  EXPECT_EQ(profile[1].count, 3);
  EXPECT_DOUBLE_EQ(profile[1].step_s, 0.004);
  ASSERT_EQ(read.copies.size(), 2U);
  EXPECT_EQ(read.copies[1].bytes, 4096);
  EXPECT_DOUBLE_EQ(read.copies[1].seconds, 3e-6);
  const std::pair<std::string, std::string> bad[] = {
      {R"({"schema": "other", "entries": []})", "schema"},
      {R"({"schema": "edgc.kernel_profile/1"})", "entries"},
      {R"({"schema": "edgc.kernel_profile/1", "entries": [{"n": 2, "r": 1, "step_s": 1}]})", "entries[0].m"},
      {R"({"schema": "edgc.kernel_profile/1", "entries": [{"m": 2, "n": 2, "r": 0, "step_s": 1}]})", "entries[0].r"},
      {R"({"schema": "edgc.kernel_profile/1", "entries": [{"m": 2, "n": 2, "r": 1, "step_s": -1}]})",
       "entries[0].step_s"},
      {R"({"schema": "edgc.kernel_profile/1", "entries": [{"m": 2, "n": 2, "r": 1, "step_s": 1, "ok": false}]})",
       "entries"},
      {R"({"schema": "edgc.kernel_profile/1", "entries": [{"m": 2, "n": 2, "r": 1, "step_s": 1, "count": 0}]})",
       "entries[0].count"},
      {R"({"schema": "edgc.kernel_profile/1", "entries": [{"m": 2, "n": 2, "r": 1, "step_s": 1}], "copies": {}})",
       "copies"},
      {R"({"schema": "edgc.kernel_profile/1", "entries": [{"m": 2, "n": 2, "r": 1, "step_s": 1}],
          "copies": [{"bytes": 8, "step_s": 1}, {"bytes": 8, "step_s": 2}]})",
       "copies[1].bytes"},
      {R"({"schema": "edgc.kernel_profile/1", "entries": [{"m": 2, "n": 2, "r": 1, "step_s": 1}],
          "copies": [{"bytes": 8, "step_s": 0}]})",
       "copies[0].step_s"},
      {R"(not json)", ""},
      {R"({"schema": 1, "entries": []})", "schema"},  // fuzz finding: was nlohmann's type_error, uncaught
  };
  int n = 0;
  for (const auto& [body, field] : bad) {
    const auto path = write("bad" + std::to_string(n++) + ".json", body);
    SCOPED_TRACE(body);
    edgc::test::expect_config_error([&] { read_kernel_profile(path); }, path, field);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace edgc::scenario

namespace edgc::scenario {
namespace {

// The architecture keys: their defaults are the GPT, each value is read, and each bad value is refused by its key.
TEST_F(ModelConfigFile, ArchitectureKeysReadAndBadValuesAreRefusedByKey) {
  write("a.json", R"({"model": {"include": "models/m.json", "kv_heads": 2, "head_dim": 32, "ffn_hidden": 96,
                      "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "bias": "qkv",
                      "tie_embeddings": false, "dropout": false, "qk_norm": true, "vocab_divisor": 64}})");
  Scenario a = Scenario::load(path("a.json"));
  a.splice_include("model");
  const sim::ModelSpec m = read_model_config(a, sim::GpuSpec{}).model;
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.head_dim, 32);
  EXPECT_EQ(m.ffn_hidden, 96);
  EXPECT_EQ(m.mlp, sim::Mlp::kSwiglu);
  EXPECT_EQ(m.norm, sim::Norm::kRmsNorm);
  EXPECT_EQ(m.position, sim::Position::kRope);
  EXPECT_EQ(m.bias, sim::LinearBias::kQkv);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_FALSE(m.dropout);
  EXPECT_TRUE(m.qk_norm);
  EXPECT_EQ(m.vocab_divisor, 64);
  const sim::ModelSpec gpt = load("paper/gpt2-2.5b-32xv100.json").config.model;
  EXPECT_EQ(gpt.kv_heads, 0);
  EXPECT_EQ(gpt.mlp, sim::Mlp::kGelu);
  EXPECT_TRUE(gpt.tie_embeddings && gpt.dropout && !gpt.qk_norm);

  const std::string base = R"({"model": {"include": "models/m.json", )";
  EXPECT_EQ(failing_field(base + R"("mlp": "relu"}})"), "model.mlp");
  EXPECT_EQ(failing_field(base + R"("layers": 4, "layers": 8}})"), "model.layers");  // given twice
  EXPECT_EQ(failing_field(base + R"("norm": "batchnorm"}})"), "model.norm");
  EXPECT_EQ(failing_field(base + R"("position": "alibi"}})"), "model.position");
  EXPECT_EQ(failing_field(base + R"("bias": "some"}})"), "model.bias");
  EXPECT_EQ(failing_field(base + R"("kv_heads": -1}})"), "model.kv_heads");
  EXPECT_EQ(failing_field(base + R"("ffn_hidden": 9000000}})"), "model.ffn_hidden");
  EXPECT_EQ(failing_field(base + R"("head_dim": "64"}})"), "model.head_dim");
  EXPECT_EQ(failing_field(base + R"("vocab_divisor": 0}})"), "model.vocab_divisor");
  EXPECT_EQ(failing_field(base + R"("tie_embeddings": "no"}})"), "model.tie_embeddings");
  EXPECT_EQ(failing_field(base + R"("dropout": 0}})"), "model.dropout");
  // Untied embeddings leave nothing for the embedding all-reduce or the fused embedding sync to carry.
  EXPECT_EQ(failing_field(base + R"("tie_embeddings": false}, "parallelism": {"embedding_allreduce": true}})"),
            "parallelism.embedding_allreduce");
  EXPECT_EQ(failing_field(base + R"("tie_embeddings": false}, "parallelism": {"fused_embedding_sync": true}})"),
            "parallelism.fused_embedding_sync");
}

// model.from_hf: the bundled Llama-3 8B and Qwen3-8B config.json files become their published shapes; a key the
// scenario gives wins over the config's.
TEST_F(ModelConfigFile, FromHfReadsPublishedConfigsAndScenarioKeysWin) {
  const std::string hf = kScenarios + "/models/hf/";
  write("l.json", R"({"model": {"from_hf": ")" + hf +
                      R"(llama3-8b-config.json", "seq_len": 8192, "micro_batch_size": 1, "global_batch_size": 64}})");
  Scenario l = Scenario::load(path("l.json"));
  const sim::ModelSpec m = read_model_config(l, sim::GpuSpec{}).model;
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.ffn_hidden, 14336);
  EXPECT_EQ(m.mlp, sim::Mlp::kSwiglu);
  EXPECT_EQ(m.bias, sim::LinearBias::kNone);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_FALSE(m.dropout);
  EXPECT_EQ(sim::parameter_count(m), 8030261248);                                        // the model card's 8.03B
  for (const auto& [file, total] : {std::pair{"llama3-70b-config.json", 70553706496LL},  // 70.6B
                                    std::pair{"llama3.1-405b-config.json", 405853388800LL}}) {  // 405B
    write("big.json", R"({"model": {"from_hf": ")" + hf + file +
                          R"(", "seq_len": 8192, "micro_batch_size": 1, "global_batch_size": 64}})");
    Scenario big = Scenario::load(path("big.json"));
    EXPECT_EQ(sim::parameter_count(read_model_config(big, sim::GpuSpec{}).model), total) << file;
  }
  write("q.json", R"({"model": {"from_hf": ")" + hf +
                      R"(qwen3-8b-config.json", "layers": 4, "seq_len": 4096, "micro_batch_size": 1,
                      "global_batch_size": 8}})");
  Scenario q = Scenario::load(path("q.json"));
  const sim::ModelSpec qm = read_model_config(q, sim::GpuSpec{}).model;
  EXPECT_EQ(qm.layers, 4);  // the scenario's, not the config's 36
  EXPECT_EQ(qm.head_dim, 128);
  EXPECT_TRUE(qm.qk_norm);
  sim::ModelSpec full = qm;
  full.layers = 36;
  EXPECT_EQ(sim::parameter_count(full), 8190735360);  // Qwen3-8B's model card: 8.2B
}

// model.from_hf with a mixture of experts: Mixtral-8x7B and Qwen3-30B-A3B become their published shapes and counts
// (46.7 B / 12.9 B; 30.5 B / 3.3 B, the figures tests/sim/moe_test.cpp checks by hand); Qwen2-MoE's shared expert
// becomes whole experts.
TEST_F(ModelConfigFile, FromHfReadsMixturesOfExperts) {
  const std::string hf = kScenarios + "/models/hf/";
  write("m.json",
        R"({"model": {"from_hf": ")" + hf +
            R"(mixtral-8x7b-config.json", "seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64}})");
  Scenario ms = Scenario::load(path("m.json"));
  const sim::ModelSpec m = read_model_config(ms, sim::GpuSpec{}).model;
  EXPECT_EQ(m.experts, 8);
  EXPECT_EQ(m.top_k, 2);
  EXPECT_EQ(m.moe_ffn_hidden, 14336);
  EXPECT_EQ(m.shared_experts, 0);
  EXPECT_EQ(sim::parameter_count(m), 46702792704);
  EXPECT_EQ(sim::active_parameter_count(m), 12879925248);
  write("q.json",
        R"({"model": {"from_hf": ")" + hf +
            R"(qwen3-30b-a3b-config.json", "seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64}})");
  Scenario qs = Scenario::load(path("q.json"));
  const sim::ModelSpec q = read_model_config(qs, sim::GpuSpec{}).model;
  EXPECT_EQ(q.experts, 128);
  EXPECT_EQ(q.top_k, 8);
  EXPECT_EQ(q.moe_ffn_hidden, 768);
  EXPECT_TRUE(q.qk_norm);
  EXPECT_NEAR(static_cast<double>(sim::parameter_count(q)) / 30.5e9, 1.0, 0.005);
  write("config.json", R"({"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 2,
                          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 512, "num_experts": 8,
                          "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64})");
  write("s.json", R"({"model": {"from_hf": "config.json", "seq_len": 64}})");
  Scenario ss = Scenario::load(path("s.json"));
  const sim::ModelSpec s2 = read_model_config(ss, sim::GpuSpec{}).model;
  EXPECT_EQ(s2.shared_experts, 2);
  EXPECT_EQ(s2.bias, sim::LinearBias::kQkv);
}

// Qwen-MoE's dense layers among its MoE layers: layer i is an MoE layer when (i + 1) % decoder_sparse_step == 0 and
// mlp_only_layers does not list it (transformers' Qwen2MoeDecoderLayer); the dense ones have intermediate_size.
TEST_F(ModelConfigFile, FromHfQwenMoeDenseLayersBecomeThePattern) {
  write("config.json", R"({"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 6,
                          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 512, "num_experts": 8,
                          "num_experts_per_tok": 2, "moe_intermediate_size": 32, "decoder_sparse_step": 2,
                          "mlp_only_layers": [3]})");
  write("s.json", R"({"model": {"from_hf": "config.json", "seq_len": 64}})");
  Scenario sc = Scenario::load(path("s.json"));
  const sim::ModelSpec m = read_model_config(sc, sim::GpuSpec{}).model;
  EXPECT_EQ(m.moe_layer_pattern, (std::vector<std::uint8_t>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(m.ffn_hidden, 128);
  EXPECT_EQ(m.moe_ffn_hidden, 32);
  // Megatron-Core's integer form: layer i is an MoE layer when i % N == 0.
  write("n.json", R"({"model": {"name": "m", "layers": 5, "hidden": 64, "heads": 4, "seq_len": 32, "vocab": 512,
                                "micro_batch_size": 1, "global_batch_size": 8, "experts": 8, "top_k": 2,
                                "moe_layer_freq": 2}})");
  Scenario n = Scenario::load(path("n.json"));
  EXPECT_EQ(read_model_config(n, sim::GpuSpec{}).model.moe_layer_pattern, (std::vector<std::uint8_t>{1, 0, 1, 0, 1}));
}

// The mixture-of-experts keys' refusals name the key (the layouts' refusals: tests/sim/moe_test.cpp).
TEST_F(ModelConfigFile, MixtureOfExpertsKeysAreRefusedByName) {
  const std::string base = R"({"model": {"name": "m", "layers": 4, "hidden": 64, "heads": 4, "seq_len": 32,
                                          "vocab": 512, "micro_batch_size": 1, "global_batch_size": 8, )";
  EXPECT_EQ(failing_field(base + R"("experts": 8, "top_k": 2}})"), "");
  EXPECT_EQ(failing_field(base + R"("experts": 8, "top_k": 2, "moe_layer_freq": 2}})"), "");
  EXPECT_EQ(failing_field(base + R"("experts": 8, "top_k": 2, "moe_layer_freq": [0, 1, 1, 1]}})"), "");
  for (const char* freq : {"0", "-1", "1.5", "\"2\"", "[]", "[1, 0, 2, 1]", "[1, 0.5, 1, 1]"})
    EXPECT_EQ(failing_field(base + R"("experts": 8, "top_k": 2, "moe_layer_freq": )" + freq + "}}"),
              "model.moe_layer_freq")
        << freq;
  EXPECT_EQ(failing_field(base + R"("moe_layer_freq": 2}})"), "model.moe_layer_freq");  // a dense model
  EXPECT_EQ(failing_field(base + R"("experts": 8, "top_k": 2, "moe_capacity_factor": 0.5}})"),
            "model.moe_capacity_factor");
  EXPECT_EQ(failing_field(base + R"("moe_load_factor": 1.5}})"), "model.moe_load_factor");
  EXPECT_EQ(failing_field(base + R"("experts": -1}})"), "model.experts");
}

// A config.json that edgc cannot model faithfully is refused naming the file and the field.
TEST_F(ModelConfigFile, FromHfRefusesWhatItDoesNotModelByField) {
  const auto refused = [&](const std::string& config) -> std::pair<std::string, std::string> {
    write("config.json", config);
    write("s.json", R"({"model": {"from_hf": "config.json", "seq_len": 64}})");
    try {
      Scenario sc = Scenario::load(path("s.json"));
      (void)read_model_config(sc, sim::GpuSpec{});
    } catch (const ConfigError& e) {
      return {e.where(), e.field()};
    }
    return {"", ""};
  };
  const std::string llama = R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                               "intermediate_size": 128, "vocab_size": 512)";
  EXPECT_EQ(refused(R"({"model_type": "llama", )" + llama + "}").second, "");
  EXPECT_EQ(refused(R"({"model_type": "mixtral", )" + llama + "}"),
            std::make_pair(path("config.json"), std::string("num_local_experts")));
  EXPECT_EQ(refused(R"({"model_type": "deepseek_v3", )" + llama + "}"),
            std::make_pair(path("config.json"), std::string("model_type")));
  const std::string moe = R"("num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, )";
  EXPECT_EQ(refused(R"({"model_type": "qwen3_moe", )" + moe + llama + "}").second, "");
  EXPECT_EQ(refused(R"({"model_type": "qwen3_moe", "decoder_sparse_step": 2, )" + moe + llama + "}").second, "");
  EXPECT_EQ(refused(R"({"model_type": "qwen3_moe", "decoder_sparse_step": 0, )" + moe + llama + "}").second,
            "decoder_sparse_step");
  EXPECT_EQ(refused(R"({"model_type": "mixtral", "decoder_sparse_step": 2, "num_local_experts": 8,
                        "num_experts_per_tok": 2, )" +
                    llama + "}")
                .second,
            "decoder_sparse_step");
  EXPECT_EQ(refused(R"({"model_type": "qwen3_moe", "mlp_only_layers": [0], )" + moe + llama + "}").second, "");
  for (const char* dense : {"[2]", "[-1]", "[0.5]", "0", "[0, 1]"})
    EXPECT_EQ(
        refused(R"({"model_type": "qwen3_moe", "mlp_only_layers": )" + std::string(dense) + ", " + moe + llama + "}")
            .second,
        "mlp_only_layers")
        << dense;
  EXPECT_EQ(
      refused(R"({"model_type": "qwen2_moe", "shared_expert_intermediate_size": 48, )" + moe + llama + "}").second,
      "shared_expert_intermediate_size");
  EXPECT_EQ(refused(R"({"model_type": "llama", "num_local_experts": 8, )" + llama + "}").second, "num_local_experts");
  EXPECT_EQ(refused(R"({"model_type": "mistral", "sliding_window": 4096, )" + llama + "}").second, "sliding_window");
  EXPECT_EQ(
      refused(R"({"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": false, )" + llama + "}").second,
      "");
  EXPECT_EQ(refused(R"({"model_type": "llama", "hidden_act": "gelu", )" + llama + "}").second, "hidden_act");
  EXPECT_EQ(refused(R"({"model_type": "llama", "attention_bias": true, )" + llama + "}").second, "attention_bias");
  EXPECT_EQ(refused(R"({"model_type": "llama", "hidden_size": 64})").second, "num_attention_heads");
  EXPECT_EQ(refused(R"({"model_type": "llama", "num_key_value_heads": 0, )" + llama + "}").second,
            "num_key_value_heads");
  EXPECT_EQ(refused(R"({"model_type": "gpt_neox", )" + llama + "}").second, "use_parallel_residual");
  EXPECT_EQ(refused("[1, 2]").first, path("config.json"));
  write("s2.json", R"({"model": {"from_hf": "missing.json"}})");
  EXPECT_THROW(
      {
        Scenario sc = Scenario::load(path("s2.json"));
        (void)read_model_config(sc, sim::GpuSpec{});
      },
      ConfigError);
}

}  // namespace
}  // namespace edgc::scenario
