// Benchmark: wall time of ONE simulated 3D-parallel training iteration (sim::simulate_iteration, contention on)
// against the design targets (design doc §8, one CPU core): <= 0.1 s at 64 GPUs, <= 1 s at 512, <= 5 s at 4096.
//
//   edgc_bench_iteration [--scenario FILE] [--gpus 64,512,4096] [--repeats 3] [--rank 64] [--json FILE]
//                        [--tp-ring] [--check] [--cfg KEY:VALUE]...
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
// an NVSwitch node); --tp-ring forces the ring messages everywhere (IterationOptions::force_tp_ring), the way the
// simulator worked before the closed form. --check runs every case once more with the forced ring and fails (exit
// 1) unless the simulated iteration times agree within 1e-9 relative: the benchmark checks its own result.
//
// SimGrid cannot reset its engine, so every measurement runs in a forked child: it builds the sg4::Engine, the
// Platform and runs simulate_iteration, then sends back through a pipe the wall seconds (platform build and
// simulation apart), its CPU seconds, the simulated iteration seconds, activity counts and its peak RSS
// (getrusage RUSAGE_SELF ru_maxrss). SimGrid 3.32 exposes no count of its internal events, so "activities" is
// counted through the public S4U signals: communications posted (Comm::on_send) + executions started + actor
// sleeps (a pass's compute is a sleep, and the TP closed form one sleep per group and pass); the number of distinct
// simulated timestamps (Engine::on_time_advance) is reported beside it. Each case is repeated --repeats times; the
// table shows the medians. Pass/miss compares the median of build + simulate wall time with the target.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "edgc/scenario/cluster_config.hpp"
#include "edgc/scenario/config.hpp"
#include "edgc/scenario/model_config.hpp"
#include "edgc/sim/engine_info.hpp"
#include "edgc/sim/iteration.hpp"
#include "edgc/sim/platform.hpp"

namespace sg4 = simgrid::s4u;

