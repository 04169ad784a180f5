// MpiCommunicator under `mpirun -np D`: every rank runs every test. Rules that keep a failure from hanging the
// job: every rank makes the same MPI calls in the same order whatever its checks find, so only EXPECT_* before
// the last collective of a test (ASSERT_* would return early and leave the others waiting), and the job's exit
// code is the worst of all ranks'.
#include "edgc/kernels/mpi_communicator.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../kernel_test_util.hpp"
#include "../mpi_test_util.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "edgc/kernels/powersgd.hpp"

namespace edgc::kernels {
namespace {

using testing::all_sum;
using testing::data_seed;
using testing::hash_bits;
using testing::random_normal;
using testing::world_rank;
using testing::world_size;
using Shapes = std::vector<std::vector<std::int64_t>>;

// Every rank's hash, on every rank.
std::vector<std::uint64_t> all_hashes(std::span<const float> v) {
  const std::uint64_t h = hash_bits(v);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world_size()));
  EXPECT_EQ(MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD), MPI_SUCCESS);
  return all;
}

TEST(MpiCommunicator, SumsInRankOrderBitIdenticallyOnEveryRank) {
  const int world = world_size();
  const int me = world_rank();
  for (const std::size_t chunk : {MpiCommunicator::kDefaultChunkFloats, std::size_t{1000}}) {
    MpiCommunicator comm(MPI_COMM_WORLD, chunk);
    EXPECT_EQ(comm.rank(), me);
    EXPECT_EQ(comm.size(), world);
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7},
                                std::size_t{1001}, std::size_t{4099}, (std::size_t{1} << 20) + 3}) {
      if (chunk != MpiCommunicator::kDefaultChunkFloats && n > 5000) continue;  // many small rounds: keep it quick
      // Every rank can draw every rank's input, so each checks the whole result.
      std::vector<std::vector<float>> in;
      for (int d = 0; d < world; ++d) in.push_back(random_normal(n, data_seed(d, n)));
      std::vector<float> mine = in[static_cast<std::size_t>(me)];
      comm.all_reduce_sum(mine);
      std::size_t wrong_bits = 0;
      double worst = 0.0;
      for (std::size_t k = 0; k < n; ++k) {
        float want = in[0][k];
        double exact = in[0][k];
        for (int d = 1; d < world; ++d) {
          want += in[static_cast<std::size_t>(d)][k];
          exact += in[static_cast<std::size_t>(d)][k];
        }
        if (std::memcmp(&want, &mine[k], sizeof(float)) != 0) ++wrong_bits;
        worst = std::max(worst, std::abs(exact - static_cast<double>(mine[k])));
      }
      EXPECT_EQ(wrong_bits, 0u) << "n=" << n << " chunk=" << chunk;
      EXPECT_LE(worst, 1e-5 * world) << "n=" << n;  // against the sum in double: a sanity check of the check
      // The same bits on every rank, and again when repeated.
      const std::vector<std::uint64_t> hashes = all_hashes(mine);
      for (int d = 1; d < world; ++d) EXPECT_EQ(hashes[static_cast<std::size_t>(d)], hashes[0]) << "n=" << n;
      std::vector<float> again = in[static_cast<std::size_t>(me)];
      comm.all_reduce_sum(again);
      EXPECT_EQ(hash_bits(again), hash_bits(mine)) << "n=" << n;
    }
  }
}

TEST(MpiCommunicator, CountMismatchThrowsOnEveryRankAndTheCommunicatorRecovers) {
  MpiCommunicator comm;
  testing::expect_count_mismatch_throws_everywhere_and_recovers(comm);
}

TEST(MpiCommunicator, RejectsABadChunkSize) {
  EXPECT_THROW(MpiCommunicator(MPI_COMM_WORLD, 0), ConfigError);
  EXPECT_THROW(MpiCommunicator(MPI_COMM_WORLD, std::size_t{1} << 40), ConfigError);
}

// ---- PowerSGD data-parallel steps over MPI against the same ranks in one process (InProcessGroup) ----

const Shapes kShapes{{96, 80}, {96, 80}, {80}, {64, 2, 16}, {40, 33}};
const std::vector<std::vector<int>> kRanksPerStep{{4, 2, 0, 3, 5}, {4, 2, 0, 3, 5}, {6, 0, 0, 3, 5}, {2, 2, 0, 1, 1}};
constexpr int kSteps = 4;
const PowerSgdConfig kConfig{.rank = 4, .seed = 11};

std::size_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return static_cast<std::size_t>(n);
}

// Rank d's raw gradient of tensor i at step s: a shared signal plus rank-specific noise (different micro-batches).
std::vector<float> gradient(int d, int s, std::size_t i) {
  std::vector<float> g = random_normal(numel(kShapes[i]), mix64(static_cast<std::uint64_t>(s) * 31 + i), 0.02);
  const std::vector<float> noise =
      random_normal(g.size(), mix64((static_cast<std::uint64_t>(d + 1) << 32) ^ (s * 131 + i)), 0.01);
  for (std::size_t k = 0; k < g.size(); ++k) g[k] += noise[k];
  return g;
}

// What one rank records over all steps: per step and tensor, the reconstruction Ĝ and the error buffer E
// (zeros while empty), all flat.
struct Record {
  std::vector<float> flat;
  void add(std::span<const float> v, std::size_t n) {
    if (v.empty()) {
      flat.insert(flat.end(), n, 0.0F);
    } else {
      flat.insert(flat.end(), v.begin(), v.end());
    }
  }
};

