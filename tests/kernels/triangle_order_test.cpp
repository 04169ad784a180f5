// The numbering of the trailing Cholesky entries the CUDA backend's spread schedule hands out
// (impl/triangle_order.hpp): checked here on the CPU for every rank the schedule takes and beyond.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "impl/triangle_order.hpp"

namespace edgc::kernels::impl {
namespace {

// Every entry (i, k) with 1 ≤ k ≤ i < r exactly once, and at each step j the first trailing_entries(j, r) are exactly
// the entries of columns j + 1 .. r − 1.
TEST(TriangleOrder, NumbersEveryTrailingEntryOnceWithEachStepsEntriesFirst) {
  for (int r = 1; r <= 300; ++r) {
    SCOPED_TRACE("r " + std::to_string(r));
    const int total = trailing_entries(0, r);
    ASSERT_EQ(total, r * (r - 1) / 2);
    std::set<std::pair<int, int>> seen;
    int previous_col = r;
    for (int e = 0; e < total; ++e) {
      const TriangleCell c = trailing_cell(e, r);
      ASSERT_GE(c.col, 1) << e;
      ASSERT_LE(c.col, c.row) << e;
      ASSERT_LT(c.row, r) << e;
      ASSERT_LE(c.col, previous_col) << e;  // columns from the last
      previous_col = c.col;
      ASSERT_TRUE(seen.insert({c.row, c.col}).second) << "entry " << e << " repeats (" << c.row << ", " << c.col << ")";
    }
    for (int j = 0; j < r; ++j) {
      const int live = trailing_entries(j, r);
      for (int e = 0; e < total; ++e)
        ASSERT_EQ(trailing_cell(e, r).col > j, e < live) << "step " << j << " entry " << e;
    }
  }
  EXPECT_EQ(trailing_entries(127, 128), 0);
  EXPECT_EQ(trailing_entries(0, 128), 8128);  // 16 per thread of 512 (kCholeskySpreadRankMax)
}

}  // namespace
}  // namespace edgc::kernels::impl
