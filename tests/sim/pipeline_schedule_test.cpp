#include "edgc/sim/pipeline_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "edgc/core/error.hpp"

namespace edgc::sim {
namespace {

using Schedule = PipelineSchedule;

// One pipeline shape; virtual_stages is 1 except for the interleaved schedule.
struct Shape {
  Schedule schedule;
  int pp;
  int microbatches;
  int virtual_stages;
};

// A spread of shapes, including fewer micro-batches than stages (1F1B's capped warm-up) and m = pp.
std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (int pp : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 4, 7, 8, 16}) {
      out.push_back({Schedule::kGpipe, pp, m, 1});
      out.push_back({Schedule::kOneFOneB, pp, m, 1});
    }
  for (int pp : {2, 3, 4})
    for (int v : {1, 2, 3, 4})
      for (int groups : {1, 2, 3}) out.push_back({Schedule::kInterleaved, pp, groups * pp, v});
  return out;
}

std::string describe(const Shape& s, int stage) {
  return "schedule " + std::to_string(static_cast<int>(s.schedule)) + " pp " + std::to_string(s.pp) + " m " +
         std::to_string(s.microbatches) + " v " + std::to_string(s.virtual_stages) + " stage " + std::to_string(stage);
}

// "F0 F1 B0 …", with ".chunk" appended when `chunked`: hand-written orders read like Megatron's diagrams.
std::string render(const std::vector<Pass>& order, bool chunked) {
  std::string out;
  for (const Pass& p : order) {
    if (!out.empty()) out += ' ';
    out += (p.kind == PassKind::kForward ? "F" : "B") + std::to_string(p.microbatch);
    if (chunked) out += "." + std::to_string(p.chunk);
  }
  return out;
}

// Largest number of (micro-batch, chunk) pairs forwarded but not yet backwarded at any point of `order`.
int max_in_flight(const std::vector<Pass>& order) {
  int in_flight = 0;
  int most = 0;
  for (const Pass& p : order) {
    in_flight += p.kind == PassKind::kForward ? 1 : -1;
    most = std::max(most, in_flight);
  }
  return most;
}

// Number of forwards before the first backward.
int warmup_of(const std::vector<Pass>& order) {
  const auto first_backward =
      std::find_if(order.begin(), order.end(), [](const Pass& p) { return p.kind == PassKind::kBackward; });
  return static_cast<int>(first_backward - order.begin());
}

TEST(PipelineSchedule, EveryPassOnceForwardThenOnceBackward) {
  for (const Shape& s : shapes())
    for (int stage = 0; stage < s.pp; ++stage) {
      SCOPED_TRACE(describe(s, stage));
      const std::vector<Pass> order = pass_order(s.schedule, s.pp, stage, s.microbatches, s.virtual_stages);
      ASSERT_EQ(order.size(), 2u * static_cast<std::size_t>(s.microbatches * s.virtual_stages));
      std::map<std::tuple<int, int>, int> forward_at;
      std::map<std::tuple<int, int>, int> backward_at;
      for (int i = 0; i < static_cast<int>(order.size()); ++i) {
        const Pass& p = order[static_cast<std::size_t>(i)];
        ASSERT_GE(p.microbatch, 0);
        ASSERT_LT(p.microbatch, s.microbatches);
        ASSERT_GE(p.chunk, 0);
        ASSERT_LT(p.chunk, s.virtual_stages);
        auto& seen = p.kind == PassKind::kForward ? forward_at : backward_at;
        EXPECT_TRUE(seen.emplace(std::tuple{p.microbatch, p.chunk}, i).second) << "pass repeated at " << i;
      }
      ASSERT_EQ(forward_at.size(), static_cast<std::size_t>(s.microbatches * s.virtual_stages));
      ASSERT_EQ(backward_at.size(), forward_at.size());
      for (const auto& [key, at] : forward_at) EXPECT_LT(at, backward_at.at(key));
    }
}

// The simulator's pipeline mailboxes are FIFO per (direction, receiving GPU, chunk): a receiver takes the next
// message whatever its micro-batch. That is only right when every stage runs each chunk's forwards (and
// backwards) in the same micro-batch order — here increasing — as its neighbours send them.
TEST(PipelineSchedule, EachChunkSeesMicroBatchesInIncreasingOrder) {
  for (const Shape& s : shapes())
    for (int stage = 0; stage < s.pp; ++stage) {
      SCOPED_TRACE(describe(s, stage));
      std::map<std::tuple<PassKind, int>, int> next;  // (direction, chunk) → expected micro-batch
      for (const Pass& p : pass_order(s.schedule, s.pp, stage, s.microbatches, s.virtual_stages)) {
        int& expected = next[std::tuple{p.kind, p.chunk}];
        EXPECT_EQ(p.microbatch, expected++);
      }
    }
}

