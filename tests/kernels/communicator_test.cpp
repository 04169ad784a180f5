#include "edgc/kernels/communicator.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "edgc/core/error.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::random_normal;

// Runs body(d, comm) on `size` threads over one group.
template <class F>
void on_ranks(InProcessGroup& group, F&& body) {
  std::vector<std::thread> threads;
  for (int d = 0; d < group.size(); ++d) threads.emplace_back([&, d] { body(d, group.communicator(d)); });
  for (auto& t : threads) t.join();
}

TEST(InProcessGroup, SumsInRankOrderAndEveryRankGetsTheSameBits) {
  for (const int world : {1, 2, 3, 5}) {
    InProcessGroup group(world);
    std::vector<std::vector<float>> data;
    for (int d = 0; d < world; ++d) data.push_back(random_normal(1001, static_cast<std::uint64_t>(d + 1)));
    const std::vector<std::vector<float>> in = data;
    on_ranks(group, [&](int d, Communicator& c) {
      EXPECT_EQ(c.rank(), d);
      EXPECT_EQ(c.size(), world);
      for (int rep = 0; rep < 3; ++rep) {
        data[static_cast<std::size_t>(d)] = in[static_cast<std::size_t>(d)];
        c.all_reduce_sum(data[static_cast<std::size_t>(d)]);
      }
      std::vector<float> empty;
      c.all_reduce_sum(empty);
    });
    for (std::size_t k = 0; k < 1001; ++k) {
      float want = in[0][k];
      for (int d = 1; d < world; ++d) want += in[static_cast<std::size_t>(d)][k];
      for (int d = 0; d < world; ++d) ASSERT_EQ(data[static_cast<std::size_t>(d)][k], want);
    }
  }
}

TEST(InProcessGroup, SizeMismatchThrowsOnEveryRankAndTheGroupRecovers) {
  InProcessGroup group(3);
  std::atomic<int> thrown{0};
  on_ranks(group, [&](int d, Communicator& c) {
    std::vector<float> v(d == 1 ? 4 : 5, 1.0F);
    try {
      c.all_reduce_sum(v);
    } catch (const InternalError& e) {
      ++thrown;
      EXPECT_NE(std::string(e.what()).find("rank 1 passed 4"), std::string::npos) << e.what();
    }
    std::vector<float> w(5, 1.0F);
    c.all_reduce_sum(w);
    EXPECT_EQ(w[0], 3.0F);
  });
  EXPECT_EQ(thrown.load(), 3);
}

TEST(InProcessGroup, AbortWakesWaitingRanks) {
  InProcessGroup group(3);
  std::atomic<int> thrown{0};
  on_ranks(group, [&](int d, Communicator& c) {
    if (d == 2) {
      group.abort();  // this rank "failed" and never joins the collective
      return;
    }
    std::vector<float> v(8, 1.0F);
    try {
      c.all_reduce_sum(v);
    } catch (const InternalError&) {
      ++thrown;
    }
  });
  EXPECT_EQ(thrown.load(), 2);
}

TEST(InProcessGroup, RejectsBadSizesAndRanks) {
  EXPECT_THROW(InProcessGroup(0), ConfigError);
  InProcessGroup group(2);
  EXPECT_THROW(group.communicator(2), ConfigError);
  EXPECT_THROW(group.communicator(-1), ConfigError);
}

TEST(LocalCommunicator, IsAGroupOfOne) {
  LocalCommunicator c;
  std::vector<float> v{1.0F, 2.0F};
  c.all_reduce_sum(v);
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(v, (std::vector<float>{1.0F, 2.0F}));
}

}  // namespace
}  // namespace edgc::kernels
