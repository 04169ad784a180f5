// Running a sweep: point workers (forked, one point each), results appended line by line, resume, MPI ranks.
#include "edgc/engine/sweep.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/isolated.hpp"
#include "edgc/core/memo.hpp"
#include "edgc/core/worker_pool.hpp"
#include "edgc/engine/mpi_session.hpp"
#include "edgc/engine/simulation.hpp"
#include "edgc/results/figure_table.hpp"
#include "edgc/results/sweep_document.hpp"
#include "edgc/results/table.hpp"
#include "edgc/results/verdict.hpp"
#include "edgc/scenario/compression_config.hpp"
#include "sweep_keys.hpp"
#include "sweep_summary.hpp"

namespace edgc::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// Rank-to-rank messages of a distributed sweep.
constexpr int kTagReady = 1;   // worker → 0: one free slot
constexpr int kTagResult = 2;  // worker → 0: a finished point's line
constexpr int kTagFatal = 3;   // worker → 0: an internal failure (the sweep stops)
constexpr int kTagPoint = 4;   // 0 → worker: run this point index
constexpr int kTagNone = 5;    // 0 → worker: nothing left for that slot
constexpr int kTagStop = 6;    // 0 → worker: the sweep is over

// Runs one point (all its repeats) in this process: its results.jsonl line, without the newline.
std::string evaluate_point(const scenario::SweepSpec& spec, const scenario::SweepPoint& p,
                           const std::string& cache_dir) {
  const auto t0 = Clock::now();
  std::vector<results::ResultDocument> reps;
  results::SweepRecord line;
  line.point = p.index;
  line.params = p.params;
  line.repeats = spec.repeats;
  for (int r = 0; r < spec.repeats; ++r) {
    SimulateRequest rq;
    rq.scenario = spec.base;
    rq.sets = p.sets;
    // Common random numbers: repeat r uses seed r at every point, so points differ by their settings only.
    if (spec.repeats > 1) rq.sets.push_back("variability.seed=" + std::to_string(r));
    rq.policies = spec.policies;
    rq.break_even = false;      // r_max "auto" still finds it; otherwise a sweep point needs no break-even
    rq.configurations = false;  // not in results.jsonl
    rq.jobs = 1;
    rq.cache_dir = cache_dir;
    SimulateOutcome o = run_simulation(rq);
    line.simulations += o.result.simulations.value_or(0);
    reps.push_back(std::move(o.result));
  }
  line.gpus = reps.front().cluster->gpus;
  line.gpu = reps.front().cluster->gpu;
  if (const auto cm = reps.front().sections.find("cost_model");
      cm != reps.front().sections.end() && cm->is_object() && cm->contains("compute"))
    line.compute = (*cm)["compute"].get<std::string>();
  if (const auto m = reps.front().sections.find("memory"); m != reps.front().sections.end() && m->is_object()) {
    if (m->contains("peak_GiB") && (*m)["peak_GiB"].is_number()) line.peak_memory_GiB = (*m)["peak_GiB"].get<double>();
    if (m->contains("capacity_GiB") && (*m)["capacity_GiB"].is_number())
      line.memory_capacity_GiB = (*m)["capacity_GiB"].get<double>();
  }
  line.runs = results::average_runs(reps);
  line.trace_smaller_by = results::trace_smaller_by(reps.front());  // the verdicts' test of the error's evidence
  for (const results::ResultRun& run : reps.front().runs)  // the measured loss where a convergence record matches
    if (const auto m = run.detail.find("measured_loss"); m != run.detail.end() && m->is_object())
      line.measured_val_loss_change[run.policy] = m->value("change", 0.0);
  line.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return results::to_json(line).dump();
}

ordered_json error_line(const scenario::SweepPoint& p, const std::string& message) {
  results::SweepRecord line;
  line.point = p.index;
  line.params = p.params;
  line.error = message;
  return results::to_json(line);
}