// Runs every stage's list with blocking receives (as the simulator does; sends never block): a pass starts once
// the pass feeding it on the neighbouring stage is done. Every stage must reach the end of its list.
TEST(PipelineSchedule, RunsToCompletionWithBlockingReceives) {
  for (const Shape& s : shapes()) {
    SCOPED_TRACE(describe(s, 0));
    const int p = s.pp;
    const int v = s.virtual_stages;
    std::vector<std::vector<Pass>> orders;
    for (int stage = 0; stage < p; ++stage) orders.push_back(pass_order(s.schedule, p, stage, s.microbatches, v));
    std::map<std::tuple<PassKind, int, int, int>, bool> done;  // (direction, micro-batch, chunk, stage)
    // Virtual stage c·p + stage feeds c·p + stage + 1 going forward; gradients flow back the same way.
    const auto ready = [&](const Pass& q, int stage) {
      const int virtual_stage = q.chunk * p + stage + (q.kind == PassKind::kForward ? -1 : 1);
      if (virtual_stage < 0) return true;
      if (virtual_stage >= p * v) return done.count({PassKind::kForward, q.microbatch, q.chunk, stage}) > 0;
      return done.count({q.kind, q.microbatch, virtual_stage / p, virtual_stage % p}) > 0;
    };
    std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (int stage = 0; stage < p; ++stage) {
        const auto& order = orders[static_cast<std::size_t>(stage)];
        std::size_t& i = next[static_cast<std::size_t>(stage)];
        for (; i < order.size() && ready(order[i], stage); ++i, progress = true)
          done[{order[i].kind, order[i].microbatch, order[i].chunk, stage}] = true;
      }
    }
    for (int stage = 0; stage < p; ++stage)
      EXPECT_EQ(next[static_cast<std::size_t>(stage)], orders[static_cast<std::size_t>(stage)].size())
          << "stage " << stage << " deadlocks";
  }
}

TEST(PipelineSchedule, GpipeRunsAllForwardsThenAllBackwards) {
  for (int pp : {1, 2, 4})
    for (int stage = 0; stage < pp; ++stage)
      EXPECT_EQ(render(pass_order(Schedule::kGpipe, pp, stage, 3, 1), false), "F0 F1 F2 B0 B1 B2");
}

// 1F1B: stage s runs w = min(pp − 1 − s, m) warm-up forwards, then alternates one forward and one backward, then
// drains the w remaining backwards; so at most min(pp − s, m) micro-batches are in flight.
TEST(PipelineSchedule, OneFOneBWarmsUpThenAlternates) {
  for (int pp : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 4, 7, 16})
      for (int stage = 0; stage < pp; ++stage) {
        SCOPED_TRACE(describe({Schedule::kOneFOneB, pp, m, 1}, stage));
        const std::vector<Pass> order = pass_order(Schedule::kOneFOneB, pp, stage, m, 1);
        const int warmup = std::min(pp - 1 - stage, m);
        EXPECT_EQ(warmup_of(order), warmup == m ? m : warmup + 1);  // the first steady round starts with F
        EXPECT_EQ(max_in_flight(order), std::min(pp - stage, m));
        // After the warm-up: F B F B … for m − w rounds, then only backwards.
        for (int i = 0; i < m - warmup; ++i) {
          EXPECT_EQ(order[static_cast<std::size_t>(warmup + 2 * i)].kind, PassKind::kForward);
          EXPECT_EQ(order[static_cast<std::size_t>(warmup + 2 * i + 1)].kind, PassKind::kBackward);
        }
        for (std::size_t i = static_cast<std::size_t>(warmup + 2 * (m - warmup)); i < order.size(); ++i)
          EXPECT_EQ(order[i].kind, PassKind::kBackward);
      }
}