// Runs the steps as rank `d` of `comm`. `invariant_error` (optional) receives, per step and tensor, the largest
// violation of Σ_d(G + E_old) = D·Ĝ + Σ_d E_new relative to ‖Σ_d(G + E_old)‖ — only over MPI, where the sums
// over ranks are taken in double with MPI_Allreduce.
Record run_rank(int d, Communicator& comm, bool over_mpi, double* invariant_error) {
  auto backend = make_backend("cpu");
  PowerSgd psgd(*backend, kShapes, kConfig);
  Record rec;
  for (int s = 0; s < kSteps; ++s) {
    for (std::size_t i = 0; i < kShapes.size(); ++i) psgd.set_rank(i, kRanksPerStep[static_cast<std::size_t>(s)][i]);
    std::vector<std::vector<float>> grads;
    std::vector<std::span<float>> views;
    std::vector<std::vector<double>> m;  // M = G + E_old
    for (std::size_t i = 0; i < kShapes.size(); ++i) {
      grads.push_back(gradient(d, s, i));
      const std::span<const float> e = psgd.error(i);
      std::vector<double> mi(grads.back().begin(), grads.back().end());
      if (!e.empty())
        for (std::size_t k = 0; k < mi.size(); ++k) mi[k] += e[k];
      m.push_back(std::move(mi));
    }
    for (auto& g : grads) views.emplace_back(g);
    psgd.step(views, comm);
    for (std::size_t i = 0; i < kShapes.size(); ++i) {
      rec.add(grads[i], grads[i].size());
      rec.add(psgd.error(i), grads[i].size());
    }
    if (!over_mpi) continue;
    for (std::size_t i = 0; i < kShapes.size(); ++i) {
      // local = (M − E_new, M) per element; summed over ranks in double.
      const std::span<const float> e = psgd.error(i);
      const std::size_t n = grads[i].size();
      std::vector<double> local(2 * n);
      for (std::size_t k = 0; k < n; ++k) {
        local[k] = m[i][k] - (e.empty() ? 0.0 : static_cast<double>(e[k]));
        local[n + k] = m[i][k];
      }
      std::vector<double> sum(2 * n);
      EXPECT_EQ(MPI_Allreduce(local.data(), sum.data(), static_cast<int>(2 * n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
                MPI_SUCCESS);
      double diff = 0.0;
      double ref = 0.0;
      for (std::size_t k = 0; k < n; ++k) {
        const double dk = sum[k] - comm.size() * static_cast<double>(grads[i][k]);
        diff += dk * dk;
        ref += sum[n + k] * sum[n + k];
      }
      const double rel = ref == 0.0 ? std::sqrt(diff) : std::sqrt(diff / ref);
      *invariant_error = std::max(*invariant_error, rel);
    }
  }
  return rec;
}

TEST(MpiCommunicator, PowerSgdStepsMatchTheInProcessEmulationBitForBit) {
  MpiCommunicator comm;
  const int world = comm.size();
  const int me = comm.rank();
  double invariant_error = 0.0;
  const Record mine = run_rank(me, comm, true, &invariant_error);
  // Error feedback loses nothing: what the ranks put in is what was delivered plus what they kept.
  EXPECT_LE(invariant_error, 1e-5) << "rank " << me;

  // Reconstructions are the same on every rank: compare every Ĝ block of every rank with rank 0's.
  const std::size_t total = mine.flat.size();
  std::vector<float> all(me == 0 ? total * static_cast<std::size_t>(world) : 0);
  EXPECT_EQ(MPI_Gather(mine.flat.data(), static_cast<int>(total), MPI_FLOAT, all.data(), static_cast<int>(total),
                       MPI_FLOAT, 0, MPI_COMM_WORLD),
            MPI_SUCCESS);
  if (me != 0) return;  // the last collective of the test is behind us

  // The same D ranks as threads of this process over an InProcessGroup, the same inputs and seeds.
  InProcessGroup group(world);
  std::vector<Record> emulated(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int d = 0; d < world; ++d)
    threads.emplace_back([&, d] {
      try {
        emulated[static_cast<std::size_t>(d)] = run_rank(d, group.communicator(d), false, nullptr);
      } catch (...) {
        group.abort();
        ADD_FAILURE() << "in-process rank " << d << " threw";
      }
    });
  for (auto& t : threads) t.join();

  for (int d = 0; d < world; ++d) {
    const float* live = all.data() + static_cast<std::size_t>(d) * total;
    const std::vector<float>& emu = emulated[static_cast<std::size_t>(d)].flat;
    ASSERT_EQ(emu.size(), total);
    std::size_t differ = 0;
    for (std::size_t k = 0; k < total; ++k)
      if (std::memcmp(&live[k], &emu[k], sizeof(float)) != 0) ++differ;
    EXPECT_EQ(differ, 0u) << "MPI rank " << d << " vs in-process rank " << d;
  }
  // Ĝ blocks (the first half of each (Ĝ, E) pair) agree across MPI ranks; E differs by design.
  std::size_t offset = 0;
  for (int s = 0; s < kSteps; ++s)
    for (std::size_t i = 0; i < kShapes.size(); ++i) {
      const std::size_t n = numel(kShapes[i]);
      for (int d = 1; d < world; ++d)
        EXPECT_EQ(std::memcmp(all.data() + static_cast<std::size_t>(d) * total + offset, all.data() + offset,
                              n * sizeof(float)),
                  0)
            << "step " << s << " tensor " << i << " rank " << d;
      offset += 2 * n;
    }
}

}  // namespace
}  // namespace edgc::kernels

int main(int argc, char** argv) {
  // The runtime outlives every communicator (each test destroys its own).
  edgc::kernels::MpiRuntime runtime(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int mine = RUN_ALL_TESTS();
  int worst = mine;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