// A finished child's line: its output, or an error line for a point whose scenario was rejected. Anything
// else (a crash) is an InternalError: it says nothing about the point.
std::string line_of(const core::ChildPool::Finished& f, const scenario::SweepPoint& p) {
  try {
    core::ChildPool::rethrow(f, "sweep point " + std::to_string(p.index));
  } catch (const InputError& e) {
    return error_line(p, e.what()).dump();
  }
  return f.output;
}

// ---- DIR ----

results::SweepDocument sweep_document(const scenario::SweepSpec& spec, const std::vector<scenario::SweepPoint>& points,
                                      const SweepOptions& o) {
  results::SweepDocument doc;
  doc.max_error = o.max_error ? o.max_error : spec.max_error;
  doc.min_saving = o.min_saving;
  for (const scenario::SweepAxis& a : spec.axes) {
    // The values points actually take (drawn ones for ranges), in first-seen order, numbers sorted.
    std::vector<ordered_json> seen;
    for (const scenario::SweepPoint& p : points)
      if (std::find(seen.begin(), seen.end(), p.params[a.key]) == seen.end()) seen.push_back(p.params[a.key]);
    if (std::all_of(seen.begin(), seen.end(), [](const ordered_json& v) { return v.is_number(); }))
      std::sort(seen.begin(), seen.end(),
                [](const ordered_json& x, const ordered_json& y) { return x.get<double>() < y.get<double>(); });
    results::SweepDocument::Axis axis{a.key, seen, std::nullopt};
    if (a.ranged) axis.range = std::pair{a.lo, a.hi};
    doc.axes.push_back(std::move(axis));
  }
  if (!spec.policies.empty()) doc.policies = scenario::policies_with_baseline(spec.policies, spec.path, "policies");
  doc.spec_file = spec.path;
  doc.base = spec.base;
  doc.description = spec.description;
  doc.mode = spec.random ? "random" : "grid";
  doc.points = static_cast<std::int64_t>(points.size());
  doc.repeats = spec.repeats;
  doc.spec = spec.document;
  return doc;
}

// Makes DIR ready: new (sweep.json written) or, with resume, the same sweep (its spec unchanged).
void prepare_dir(const scenario::SweepSpec& spec, const std::vector<scenario::SweepPoint>& points,
                 const SweepOptions& o) {
  const fs::path dir(o.out);
  const fs::path meta = dir / "sweep.json";
  // The spec may itself live in DIR (`plan` writes its generated sweep spec there first).
  const fs::path spec_dir = fs::absolute(spec.path).parent_path();
  const bool spec_in_dir = fs::exists(dir) && fs::equivalent(spec_dir, dir);
  check_sweep_out(o.out, o.resume, spec_in_dir ? fs::path(spec.path).filename().string() : std::string());
  if (fs::exists(meta)) {
    const json old = json::parse(read_file_bounded(meta, "sweep.json").value_or(std::string()), nullptr, false);
    if (old.is_discarded() || !old.is_object() || !old.contains("spec"))
      throw ConfigError(meta.string(), "spec", "not a sweep.json written by edgc sweep");
    if (old["spec"] != json::parse(spec.document.dump()))
      throw ConfigError(meta.string(), "spec",
                        "DIR holds a different sweep than " + spec.path + " (its spec changed): use another --out");
  }
  fs::create_directories(dir);
  write_file_atomic(meta, results::to_json(sweep_document(spec, points, o)).dump(2) + "\n");
  fs::create_directories(dir / "cache");  // after sweep.json: a directory with cache/ always holds its sweep
}

