// Benchmark: wall time of ONE simulated 3D-parallel training iteration (sim::simulate_iteration, contention on)
// against the design targets (design doc §8, one CPU core): <= 0.1 s at 64 GPUs, <= 1 s at 512, <= 5 s at 4096.
//
//   edgc_bench_iteration [--scenario FILE] [--gpus 64,512,4096] [--repeats 3] [--rank 64] [--json FILE]
//                        [--tp-ring] [--dp-ring] [--all-replicas] [--check] [--cfg KEY:VALUE]...
//
// Scaling (the choices, also printed with the table): the base scenario (default scenarios/paper/
// gpt2-12.1b-64xh100.json: GPT2-12.1B, 60 layers, on DGX H100 nodes, tp 8 × pp 4 × dp 2, micro-batch 4,
// 64 micro-batches, 1F1B) is scaled to N GPUs by
//   * cluster.nodes = N / gpus_per_node;
//   * tp and pp kept (tp 8 = one NVSwitch node; pp 4, since 60 layers are not divisible by 8), dp = N / (tp·pp);
//   * micro-batches per pipeline kept (64 in the paper scenario), so model.global_batch_size =
//     microbatches · micro_batch_size · dp (512 at 64 GPUs, 4096 at 512, 32768 at 4096): every GPU runs the
//     same schedule at every scale and only the DP dimension grows.
// Two plans per scale: every stage uncompressed, and every stage PowerSGD at rank --rank (default 64).
//
// The TP all-reduces run as their closed form where sim::tp_closed_form_applies() (the default layouts: tp 8 fills
// an NVSwitch node), the DP all-reduces where sim::dp_closed_form_applies() (one NIC per GPU on a star fabric);
// --tp-ring and --dp-ring force the ring messages (IterationOptions::force_tp_ring, force_dp_ring), the way the
// simulator worked before each closed form, so that one binary measures before and after; --all-replicas simulates
// every DP replica (IterationOptions::all_replicas: no folding, by symmetry or otherwise, no mirrors). --check runs
// every case once more with both rings forced and every replica simulated, and fails (exit 1) unless the simulated
// iteration times agree within 1e-9 relative: the benchmark checks its own result.
//
// SimGrid cannot reset its engine, so every measurement runs in a forked child (edgc::bench::run_in_child): it builds
// the sg4::Engine, the Platform and runs simulate_iteration, then sends back the wall seconds (platform build and
// simulation apart), its CPU seconds, the simulated iteration seconds, activity counts and its peak RSS
// (getrusage RUSAGE_SELF ru_maxrss). SimGrid 3.32 exposes no count of its internal events, so "activities" is
// counted through the public S4U signals: communications posted (Comm::on_send) + executions started + actor
// sleeps (a pass's compute is a sleep, and the TP closed form one sleep per group and pass); the number of distinct
// simulated timestamps (Engine::on_time_advance) is reported beside it. Each case is repeated --repeats times; the
// table shows the medians (edgc::core::median: with an even --repeats the mean of the two middle values). Pass/miss
// compares the median of build + simulate wall time with the target.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "edgc/core/median.hpp"
#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/layout.hpp"
#include "edgc/sim/platform.hpp"
#include "harness.hpp"

namespace sg4 = simgrid::s4u;
using edgc::bench::Clock;
using edgc::bench::seconds_since;
using edgc::core::median;

