#pragma once
// nccl-tests all_reduce_perf logs, the measurements `edgc calibrate` fits the calibrated network profile to: the
// out-of-place columns of each data row and the number of ranks ("#  Rank" lines), read strictly.
#include <string>
#include <vector>

namespace edgc::results {

/// One data row: size count type redop root time algbw busbw #wrong time algbw busbw #wrong (out-of-place, then
/// in-place); only the out-of-place figures are kept.
struct NcclTestsRow {
  double bytes = 0;       ///< message size, bytes
  double time_us = 0;     ///< out-of-place time, microseconds
  double busbw_GBps = 0;  ///< out-of-place bus bandwidth, GB/s
};

struct NcclTestsLog {
  std::string path;
  int ranks = 0;  ///< "#  Rank" lines (0 when the log has none)
  std::vector<NcclTestsRow> rows;
  int skipped = 0;  ///< NCCL_DEBUG INFO/WARN lines between the rows
};

/// Reads an all_reduce_perf log. Comment lines (#) and NCCL INFO/WARN lines are skipped; every other non-blank
/// line must be a data row of 13 columns with positive, increasing sizes, a positive time, a non-negative busbw and
/// no wrong results. Throws ConfigError naming "path:line" and the column.
NcclTestsLog read_nccl_tests_log(const std::string& path);

}  // namespace edgc::results