// The sweep directory's lock, held by the one run (fresh or --resume) that appends to it: a second run on the same
// directory is refused instead of computing points twice and leaving results.jsonl with duplicates. flock() is
// released by the kernel when the run ends, however it ends (a SIGKILL included), so no stale lock survives.
class DirLock {
 public:
  explicit DirLock(const fs::path& dir) : path_((dir / ".edgc-sweep.lock").string()) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw IoError(path_, std::string("cannot create the sweep's lock: ") + std::strerror(errno));
    // The point workers of a run killed by SIGKILL share its lock (fork keeps the open file) until their own
    // death signal ends them, a few milliseconds later: a run that starts right then waits for them, up to 2 s.
    int rc = 0;
    for (int tries = 0; (rc = ::flock(fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EWOULDBLOCK && tries < 200; ++tries)
      ::usleep(10'000);
    if (rc != 0) {
      const int e = errno;
      ::close(fd_);
      if (e == EWOULDBLOCK)
        throw UsageError("--out", "'" + dir.string() + "' is in use by another edgc sweep or plan (it holds " + path_ +
                                      "): wait for it to finish, then --resume, or choose another --out");
      throw IoError(path_, std::string("cannot lock the sweep directory: ") + std::strerror(e));
    }
  }
  ~DirLock() { ::close(fd_); }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// Where the file's last complete line ends (its size when it ends with a newline, 0 when it has none), read from
// the end backwards in blocks: a sweep's results may be larger than anything read whole.
std::uint64_t complete_lines_end(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError(file.string(), "cannot be opened to check its last line");
  std::uint64_t end = fs::file_size(file);
  constexpr std::uint64_t kBlock = 1 << 16;
  std::string block;
  while (end > 0) {
    const std::uint64_t n = std::min(kBlock, end);
    block.resize(static_cast<std::size_t>(n));
    in.seekg(static_cast<std::streamoff>(end - n));
    if (!in.read(block.data(), static_cast<std::streamsize>(n)))
      throw IoError(file.string(), "read failed while checking its last line");
    const auto nl = block.rfind('\n');
    if (nl != std::string::npos) return end - n + nl + 1;
    end -= n;
  }
  return 0;
}

// Cuts a partial last line (a writer killed mid-write) so appends start on a fresh line; returns the warning that
// says so, or "" when the file ended whole.
std::string repair_results(const fs::path& file) {
  if (!fs::exists(file)) return "";
  const std::uint64_t cut = complete_lines_end(file);
  if (cut == fs::file_size(file)) return "";
  fs::resize_file(file, cut);
  return file.string() +
         ": its last line was incomplete (a run killed mid-write) and was dropped; that point ran again";
}

class Appender {
 public:
  explicit Appender(const fs::path& file) : path_(file.string()) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw IoError(path_, std::string("cannot open for appending: ") + std::strerror(errno));
  }
  ~Appender() { ::close(fd_); }
  Appender(const Appender&) = delete;
  Appender& operator=(const Appender&) = delete;
  /// One line in one write() (retried only for the rest of a short write).
  void append(std::string line) {
    line += '\n';
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw IoError(path_, std::string("append failed: ") + std::strerror(errno));
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// ---- progress ----

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<std::int64_t>(std::llround(s));
  std::ostringstream os;
  if (t >= 3600)
    os << t / 3600 << "h" << (t % 3600) / 60 << "m";
  else if (t >= 60)
    os << t / 60 << "m" << t % 60 << "s";
  else
    os << t << "s";
  return os.str();
}

class Progress {
 public:
  Progress(std::int64_t total, std::int64_t done_before, bool quiet)
      : total_(total), before_(done_before), quiet_(quiet), tty_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {}

  void update(std::int64_t ran, std::int64_t failed, bool final = false) {
    if (quiet_) return;
    const double el = std::chrono::duration<double>(Clock::now() - start_).count();
    const std::int64_t done = before_ + ran;
    const double rate = el > 0 ? static_cast<double>(ran) / el * 60.0 : 0.0;
    const double eta = ran > 0 ? el / static_cast<double>(ran) * static_cast<double>(total_ - done) : -1.0;
    std::ostringstream os;
    os << done << "/" << total_ << " points";
    if (failed > 0) os << " (" << failed << " failed)";
    os << ", " << results::fmt_f(rate, 1) << " points/min, elapsed " << fmt_duration(el);
    if (!final) os << ", ETA " << fmt_duration(eta);
    if (tty_) {
      const int width = 30;
      const auto filled = total_ > 0 ? static_cast<int>(width * done / total_) : width;
      std::cerr << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
                << std::string(static_cast<std::size_t>(width - filled), '.') << "] " << os.str() << "\033[K";
      if (final) std::cerr << "\n";
      std::cerr.flush();
      return;
    }
    // Plain lines: at most one every 5 s, plus the last.
    if (final || el - last_ >= 5.0) {
      last_ = el;
      std::cerr << "sweep: " << os.str() << "\n";
    }
  }

 private:
  std::int64_t total_;
  std::int64_t before_;
  bool quiet_;
  bool tty_;
  Clock::time_point start_;
  double last_ = -1e9;
};

// ---- the loops ----

// This executable's path, for exec'd workers.
std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InternalError("cannot read /proc/self/exe: " + ec.message());
  return p.string();
}

// Runs points on this process's workers. By default (core::memo_enabled) they are `jobs` long-lived workers, so
// what one point reads, measures or simulates stays warm in memory for the next (worker_pool.hpp): forked copies of
// this process, or with MPI initialised here (where fork() is unsafe: Open MPI's threads and memory hooks) exec'd
// `edgc sweep-worker`s. With the memos off every point runs in a fresh child without the cache directory, as a
// reference the memoised results are checked against.
class PointRunner {
 public:
  PointRunner(const scenario::SweepSpec& spec, const std::vector<scenario::SweepPoint>& points, std::string cache,
              int jobs, bool exec)
      : spec_(spec),
        points_(points),
        cache_(core::memo_enabled() ? std::move(cache) : std::string()),
        jobs_(jobs),
        exec_(exec),
        reuse_(core::memo_enabled()) {}

  std::size_t running() const { return workers_ ? workers_->running() : children_.running(); }
  bool can_start() const { return workers_ ? workers_->idle() > 0 : static_cast<int>(children_.running()) < jobs_; }

  void start(std::size_t idx) {
    if (reuse_ && !workers_) start_workers();  // on the first point: a finished sweep starts none
    if (workers_) {
      workers_->submit(idx, std::to_string(idx));
      return;
    }
    if (!exec_) {
      const scenario::SweepPoint& p = points_[idx];
      children_.start(idx, [this, &p]() { return evaluate_point(spec_, p, cache_); });
      return;
    }
    std::vector<std::string> argv = {self_executable(), "sweep-point", "--spec",
                                     spec_.path,        "--point",     std::to_string(points_[idx].index),
                                     "--cache",         cache_};
    for (const std::string& s : spec_.command_line_sets) {
      argv.emplace_back("--set");
      argv.push_back(s);
    }
    children_.start_command(idx, argv);
  }

  std::optional<core::ChildPool::Finished> wait_any(double timeout_s) {
    return workers_ ? workers_->wait_any(timeout_s) : children_.wait_any(timeout_s);
  }

 private:
  void start_workers() {
    if (!exec_) {
      workers_ = std::make_unique<core::WorkerPool>(jobs_, [this](const std::string& request) {
        return evaluate_point(spec_, points_.at(std::stoull(request)), cache_);
      });
      return;
    }
    std::vector<std::string> argv = {self_executable(), "sweep-worker", "--spec", spec_.path, "--cache", cache_};
    for (const std::string& s : spec_.command_line_sets) {
      argv.emplace_back("--set");
      argv.push_back(s);
    }
    workers_ = std::make_unique<core::WorkerPool>(jobs_, argv);
  }

  const scenario::SweepSpec& spec_;
  const std::vector<scenario::SweepPoint>& points_;
  std::string cache_;
  int jobs_;
  bool exec_;
  bool reuse_;  // long-lived workers (memos on)
  std::unique_ptr<core::WorkerPool> workers_;
  core::ChildPool children_;
};

// Rank ≥ 1 of a distributed sweep: ask for points, run them, send the lines back, until told to stop.
void serve_points(const scenario::SweepSpec& spec, const std::vector<scenario::SweepPoint>& points,
                  const SweepOptions& o, MpiSession& mpi) {
  // Nothing is created here: rank 0 prepares DIR before it hands out the first point (a directory made by this
  // rank first would look like a foreign one to rank 0), and the workers create DIR/cache where it is missing
  // (ranks on other machines without a shared file system).
  const std::string cache = (fs::path(o.out) / "cache").string();
  PointRunner pool(spec, points, cache, o.jobs, true);
  int asked = 0;  // kTagReady sent and not yet answered
  for (int i = 0; i < o.jobs; ++i, ++asked) mpi.send(0, kTagReady, "");
  for (;;) {
    while (std::optional<MpiSession::Message> m = mpi.poll()) {
      if (m->tag == kTagStop) return;
      if (m->tag == kTagPoint) {
        --asked;
        const auto idx = static_cast<std::size_t>(std::stoll(m->payload));
        if (idx >= points.size()) throw InternalError("distributed sweep: point " + m->payload + " out of range");
        pool.start(idx);
      }
      if (m->tag == kTagNone) --asked;  // that slot stays idle
    }
    // Every request answered and points running: only a worker can have news (rank 0 answers requests and stops this
    // rank only after its last result), so block on the workers instead of polling MPI.
    const double wait = pool.running() == 0 ? 0.0 : asked == 0 ? -1.0 : 0.002;
    if (std::optional<core::ChildPool::Finished> f = pool.wait_any(wait)) {
      try {
        mpi.send(0, kTagResult, line_of(*f, points.at(f->id)));
      } catch (const std::exception& e) {
        mpi.send(0, kTagFatal, "rank " + std::to_string(mpi.rank()) + ": " + e.what());
        continue;
      }
      mpi.send(0, kTagReady, "");
      ++asked;
    } else if (pool.running() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

}  // namespace

void check_sweep_out(const std::string& out, bool resume, const std::string& own_file) {
  const fs::path dir(out);
  if (fs::exists(dir) && !fs::is_directory(dir)) throw UsageError("--out", "'" + out + "' is not a directory");
  if (fs::exists(dir / "sweep.json")) {
    if (!resume)
      throw UsageError("--out",
                       "'" + out + "' already holds a sweep: pass --resume to continue it, or choose another --out");
    return;
  }
  if (!fs::exists(dir)) return;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) continue;  // write_file_atomic's temporary names
    if (name == "cache" && entry.is_directory() && fs::is_empty(entry.path())) continue;
    if (!own_file.empty() && name == own_file) continue;
    throw UsageError("--out", "'" + out + "' is not empty and holds no sweep.json");
  }
}

std::string sweep_point_line(const scenario::SweepSpec& spec, std::int64_t index, const std::string& cache_dir) {
  const std::vector<scenario::SweepPoint> points = scenario::expand_points(spec);
  if (index < 0 || index >= static_cast<std::int64_t>(points.size()))
    throw UsageError("--point", std::to_string(index) + " is not a point of " + spec.path);
  const scenario::SweepPoint& p = points[static_cast<std::size_t>(index)];
  try {
    return evaluate_point(spec, p, cache_dir);
  } catch (const InputError& e) {
    return error_line(p, e.what()).dump();
  }
}

void serve_sweep_worker(const scenario::SweepSpec& spec, const std::string& cache_dir) {
  const std::vector<scenario::SweepPoint> points = scenario::expand_points(spec);
  // The replies own stdout: anything else printed there goes to stderr instead.
  std::cout.flush();
  const int replies = ::dup(STDOUT_FILENO);
  if (replies < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    throw IoError("stdout", std::string("cannot set up the worker's reply channel: ") + std::strerror(errno));
  core::serve_requests(STDIN_FILENO, replies, [&](const std::string& request) {
    const std::size_t index = std::stoull(request);
    if (index >= points.size()) throw InternalError("sweep worker: point " + request + " out of range");
    const scenario::SweepPoint& p = points[index];
    try {  // as sweep_point_line: a rejected scenario is the point's error line
      return evaluate_point(spec, p, cache_dir);
    } catch (const InputError& e) {
      return error_line(p, e.what()).dump();
    }
  });
  ::close(replies);
}

std::vector<results::SweepRecord> read_results(const std::string& dir) {
  return results::read_sweep_records(fs::path(dir) / "results.jsonl");
}

SweepOutcome run_sweep(const scenario::SweepSpec& spec, const SweepOptions& o, MpiSession* mpi) {
  if (o.jobs < 1) throw UsageError("--jobs", "must be >= 1, got " + std::to_string(o.jobs));
  if (!o.best_by.empty()) {  // before any point runs, not after the last
    const std::vector<std::string> names = results::run_figure_names(spec.repeats > 1);
    if (std::find(names.begin(), names.end(), o.best_by) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw UsageError("--best-by", "'" + o.best_by + "' is not a run figure of this sweep (" + known + ")");
    }
  }
  if (const std::int64_t n = scenario::point_count(spec); n > o.max_points)
    throw UsageError("--max-points", spec.path + " has " + std::to_string(n) + " points, more than " +
                                         std::to_string(o.max_points) + ": raise --max-points to run them all");
  check_sweep_keys(spec);  // a misspelt axis key fails here, not in every point
  const std::vector<scenario::SweepPoint> points = scenario::expand_points(spec);
  SweepOutcome outcome;
  outcome.points = static_cast<std::int64_t>(points.size());
  if (mpi != nullptr && mpi->rank() != 0) {
    serve_points(spec, points, o, *mpi);
    return outcome;
  }
  const auto t0 = Clock::now();
  const fs::path dir(o.out);
  prepare_dir(spec, points, o);
  const DirLock lock(dir);  // before results.jsonl is read or appended to
  const fs::path results = dir / "results.jsonl";
  const std::string torn = repair_results(results);
  std::set<std::int64_t> done;
  for (const results::SweepRecord& l : read_results(o.out)) {
    done.insert(l.point);
    if (l.failed()) ++outcome.failed;
  }
  outcome.already_done = static_cast<std::int64_t>(done.size());
  std::deque<std::size_t> pending;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (done.count(points[i].index) == 0U) pending.push_back(i);

  Appender out(results);
  Progress progress(outcome.points, outcome.already_done, o.quiet);
  PointRunner pool(spec, points, (dir / "cache").string(), o.jobs, mpi != nullptr);
  std::int64_t remote_busy = 0;
  const auto record = [&](const std::string& line) {
    if (json::parse(line).contains("error")) ++outcome.failed;
    out.append(line);
    ++outcome.ran;
    progress.update(outcome.ran, outcome.failed);
  };
  progress.update(0, outcome.failed);
  while (!pending.empty() || pool.running() > 0 || remote_busy > 0) {
    while (!pending.empty() && pool.can_start()) {
      const std::size_t idx = pending.front();
      pending.pop_front();
      pool.start(idx);
    }
    bool busy = false;
    if (mpi != nullptr) {
      while (std::optional<MpiSession::Message> m = mpi->poll()) {
        busy = true;
        if (m->tag == kTagFatal) throw InternalError("distributed sweep: " + m->payload);
        if (m->tag == kTagResult) {
          --remote_busy;
          record(m->payload);
        } else if (m->tag == kTagReady) {
          if (pending.empty()) {
            mpi->send(m->from, kTagNone, "");
          } else {
            mpi->send(m->from, kTagPoint, std::to_string(pending.front()));
            pending.pop_front();
            ++remote_busy;
          }
        }
      }
    }
    const double wait = mpi == nullptr ? -1.0 : 0.002;
    if (pool.running() > 0) {
      if (std::optional<core::ChildPool::Finished> f = pool.wait_any(busy ? 0.0 : wait))
        record(line_of(*f, points.at(f->id)));
    } else if (mpi != nullptr && !busy) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  if (mpi != nullptr)
    for (int r = 1; r < mpi->size(); ++r) mpi->send(r, kTagStop, "");
  progress.update(outcome.ran, outcome.failed, true);
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();

  outcome.results = read_results(o.out);
  const std::optional<double> budget = o.max_error ? o.max_error : spec.max_error;
  write_summary(dir, spec, outcome.results, budget);
  outcome.warnings = results::sweep_warnings(sweep_document(spec, points, o), outcome.results, budget);
  if (!torn.empty()) outcome.warnings.insert(outcome.warnings.begin(), torn);
  if (!o.quiet) {
    std::cout << "\n";
    print_best(std::cout, spec, outcome.results, o.best_by.empty() ? "training_time_s" : o.best_by, budget,
               o.min_saving);
  }
  return outcome;
}

}  // namespace edgc::engine