namespace {

struct Options {
  std::string scenario_path = "scenarios/paper/gpt2-12.1b-64xh100.json";
  std::string gpus_text = "64,512,4096";
  std::string json_out = "edgc_bench_iteration.json";
  int repeats = 3;
  int rank = 64;
  bool tp_ring = false;
  bool dp_ring = false;
  bool all_replicas = false;
  bool check = false;
  std::vector<std::string> cfgs;  // passed to SimGrid as --cfg=KEY:VALUE, for experiments
};

// The base layout, read once in the parent.
struct Base {
  int gpus_per_node = 0;
  int tp = 0;
  int pp = 0;
  int micro_batch = 0;
  int microbatches = 0;
  std::string model_name;
  std::string cluster_name;
};

// What a child reports. Plain data: carried back byte for byte (a failure comes back as an exception instead).
struct Sample {
  double build_wall_s = 0.0;     // sg4::Engine + Platform::build
  double simulate_wall_s = 0.0;  // simulate_iteration (actor creation + engine.run + reduction)
  double cpu_s = 0.0;            // user + system CPU of the child, whole
  double iteration_s = 0.0;      // simulated
  double peak_rss_mib = 0.0;
  std::uint64_t actors = 0;
  std::uint64_t comms = 0;
  std::uint64_t execs = 0;
  std::uint64_t sleeps = 0;
  std::uint64_t time_advances = 0;
  std::uint64_t completions = 0;  // Activity::on_completion
  int tp_closed_form = 0;         // 1 when the TP all-reduces ran as their closed form
  int dp_closed_form = 0;         // 1 when the DP all-reduces ran as their closed form
  int guard_pages = 1;            // 0 when actor stacks ran without guard pages (sim::ActorStacks)
};

struct Case {
  int gpus = 0;
  int dp = 0;
  int nodes = 0;
  int global_batch = 0;
  int microbatches = 0;
  int powersgd_rank = 0;  // 0 = uncompressed
};

// The repeats of one case, one vector per measured quantity.
struct Series {
  std::vector<double> build, sim, wall, cpu, rss;
};

double target_s(int gpus) {
  if (gpus == 64) return 0.1;
  if (gpus == 512) return 1.0;
  if (gpus == 4096) return 5.0;
  return 0.0;  // none
}

std::string plan_name(const Case& c) {
  return c.powersgd_rank == 0 ? "uncompressed" : "powersgd-r" + std::to_string(c.powersgd_rank);
}

std::vector<std::string> overrides_for(const Case& c) {
  return {"cluster.nodes=" + std::to_string(c.nodes), "parallelism.dp=" + std::to_string(c.dp),
          "model.global_batch_size=" + std::to_string(c.global_batch),
          "parallelism.microbatches=" + std::to_string(c.microbatches)};
}

// Runs in the child: one simulation.
Sample measure(const std::string& scenario_path, const Case& c, const std::vector<std::string>& cfgs, bool tp_ring,
               bool dp_ring, bool all_replicas) {
  Sample s;
  edgc::scenario::Scenario sc = edgc::scenario::load_scenario(scenario_path, overrides_for(c));
  const edgc::sim::ClusterSpec cluster = edgc::scenario::read_cluster(sc);
  const edgc::sim::NetworkProfile profile = edgc::scenario::read_network(sc);
  const edgc::scenario::ModelConfig mc = edgc::scenario::read_model_config(sc, cluster.gpu);
  const edgc::sim::DpSyncPlan plan = c.powersgd_rank == 0 ? edgc::sim::uncompressed_plan(mc.parallel.pp)
                                                          : edgc::sim::powersgd_plan(mc.parallel.pp, c.powersgd_rank);

  std::vector<std::string> args = {"edgc_bench_iteration"};
  // As edgc simulate does (sim::ActorStacks): actor stacks lose their guard pages where only that fits
  // vm.max_map_count, and a case that does not fit even so is refused before SimGrid fails on it.
  const edgc::sim::ParallelSpec checked = edgc::sim::validate(mc.model, mc.parallel, cluster, "edgc_bench_iteration");
  edgc::sim::IterationOptions options;
  options.force_tp_ring = tp_ring;
  options.force_dp_ring = dp_ring;
  options.all_replicas = all_replicas;
  const edgc::sim::ActorStacks stacks = edgc::sim::plan_actor_stacks(
      edgc::sim::planned_actors(cluster, checked, profile.algorithm, options), edgc::sim::vm_max_map_count());
  if (!stacks.fits)
    throw std::runtime_error(std::to_string(c.gpus) + " GPUs: " + std::to_string(stacks.maps_unguarded) +
                             " memory mappings for actor stacks exceed vm.max_map_count " +
                             std::to_string(stacks.map_limit));
  if (!stacks.guard_pages) args.emplace_back("--cfg=contexts/guard-size:0");
  s.guard_pages = stacks.guard_pages ? 1 : 0;
  for (const std::string& cfg : cfgs) args.push_back("--cfg=" + cfg);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());