TEST(PipelineSchedule, OneFOneBByHand) {
  // pp 3, m 4: warm-ups 2, 1, 0.
  EXPECT_EQ(render(pass_order(Schedule::kOneFOneB, 3, 0, 4, 1), false), "F0 F1 F2 B0 F3 B1 B2 B3");
  EXPECT_EQ(render(pass_order(Schedule::kOneFOneB, 3, 1, 4, 1), false), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(render(pass_order(Schedule::kOneFOneB, 3, 2, 4, 1), false), "F0 B0 F1 B1 F2 B2 F3 B3");
  // Fewer micro-batches than the warm-up wants: stage 0 of pp 4 runs GPipe's order.
  EXPECT_EQ(render(pass_order(Schedule::kOneFOneB, 4, 0, 2, 1), false), "F0 F1 B0 B1");
}

// Megatron-LM's interleaved order for pp 2, 2 chunks per GPU, 4 micro-batches: micro-batches go in groups of pp
// through chunk 0 then chunk 1 forward, chunk 1 then chunk 0 backward; stage 0 warms up with 2·1 + 1·2 = 4
// forwards, stage 1 with 0 + 2 = 2.
TEST(PipelineSchedule, InterleavedByHand) {
  EXPECT_EQ(render(pass_order(Schedule::kInterleaved, 2, 0, 4, 2), true),
            "F0.0 F1.0 F0.1 F1.1 "
            "F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 "
            "B2.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(render(pass_order(Schedule::kInterleaved, 2, 1, 4, 2), true),
            "F0.0 F1.0 "
            "F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 "
            "B2.0 B3.0");
}

// Stage s of the interleaved schedule warms up with w = min(2·(pp − 1 − s) + (v − 1)·pp, m·v) forwards and never
// holds more than min(w + 1, m·v) chunk activations.
TEST(PipelineSchedule, InterleavedWarmUpAndInFlightBound) {
  for (int pp : {2, 3, 4})
    for (int v : {1, 2, 3})
      for (int groups : {1, 2, 4})
        for (int stage = 0; stage < pp; ++stage) {
          const int m = groups * pp;
          SCOPED_TRACE(describe({Schedule::kInterleaved, pp, m, v}, stage));
          const std::vector<Pass> order = pass_order(Schedule::kInterleaved, pp, stage, m, v);
          const int total = m * v;
          const int warmup = std::min(2 * (pp - 1 - stage) + (v - 1) * pp, total);
          EXPECT_EQ(warmup_of(order), warmup == total ? total : warmup + 1);
          EXPECT_EQ(max_in_flight(order), std::min(warmup + 1, total));
        }
}

// The field named by the ConfigError `call` throws, or "" when it throws nothing.
std::string rejected_field(const std::function<void()>& call) {
  try {
    call();
  } catch (const ConfigError& e) {
    return e.field();
  }
  return "";
}

TEST(PipelineSchedule, RejectsInvalidArgumentsNamingTheField) {
  const auto field = [](Schedule schedule, int pp, int stage, int m, int v) {
    return rejected_field([=] { (void)pass_order(schedule, pp, stage, m, v); });
  };
  EXPECT_EQ(field(Schedule::kOneFOneB, 0, 0, 4, 1), "parallelism.pp");
  EXPECT_EQ(field(Schedule::kOneFOneB, 2, 0, 0, 1), "parallelism.microbatches");
  EXPECT_EQ(field(Schedule::kGpipe, 2, 0, -1, 1), "parallelism.microbatches");
  EXPECT_EQ(field(Schedule::kInterleaved, 2, 0, 4, 0), "parallelism.virtual_stages");
  EXPECT_EQ(field(Schedule::kOneFOneB, 2, 2, 4, 1), "stage");
  EXPECT_EQ(field(Schedule::kGpipe, 2, -1, 4, 1), "stage");
  EXPECT_EQ(field(Schedule::kOneFOneB, 2, 0, 4, 2), "parallelism.virtual_stages");
  EXPECT_EQ(field(Schedule::kGpipe, 2, 0, 4, 2), "parallelism.virtual_stages");
  EXPECT_EQ(field(Schedule::kInterleaved, 1, 0, 4, 2), "parallelism.pp");
  EXPECT_EQ(field(Schedule::kInterleaved, 4, 0, 6, 2), "parallelism.microbatches");
  EXPECT_EQ(field(Schedule::kInterleaved, 4, 3, 8, 2), "");
  EXPECT_THROW((void)pass_order(Schedule::kOneFOneB, 2, 5, 4, 1), InputError);
}

}  // namespace
}  // namespace edgc::sim