namespace {

// What a child reports. Plain data: written whole to the pipe.
struct Sample {
  int ok = 0;
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
  char error[256] = {};
};

struct Case {
  int gpus = 0;
  int dp = 0;
  int nodes = 0;
  int global_batch = 0;
  int microbatches = 0;
  int powersgd_rank = 0;  // 0 = uncompressed
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(std::stoi(item));
  return out;
}

double target_s(int gpus) {
  if (gpus == 64) return 0.1;
  if (gpus == 512) return 1.0;
  if (gpus == 4096) return 5.0;
  return 0.0;  // none
}

std::vector<std::string> overrides_for(const Case& c) {
  return {"cluster.nodes=" + std::to_string(c.nodes), "parallelism.dp=" + std::to_string(c.dp),
          "model.global_batch_size=" + std::to_string(c.global_batch),
          "parallelism.microbatches=" + std::to_string(c.microbatches)};
}

// Runs in the child: one simulation, result into `s`.
void measure(const std::string& scenario_path, const Case& c, const std::vector<std::string>& cfgs, bool tp_ring,
             Sample& s) {
  edgc::scenario::Scenario sc = edgc::scenario::load_scenario(scenario_path, overrides_for(c));
  const edgc::sim::ClusterSpec cluster = edgc::scenario::read_cluster(sc);
  const edgc::sim::NetworkProfile profile = edgc::scenario::read_network(sc);
  const edgc::scenario::ModelConfig mc = edgc::scenario::read_model_config(sc);
  const edgc::sim::DpSyncPlan plan = c.powersgd_rank == 0 ? edgc::sim::uncompressed_plan(mc.parallel.pp)
                                                          : edgc::sim::powersgd_plan(mc.parallel.pp, c.powersgd_rank);

  std::vector<std::string> args = {"edgc_bench_iteration"};
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

  const auto t0 = std::chrono::steady_clock::now();
  sg4::Engine engine(&argc, argv.data());
  const edgc::sim::Platform platform = edgc::sim::Platform::build(engine, cluster, profile);
  s.build_wall_s = seconds_since(t0);
  edgc::sim::IterationOptions options;
  options.force_tp_ring = tp_ring;
  const auto t1 = std::chrono::steady_clock::now();
  const edgc::sim::IterationResult r =
      edgc::sim::simulate_iteration(engine, platform, mc.model, mc.parallel, mc.cost, plan, options);
  s.simulate_wall_s = seconds_since(t1);
  s.iteration_s = r.iteration_s;
  s.tp_closed_form = !tp_ring && edgc::sim::tp_closed_form_applies(platform, mc.parallel) ? 1 : 0;

  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.peak_rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
  s.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  s.ok = 1;
}

Sample run_child(const std::string& scenario_path, const Case& c, const std::vector<std::string>& cfgs, bool tp_ring) {
  int fds[2];
  Sample s;
  if (pipe(fds) != 0) {
    std::snprintf(s.error, sizeof s.error, "pipe: %s", std::strerror(errno));
    return s;
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Sample mine;
    try {
      measure(scenario_path, c, cfgs, tp_ring, mine);
    } catch (const std::exception& e) {
      std::snprintf(mine.error, sizeof mine.error, "%s", e.what());
    }
    const char* p = reinterpret_cast<const char*>(&mine);
    std::size_t left = sizeof mine;
    while (left > 0) {
      const ssize_t n = write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(mine.ok != 0 ? 0 : 1);  // skip SimGrid's and the parent's atexit handlers
  }
  close(fds[1]);
  char* p = reinterpret_cast<char*>(&s);
  std::size_t got = 0;
  while (got < sizeof s) {
    const ssize_t n = read(fds[0], p + got, sizeof s - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != sizeof s) {
    s = Sample{};
    std::snprintf(s.error, sizeof s.error, "child died (status %d) before reporting", status);
  }
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario_path = "scenarios/paper/gpt2-12.1b-64xh100.json";
  std::string gpus_text = "64,512,4096";
  std::string json_out = "edgc_bench_iteration.json";
  int repeats = 3;
  int rank = 64;
  bool tp_ring = false;
  bool check = false;
  std::vector<std::string> cfgs;
  const char* usage =
      "usage: %s [--scenario FILE] [--gpus 64,512,4096] [--repeats 3] [--rank 64] [--json FILE] [--tp-ring] "
      "[--check] [--cfg KEY:VALUE]...\n";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--scenario" && has_value) {
      scenario_path = argv[++i];
    } else if (a == "--gpus" && has_value) {
      gpus_text = argv[++i];
    } else if (a == "--repeats" && has_value) {
      repeats = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--rank" && has_value) {
      rank = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--json" && has_value) {
      json_out = argv[++i];
    } else if (a == "--tp-ring") {
      tp_ring = true;
    } else if (a == "--check") {
      check = true;
    } else if (a == "--cfg" && has_value) {
      cfgs.emplace_back(argv[++i]);  // passed to SimGrid as --cfg=KEY:VALUE, for experiments
    } else {
      std::fprintf(stderr, usage, argv[0]);
      return 2;
    }
  }

  // The base layout, read once in the parent.
  int gpus_per_node = 0;
  int tp = 0;
  int pp = 0;
  int micro_batch = 0;
  int microbatches = 0;
  std::string model_name;
  std::string cluster_name;
  try {
    edgc::scenario::Scenario sc = edgc::scenario::load_scenario(scenario_path, {});
    const edgc::sim::ClusterSpec cluster = edgc::scenario::read_cluster(sc);
    const edgc::scenario::ModelConfig mc = edgc::scenario::read_model_config(sc);
    gpus_per_node = cluster.gpus_per_node;
    tp = mc.parallel.tp;
    pp = mc.parallel.pp;
    micro_batch = mc.model.micro_batch_size;
    microbatches = mc.parallel.microbatches > 0
                       ? mc.parallel.microbatches
                       : mc.model.global_batch_size / std::max(1, micro_batch * mc.parallel.dp);
    model_name = mc.model.name;
    cluster_name = cluster.name;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }

  std::vector<Case> cases;
  for (const int n : parse_list(gpus_text)) {
    if (n <= 0 || n % (tp * pp) != 0 || n % gpus_per_node != 0) {
      std::fprintf(stderr, "--gpus: %d is not a multiple of tp·pp = %d and of gpus_per_node = %d\n", n, tp * pp,
                   gpus_per_node);
      return 2;
    }
    for (const int r : {0, rank}) {
      Case c;
      c.gpus = n;
      c.nodes = n / gpus_per_node;
      c.dp = n / (tp * pp);
      c.microbatches = microbatches;
      c.global_batch = microbatches * micro_batch * c.dp;
      c.powersgd_rank = r;
      cases.push_back(c);
    }
  }

  std::printf("edgc_bench_iteration: %s on %s (SimGrid %s), base %s\n", model_name.c_str(), cluster_name.c_str(),
              edgc::sim::simgrid_version().c_str(), scenario_path.c_str());
  std::printf(
      "scaling: tp %d and pp %d kept, dp = GPUs / %d, %d micro-batches of %d per pipeline "
      "(global batch = %d · dp), nodes = GPUs / %d; %d repeat(s), medians shown\n",
      tp, pp, tp * pp, microbatches, micro_batch, microbatches * micro_batch, gpus_per_node, repeats);
  std::printf("activities = comms + execs + sleeps started (S4U signals; SimGrid has no public event count)\n");
  std::printf("tp all-reduces: %s%s\n\n", tp_ring ? "ring messages (--tp-ring)" : "closed form where it applies",
              check ? "; --check compares every case with the forced ring" : "");
  std::printf("  %5s %4s %5s %-12s %8s %8s %8s %8s %10s %11s %9s %9s %8s %6s\n", "GPUs", "dp", "batch", "plan",
              "build_s", "sim_s", "wall_s", "cpu_s", "activities", "activ/s", "RSS_MiB", "iter_s", "target", "result");

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  bool all_ok = true;
  for (const Case& c : cases) {
    std::vector<Sample> samples;
    std::string error;
    for (int r = 0; r < repeats; ++r) {
      const Sample s = run_child(scenario_path, c, cfgs, tp_ring);
      if (s.ok == 0) {
        error = s.error;
        break;
      }
      samples.push_back(s);
    }
    const std::string plan = c.powersgd_rank == 0 ? "uncompressed" : "powersgd-r" + std::to_string(c.powersgd_rank);
    if (!error.empty()) {
      std::printf("  %5d %4d %5d %-12s FAILED: %s\n", c.gpus, c.dp, c.global_batch, plan.c_str(), error.c_str());
      rows.push_back({{"gpus", c.gpus}, {"plan", plan}, {"error", error}});
      all_ok = false;
      continue;
    }
    std::vector<double> build, sim, wall, cpu, rss;
    for (const Sample& s : samples) {
      build.push_back(s.build_wall_s);
      sim.push_back(s.simulate_wall_s);
      wall.push_back(s.build_wall_s + s.simulate_wall_s);
      cpu.push_back(s.cpu_s);
      rss.push_back(s.peak_rss_mib);
    }
    const Sample& first = samples.front();
    // --check: the same case with the TP rings forced must give the same simulated time.
    double check_rel = -1.0;
    if (check) {
      const Sample ring = run_child(scenario_path, c, cfgs, true);
      check_rel = ring.ok != 0 ? std::abs(ring.iteration_s - first.iteration_s) / ring.iteration_s : 1.0;
      if (!(check_rel <= 1e-9)) {
        std::printf("  %5d %4d %5d %-12s CHECK FAILED: %.17g s here, %.17g s with the forced ring (%s)\n", c.gpus, c.dp,
                    c.global_batch, plan.c_str(), first.iteration_s, ring.iteration_s, ring.error);
        all_ok = false;
      }
    }
    const std::uint64_t activities = first.comms + first.execs + first.sleeps;
    const double wall_med = median(wall);
    const double sim_med = median(sim);
    const double target = target_s(c.gpus);
    const char* verdict = target <= 0 ? "-" : (wall_med <= target ? "pass" : "MISS");
    char target_text[32] = "-";
    if (target > 0) std::snprintf(target_text, sizeof target_text, "<=%g", target);
    std::printf("  %5d %4d %5d %-12s %8.3f %8.3f %8.3f %8.3f %10llu %11.0f %9.1f %9.4f %8s %6s\n", c.gpus, c.dp,
                c.global_batch, plan.c_str(), median(build), sim_med, wall_med, median(cpu),
                static_cast<unsigned long long>(activities), static_cast<double>(activities) / sim_med, median(rss),
                first.iteration_s, target_text, verdict);
    std::fflush(stdout);
    rows.push_back(
        {{"gpus", c.gpus},
         {"nodes", c.nodes},
         {"tp", tp},
         {"pp", pp},
         {"dp", c.dp},
         {"microbatches", c.microbatches},
         {"global_batch_size", c.global_batch},
         {"plan", plan},
         {"powersgd_rank", c.powersgd_rank},
         {"tp_closed_form", first.tp_closed_form != 0},
         {"check_rel_diff_vs_ring", check_rel >= 0 ? nlohmann::ordered_json(check_rel) : nlohmann::ordered_json()},
         {"build_wall_s", build},
         {"simulate_wall_s", sim},
         {"wall_s", wall},
         {"cpu_s", cpu},
         {"peak_rss_MiB", rss},
         {"median_build_wall_s", median(build)},
         {"median_simulate_wall_s", sim_med},
         {"median_wall_s", wall_med},
         {"median_cpu_s", median(cpu)},
         {"median_peak_rss_MiB", median(rss)},
         {"simulated_iteration_s", first.iteration_s},
         {"actors", first.actors},
         {"comms", first.comms},
         {"execs", first.execs},
         {"sleeps", first.sleeps},
         {"activities", activities},
         {"activities_per_s", static_cast<double>(activities) / sim_med},
         {"time_advances", first.time_advances},
         {"activity_completions", first.completions},
         {"target_wall_s", target > 0 ? nlohmann::ordered_json(target) : nlohmann::ordered_json()},
         {"pass", target > 0 ? nlohmann::ordered_json(wall_med <= target) : nlohmann::ordered_json()}});
  }

  if (!json_out.empty()) {
    nlohmann::ordered_json j = {{"schema", "edgc.bench.iteration/1"},
                                {"scenario", scenario_path},
                                {"model", model_name},
                                {"cluster", cluster_name},
                                {"simgrid", edgc::sim::simgrid_version()},
                                {"repeats", repeats},
                                {"scaling",
                                 "tp and pp of the base scenario kept, dp = GPUs / (tp·pp), micro-batches per "
                                 "pipeline kept, global batch = microbatches · micro_batch · dp"},
                                {"activities_definition", "comms + execs + actor sleeps started (S4U signals)"},
                                {"wall_definition", "sg4::Engine + Platform::build + simulate_iteration, one process"},
                                {"tp_ring_forced", tp_ring},
                                {"cfg", cfgs},
                                {"rows", rows}};
    std::ofstream(json_out) << j.dump(2) << "\n";
  }
  return all_ok ? 0 : 1;
}