  sg4::Actor::on_creation_cb([&s](sg4::Actor&) { ++s.actors; });
  sg4::Comm::on_send_cb([&s](const sg4::Comm&) { ++s.comms; });  // on_start is not exported by 3.32
  sg4::Exec::on_start_cb([&s](const sg4::Exec&) { ++s.execs; });
  sg4::Actor::on_sleep_cb([&s](const sg4::Actor&) { ++s.sleeps; });
  sg4::Engine::on_time_advance_cb([&s](double) { ++s.time_advances; });
  sg4::Activity::on_completion_cb([&s](const sg4::Activity&) { ++s.completions; });

  const auto t0 = Clock::now();
  sg4::Engine engine(&argc, argv.data());
  const edgc::sim::Platform platform = edgc::sim::build_folding_platform(engine, cluster, profile, checked, options);
  s.build_wall_s = seconds_since(t0);
  const auto t1 = Clock::now();
  const edgc::sim::IterationResult r =
      edgc::sim::simulate_iteration(engine, platform, mc.model, mc.parallel, mc.cost, plan, options);
  s.simulate_wall_s = seconds_since(t1);
  s.iteration_s = r.iteration_s;
  s.tp_closed_form = !tp_ring && edgc::sim::tp_closed_form_applies(platform, mc.parallel) ? 1 : 0;
  s.dp_closed_form = !dp_ring && edgc::sim::dp_closed_form_applies(platform, mc.parallel) ? 1 : 0;

  const edgc::bench::ProcessUsage usage = edgc::bench::process_usage();
  s.peak_rss_mib = usage.peak_rss_mib;
  s.cpu_s = usage.cpu_s;
  return s;
}

// One measurement in its own process; throws what the child threw.
Sample run_child(const Options& opt, const Case& c, bool tp_ring, bool dp_ring, bool all_replicas) {
  return edgc::bench::from_bytes<Sample>(edgc::bench::run_in_child("simulation", [&] {
    return edgc::bench::to_bytes(measure(opt.scenario_path, c, opt.cfgs, tp_ring, dp_ring, all_replicas));
  }));
}

Base read_base(const std::string& scenario_path) {
  edgc::scenario::Scenario sc = edgc::scenario::load_scenario(scenario_path, {});
  const edgc::sim::ClusterSpec cluster = edgc::scenario::read_cluster(sc);
  const edgc::scenario::ModelConfig mc = edgc::scenario::read_model_config(sc, cluster.gpu);
  Base b;
  b.gpus_per_node = cluster.gpus_per_node;
  b.tp = mc.parallel.tp;
  b.pp = mc.parallel.pp;
  b.micro_batch = mc.model.micro_batch_size;
  b.microbatches = mc.parallel.microbatches > 0
                       ? mc.parallel.microbatches
                       : mc.model.global_batch_size / std::max(1, b.micro_batch * mc.parallel.dp);
  b.model_name = mc.model.name;
  b.cluster_name = cluster.name;
  return b;
}

// Two cases per --gpus entry (uncompressed, PowerSGD); false (after saying why) when an entry does not fit.
bool make_cases(const Options& opt, const Base& b, std::vector<Case>& cases) {
  for (const int n : edgc::bench::int_list("--gpus", opt.gpus_text)) {
    if (n <= 0 || n % (b.tp * b.pp) != 0 || n % b.gpus_per_node != 0) {
      std::fprintf(stderr, "--gpus: %d is not a multiple of tp·pp = %d and of gpus_per_node = %d\n", n, b.tp * b.pp,
                   b.gpus_per_node);
      return false;
    }
    for (const int r : {0, opt.rank}) {
      Case c;
      c.gpus = n;
      c.nodes = n / b.gpus_per_node;
      c.dp = n / (b.tp * b.pp);
      c.microbatches = b.microbatches;
      c.global_batch = b.microbatches * b.micro_batch * c.dp;
      c.powersgd_rank = r;
      cases.push_back(c);
    }
  }
  return true;
}

