#pragma once
// What the tests of the MPI-bootstrapped communicators (MpiCommunicator, NcclCommunicator) share: world rank and
// size, collective checks, the per-rank data seeds, and the count-mismatch contract both keep.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "edgc/kernels/communicator.hpp"

namespace edgc::kernels::testing {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// FNV-1a over the bytes: equal hashes on every rank ⇔ (practically) the same bits.
inline std::uint64_t hash_bits(std::span<const float> v) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size_bytes(); ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

/// Σ x over MPI_COMM_WORLD, on every rank.
inline int all_sum(int x) {
  int s = 0;
  EXPECT_EQ(MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  return s;
}

/// Seed of rank `rank`'s input of length n.
inline std::uint64_t data_seed(int rank, std::size_t n) { return mix64((static_cast<std::uint64_t>(rank) << 40) ^ n); }

/// Rank 1 passes 4 elements, the others 5: every rank throws InternalError naming both counts, leaves its data
/// untouched, and the communicator then sums a matching call correctly. Needs ≥ 2 ranks.
inline void expect_count_mismatch_throws_everywhere_and_recovers(Communicator& comm) {
  const int me = comm.rank();
  std::vector<float> v(me == 1 ? 4 : 5, 1.0F);
  int thrown = 0;
  try {
    comm.all_reduce_sum(v);
  } catch (const InternalError& e) {
    thrown = 1;
    const std::string msg = e.what();
    EXPECT_NE(msg.find("smallest 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("largest 5"), std::string::npos) << msg;
  }
  EXPECT_EQ(v, std::vector<float>(me == 1 ? 4 : 5, 1.0F));  // untouched
  EXPECT_EQ(all_sum(thrown), comm.size());
  std::vector<float> w(5, 1.0F);
  comm.all_reduce_sum(w);
  EXPECT_EQ(w, std::vector<float>(5, static_cast<float>(comm.size())));
}

}  // namespace edgc::kernels::testing
