#include "edgc/sim/step_replay.hpp"

#include <xbt/log.h>

#include <algorithm>
#include <limits>
#include <string>

#include "edgc/sim/collectives.hpp"

XBT_LOG_NEW_DEFAULT_CATEGORY(edgc_step_replay, "measured steps replayed on the simulated cluster");

namespace edgc::sim {
namespace {

// Everything the rank actors share. Actors are not threads: plain shared data is safe.
struct ReplayState {
  const StepReplay* replay = nullptr;
  std::vector<Group> stage_groups;  // per stage, members by replica
  Group calibration;                // the first calibration_ranks members of stage 0's group
  sg4::BarrierPtr world;
  StepReplayTimes times;
  std::vector<double> calibration_start_s;
  std::vector<double> calibration_end_s;
};

// One measured rank: for every step, meet all ranks at the world barrier (the live run's barrier before each step),
// then synchronise its stage as PowerSgd::step did; then the calibration all-reduces, one per row.
class RankActor {
 public:
  RankActor(ReplayState* state, int rank) : state_(state), rank_(rank) {}

  void operator()() const {
    const ReplayedRank& place = state_->replay->ranks[static_cast<std::size_t>(rank_)];
    for (std::size_t p = 0; p < state_->replay->steps.size(); ++p) {
      state_->world->wait();
      const double t0 = sg4::Engine::get_clock();
      sync_stage(p, place.stage, place.replica);
      double& sync = state_->times.sync_s[p][static_cast<std::size_t>(place.stage)];
      sync = std::max(sync, sg4::Engine::get_clock() - t0);
    }
    const auto& bytes = state_->replay->calibration_bytes;
    const bool member = place.stage == 0 && place.replica < state_->calibration.size();
    for (std::size_t i = 0; i < state_->calibration_start_s.size(); ++i) {
      state_->world->wait();
      state_->calibration_start_s[i] = sg4::Engine::get_clock();  // the same for every rank
      if (!member) continue;
      all_reduce(state_->calibration, place.replica, bytes[i]);
      state_->calibration_end_s[i] = std::max(state_->calibration_end_s[i], sg4::Engine::get_clock());
    }
  }

 private:
  // The order of sim::StageSync (and of PowerSgd::step): ⅓ of the compression compute before the P all-reduce
  // (M = G + E, P = MQ), ⅓ after it (orthogonalisation, Q = MᵀP), ⅓ after the Q all-reduce (M̂ = PQᵀ, E = M − M̂).
  // The dense all-reduce goes where the stage issued it (PowerSgd sends it first). A third with no P or Q to
  // follow is slept at the end (never happens for live's steps: compute is 0 without compressed matrices).
  void sync_stage(std::size_t p, int stage, int replica) const {
    const auto s = static_cast<std::size_t>(stage);
    const ReplayedStage& sp = state_->replay->steps[p][s];
    const double third_s = sp.batch_s / 3.0;
    int thirds_left = 3;
    const auto think = [&] {
      if (third_s > 0) sg4::this_actor::sleep_for(third_s);
      --thirds_left;
    };
    const auto copy_half = [&] {
      if (sp.copy_s > 0) sg4::this_actor::sleep_for(sp.copy_s / 2);
    };
    int first_p = -1, last_p = -1, last_q = -1, dense = -1;
    for (int i = 0; i < static_cast<int>(sp.collectives.size()); ++i) {
      const ReplayedAllReduce kind = sp.collectives[static_cast<std::size_t>(i)].kind;
      if (kind == ReplayedAllReduce::kP && first_p < 0) first_p = i;
      if (kind == ReplayedAllReduce::kP) last_p = i;
      if (kind == ReplayedAllReduce::kQ) last_q = i;
      if (kind == ReplayedAllReduce::kDense && dense < 0) dense = i;
    }
    if (first_p < 0) think();
    const Group& group = state_->stage_groups[s];
    for (int i = 0; i < static_cast<int>(sp.collectives.size()); ++i) {
      if (i == first_p) think();
      if (i == dense) copy_half();
      const double entered = sg4::Engine::get_clock();
      all_reduce(group, replica, sp.collectives[static_cast<std::size_t>(i)].bytes);
      // A live run records the SHORTEST duration of a call over the group's ranks: the last rank to arrive waits
      // for nobody, so its duration is the collective itself, not the skew between ranks. The same statistic here
      // is the duration counted from when the LAST member entered (a ring ends for everyone about then + its time),
      // so the compute before it, and a late stage, do not count as communication on either side.
      double& shortest = state_->times.collective_s[p][s][static_cast<std::size_t>(i)];
      shortest = std::min(shortest, sg4::Engine::get_clock() - entered);
      if (i == dense) copy_half();
      if (i == last_p) think();
      if (i == last_q) think();
    }
    while (thirds_left > 0) think();
  }

  ReplayState* state_;
  int rank_;
};

}  // namespace

StepReplayTimes replay_steps(sg4::Engine& engine, const Platform& platform, const StepReplay& replay) {
  ReplayState st;
  st.replay = &replay;
  int stages = 0;
  for (const ReplayedRank& r : replay.ranks) stages = std::max(stages, r.stage + 1);
  for (int s = 0; s < stages; ++s) st.stage_groups.push_back(Group{{}, "val-s" + std::to_string(s)});
  for (const ReplayedRank& r : replay.ranks) {
    auto& hosts = st.stage_groups[static_cast<std::size_t>(r.stage)].hosts;
    if (hosts.size() <= static_cast<std::size_t>(r.replica)) hosts.resize(static_cast<std::size_t>(r.replica) + 1);
    hosts[static_cast<std::size_t>(r.replica)] = platform.gpu(r.gpu);
  }
  st.calibration.tag = "val-cal";
  if (replay.calibration_ranks >= 2) {
    for (int i = 0; i < replay.calibration_ranks; ++i)
      st.calibration.hosts.push_back(st.stage_groups[0].hosts[static_cast<std::size_t>(i)]);
    st.calibration_start_s.assign(replay.calibration_bytes.size(), 0.0);
    st.calibration_end_s.assign(replay.calibration_bytes.size(), 0.0);
  }
  for (const std::vector<ReplayedStage>& step : replay.steps) {
    auto& shortest = st.times.collective_s.emplace_back();
    for (const ReplayedStage& s : step)
      shortest.emplace_back(s.collectives.size(), std::numeric_limits<double>::infinity());
  }
  st.times.sync_s.assign(replay.steps.size(), std::vector<double>(static_cast<std::size_t>(stages), 0.0));
  st.world = sg4::Barrier::create(static_cast<unsigned>(replay.ranks.size()));
  for (std::size_t r = 0; r < replay.ranks.size(); ++r)
    sg4::Actor::create("val-rank" + std::to_string(r), platform.gpu(replay.ranks[r].gpu),
                       RankActor(&st, static_cast<int>(r)));
  XBT_DEBUG("%zu steps, %zu calibration all-reduces", replay.steps.size(), st.calibration_start_s.size());
  engine.run();

  for (std::size_t i = 0; i < st.calibration_start_s.size(); ++i)
    st.times.calibration_s.push_back(st.calibration_end_s[i] - st.calibration_start_s[i]);
  return std::move(st.times);
}

}  // namespace edgc::sim