void print_header(const Options& opt, const Base& b) {
  std::printf("edgc_bench_iteration: %s on %s (SimGrid %s), base %s\n", b.model_name.c_str(), b.cluster_name.c_str(),
              edgc::sim::simgrid_version().c_str(), opt.scenario_path.c_str());
  std::printf(
      "scaling: tp %d and pp %d kept, dp = GPUs / %d, %d micro-batches of %d per pipeline "
      "(global batch = %d · dp), nodes = GPUs / %d; %d repeat(s), medians shown\n",
      b.tp, b.pp, b.tp * b.pp, b.microbatches, b.micro_batch, b.microbatches * b.micro_batch, b.gpus_per_node,
      opt.repeats);
  std::printf("activities = comms + execs + sleeps started (S4U signals; SimGrid has no public event count)\n");
  std::printf("tp all-reduces: %s; dp all-reduces: %s%s\n\n",
              opt.tp_ring ? "ring messages (--tp-ring)" : "closed form where it applies",
              opt.dp_ring ? "ring messages (--dp-ring)" : "closed form where it applies",
              opt.check ? "; --check compares every case with both rings forced" : "");
  std::printf("  %5s %4s %5s %-12s %8s %8s %8s %8s %10s %11s %9s %9s %8s %6s\n", "GPUs", "dp", "batch", "plan",
              "build_s", "sim_s", "wall_s", "cpu_s", "activities", "activ/s", "RSS_MiB", "iter_s", "target", "result");
}

// --check: the same case with the TP rings forced must give the same simulated time. Returns the relative
// difference (1 when the ring run failed), having printed the failure.
double check_against_ring(const Options& opt, const Case& c, const Sample& first) {
  Sample ring;
  std::string error;
  try {
    ring = run_child(opt, c, true, true, true);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double rel = error.empty() ? std::abs(ring.iteration_s - first.iteration_s) / ring.iteration_s : 1.0;
  if (!(rel <= 1e-9))
    std::printf("  %5d %4d %5d %-12s CHECK FAILED: %.17g s here, %.17g s with the forced ring (%s)\n", c.gpus, c.dp,
                c.global_batch, plan_name(c).c_str(), first.iteration_s, ring.iteration_s, error.c_str());
  return rel;
}

nlohmann::ordered_json row_json(const Base& b, const Case& c, const Series& m, const Sample& first, double check_rel) {
  const std::uint64_t activities = first.comms + first.execs + first.sleeps;
  const double target = target_s(c.gpus);
  const double wall_med = median(m.wall);
  const auto or_null = [](bool has, double v) { return has ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); };
  return {{"gpus", c.gpus},
          {"nodes", c.nodes},
          {"tp", b.tp},
          {"pp", b.pp},
          {"dp", c.dp},
          {"microbatches", c.microbatches},
          {"global_batch_size", c.global_batch},
          {"plan", plan_name(c)},
          {"powersgd_rank", c.powersgd_rank},
          {"tp_closed_form", first.tp_closed_form != 0},
          {"dp_closed_form", first.dp_closed_form != 0},
          {"stack_guard_pages", first.guard_pages != 0},
          {"check_rel_diff_vs_ring", or_null(check_rel >= 0, check_rel)},
          {"build_wall_s", m.build},
          {"simulate_wall_s", m.sim},
          {"wall_s", m.wall},
          {"cpu_s", m.cpu},
          {"peak_rss_MiB", m.rss},
          {"median_build_wall_s", median(m.build)},
          {"median_simulate_wall_s", median(m.sim)},
          {"median_wall_s", wall_med},
          {"median_cpu_s", median(m.cpu)},
          {"median_peak_rss_MiB", median(m.rss)},
          {"simulated_iteration_s", first.iteration_s},
          {"actors", first.actors},
          {"comms", first.comms},
          {"execs", first.execs},
          {"sleeps", first.sleeps},
          {"activities", activities},
          {"activities_per_s", static_cast<double>(activities) / median(m.sim)},
          {"time_advances", first.time_advances},
          {"activity_completions", first.completions},
          {"target_wall_s", or_null(target > 0, target)},
          {"pass", target > 0 ? nlohmann::ordered_json(wall_med <= target) : nlohmann::ordered_json()}};
}

void print_row(const Case& c, const Series& m, const Sample& first) {
  const std::uint64_t activities = first.comms + first.execs + first.sleeps;
  const double wall_med = median(m.wall);
  const double sim_med = median(m.sim);
  const double target = target_s(c.gpus);
  const char* verdict = target <= 0 ? "-" : (wall_med <= target ? "pass" : "MISS");
  char target_text[32] = "-";
  if (target > 0) std::snprintf(target_text, sizeof target_text, "<=%g", target);
  std::printf("  %5d %4d %5d %-12s %8.3f %8.3f %8.3f %8.3f %10llu %11.0f %9.1f %9.4f %8s %6s\n", c.gpus, c.dp,
              c.global_batch, plan_name(c).c_str(), median(m.build), sim_med, wall_med, median(m.cpu),
              static_cast<unsigned long long>(activities), static_cast<double>(activities) / sim_med, median(m.rss),
              first.iteration_s, target_text, verdict);
  std::fflush(stdout);
}

// Measures one case --repeats times (and against the forced ring with --check), prints its row and adds its JSON
// row; false when a measurement or the check failed.
bool bench_case(const Options& opt, const Base& b, const Case& c, nlohmann::ordered_json& rows) {
  std::vector<Sample> samples;
  try {
    for (int r = 0; r < opt.repeats; ++r)
      samples.push_back(run_child(opt, c, opt.tp_ring, opt.dp_ring, opt.all_replicas));
  } catch (const std::exception& e) {
    std::printf("  %5d %4d %5d %-12s FAILED: %s\n", c.gpus, c.dp, c.global_batch, plan_name(c).c_str(), e.what());
    rows.push_back({{"gpus", c.gpus}, {"plan", plan_name(c)}, {"error", e.what()}});
    return false;
  }
  Series m;
  for (const Sample& s : samples) {
    m.build.push_back(s.build_wall_s);
    m.sim.push_back(s.simulate_wall_s);
    m.wall.push_back(s.build_wall_s + s.simulate_wall_s);
    m.cpu.push_back(s.cpu_s);
    m.rss.push_back(s.peak_rss_mib);
  }
  const Sample& first = samples.front();
  const double check_rel = opt.check ? check_against_ring(opt, c, first) : -1.0;
  const bool ok = !opt.check || check_rel <= 1e-9;
  print_row(c, m, first);
  rows.push_back(row_json(b, c, m, first, check_rel));
  return ok;
}

int run(int argc, char** argv) {
  Options opt;
  edgc::bench::Args args(
      "[--scenario FILE] [--gpus 64,512,4096] [--repeats 3] [--rank 64] [--json FILE] [--tp-ring] [--dp-ring] "
      "[--all-replicas] [--check] "
      "[--cfg KEY:VALUE]...");
  args.text("--scenario", opt.scenario_path).text("--gpus", opt.gpus_text).repeats(opt.repeats);
  args.integer("--rank", opt.rank, 1).json_path("--json", opt.json_out).flag("--tp-ring", opt.tp_ring);
  args.flag("--dp-ring", opt.dp_ring).flag("--all-replicas", opt.all_replicas).flag("--check", opt.check);
  args.repeated("--cfg", opt.cfgs);
  if (const auto code = args.parse(argc, argv)) return *code;
  Base base;
  try {
    base = read_base(opt.scenario_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  std::vector<Case> cases;
  if (!make_cases(opt, base, cases)) return 2;

  print_header(opt, base);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  bool all_ok = true;
  for (const Case& c : cases) all_ok = bench_case(opt, base, c, rows) && all_ok;

  edgc::bench::write_json(
      opt.json_out,
      {{"schema", "edgc.bench.iteration/1"},
       {"scenario", opt.scenario_path},
       {"model", base.model_name},
       {"cluster", base.cluster_name},
       {"simgrid", edgc::sim::simgrid_version()},
       {"repeats", opt.repeats},
       {"scaling",
        "tp and pp of the base scenario kept, dp = GPUs / (tp·pp), micro-batches per pipeline kept, global batch = "
        "microbatches · micro_batch · dp"},
       {"activities_definition", "comms + execs + actor sleeps started (S4U signals)"},
       {"wall_definition", "sg4::Engine + Platform::build + simulate_iteration, one process"},
       {"tp_ring_forced", opt.tp_ring},
       {"dp_ring_forced", opt.dp_ring},
       {"cfg", opt.cfgs},
       {"rows", rows}});
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return edgc::bench::run_main("edgc_bench_iteration", [&] { return run(argc, argv); });
}
