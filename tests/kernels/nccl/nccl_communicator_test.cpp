// NcclCommunicator in one process (MPI singleton) or under `mpirun -np D` with one GPU per rank. main() decides
// once, for all ranks together, whether the GPU tests can run; when they cannot, each skips with "GPU test
// skipped: <why>" (no CUDA device, or fewer GPUs than ranks on the host). NcclNoDevice runs only where no rank
// has a GPU. Rules as in the MPI tests: every rank makes the same collective calls in the same order whatever
// its checks find, so only EXPECT_* before a test's last collective, and the job's exit code is the worst rank's.
#include "edgc/kernels/nccl_communicator.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../kernel_test_util.hpp"
#include "../mpi_test_util.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/random.hpp"
#include "edgc/kernels/mpi_communicator.hpp"
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

std::string g_skip_gpu;  // why the GPU tests cannot run on every rank; empty when they can
bool g_no_device_anywhere = false;

#define SKIP_WITHOUT_GPUS()                                                      \
  do {                                                                           \
    if (!g_skip_gpu.empty()) GTEST_SKIP() << "GPU test skipped: " << g_skip_gpu; \
  } while (0)

// Collective: decides g_skip_gpu and g_no_device_anywhere the same way on every rank.
void decide_what_runs() {
  std::string reason;
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  const bool no_device = st != cudaSuccess || count <= 0;
  if (st != cudaSuccess) {
    (void)cudaGetLastError();
    reason = std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(st) + ")";
  } else if (count <= 0) {
    reason = "no CUDA device";
  } else {
    MPI_Comm node = MPI_COMM_NULL;
    int here = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank(), MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_size(node, &here);
      MPI_Comm_free(&node);
    }
    if (here > count)
      reason = std::to_string(here) + " ranks on this host but only " + std::to_string(count) + " CUDA device(s)";
  }
  const int mine[2] = {reason.empty() ? 0 : 1, no_device ? 0 : 1};
  int any[2] = {0, 0};  // any rank that cannot run the GPU tests; any rank that has a device
  MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any[0] != 0 && reason.empty()) reason = "another rank cannot run them";
  g_skip_gpu = reason;
  g_no_device_anywhere = any[1] == 0;
}

// Whether every rank holds these same bits.
bool same_bits_on_every_rank(std::span<const float> v) {
  const std::uint64_t h = hash_bits(v);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world_size()));
  EXPECT_EQ(MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD), MPI_SUCCESS);
  for (const std::uint64_t x : all)
    if (x != all[0]) return false;
  return true;
}

// Checks `got` (this rank's result) against the sum over all ranks of their inputs: bit-identical to the input
// for one rank; otherwise within the float rounding of D−1 additions of the exact sum (NCCL's order is its own).
void expect_sum(std::span<const float> got, std::size_t n, const std::string& what) {
  const int world = world_size();
  std::vector<std::vector<float>> in;
  for (int d = 0; d < world; ++d) in.push_back(random_normal(n, data_seed(d, n)));
  ASSERT_EQ(got.size(), n) << what;
  if (world == 1) {
    EXPECT_EQ(std::memcmp(got.data(), in[0].data(), n * sizeof(float)), 0) << what << ": not returned unchanged";
    return;
  }
  std::size_t bad = 0;
  for (std::size_t k = 0; k < n; ++k) {
    double exact = 0.0;
    double magnitude = 0.0;
    for (int d = 0; d < world; ++d) {
      exact += in[static_cast<std::size_t>(d)][k];
      magnitude += std::abs(in[static_cast<std::size_t>(d)][k]);
    }
    if (!(std::abs(static_cast<double>(got[k]) - exact) <= 1e-6 * world * magnitude)) ++bad;
  }
  EXPECT_EQ(bad, 0u) << what;
}

/// Device (or managed, or pinned host) memory for n floats, freed on scope exit.
class CudaFloats {
 public:
  enum class Kind { kDevice, kManaged, kPinnedHost };
  CudaFloats(std::size_t n, Kind kind) : n_(n) {
    const std::size_t bytes = std::max<std::size_t>(n, 1) * sizeof(float);
    void* p = nullptr;
    const cudaError_t st = kind == Kind::kDevice    ? cudaMalloc(&p, bytes)
                           : kind == Kind::kManaged ? cudaMallocManaged(&p, bytes)
                                                    : cudaMallocHost(&p, bytes);
    if (st != cudaSuccess) throw CudaError(std::string("allocating test memory: ") + cudaGetErrorName(st));
    p_ = static_cast<float*>(p);
    pinned_ = kind == Kind::kPinnedHost;
  }
  CudaFloats(const CudaFloats&) = delete;
  CudaFloats& operator=(const CudaFloats&) = delete;
  ~CudaFloats() {
    if (pinned_) {
      cudaFreeHost(p_);
    } else {
      cudaFree(p_);
    }
  }
  void upload(const std::vector<float>& h) {
    if (cudaMemcpy(p_, h.data(), h.size() * sizeof(float), cudaMemcpyDefault) != cudaSuccess)
      throw CudaError("cudaMemcpy to test memory");
  }
  std::vector<float> download() const {
    std::vector<float> h(n_);
    if (cudaMemcpy(h.data(), p_, n_ * sizeof(float), cudaMemcpyDefault) != cudaSuccess)
      throw CudaError("cudaMemcpy from test memory");
    return h;
  }
  std::span<float> span() { return {p_, n_}; }

 private:
  float* p_ = nullptr;
  std::size_t n_ = 0;
  bool pinned_ = false;
};

TEST(NcclCommunicator, KnowsItsRankSizeAndDevice) {
  SKIP_WITHOUT_GPUS();
  NcclCommunicator comm;
  EXPECT_EQ(comm.rank(), world_rank());
  EXPECT_EQ(comm.size(), world_size());
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_GE(comm.device(), 0);
  EXPECT_LT(comm.device(), count);
  EXPECT_EQ(comm.device(), comm.local_rank() % count);  // the automatic choice
  EXPECT_GE(comm.local_size(), 1);
  EXPECT_NE(comm.stream(), nullptr);
  EXPECT_FALSE(comm.broken());
}

TEST(NcclCommunicator, SumsHostSpansInRoundsOfAnySize) {
  SKIP_WITHOUT_GPUS();
  const int me = world_rank();
  // The default round size, and rounds of 1000 floats: several rounds, and a staging buffer that grows over the
  // sizes and then stays at its cap.
  for (const std::size_t chunk : {NcclCommunicator::kDefaultChunkFloats, std::size_t{1000}}) {
    NcclCommunicator comm(MPI_COMM_WORLD, NcclCommunicator::kAutoDevice, chunk);
    for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{999}, std::size_t{1000},
                                std::size_t{1001}, std::size_t{4099}, (std::size_t{1} << 20) + 3}) {
      const std::string what = "host n=" + std::to_string(n) + " chunk=" + std::to_string(chunk);
      std::vector<float> v = random_normal(n, data_seed(me, n));
      comm.all_reduce_sum(v);
      expect_sum(v, n, what);
      EXPECT_TRUE(same_bits_on_every_rank(v)) << what;
      EXPECT_GE(comm.last_collective_seconds(), 0.0) << what;
      EXPECT_GT(comm.last_call_seconds(), 0.0) << what;
      EXPECT_LE(comm.last_collective_seconds(), comm.last_call_seconds()) << what;
    }
  }
}

TEST(NcclCommunicator, SumsDeviceManagedAndPinnedMemory) {
  SKIP_WITHOUT_GPUS();
  const int me = world_rank();
  NcclCommunicator comm(MPI_COMM_WORLD, NcclCommunicator::kAutoDevice, 1000);
  ASSERT_EQ(cudaSetDevice(comm.device()), cudaSuccess);
  int managed = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, comm.device()), cudaSuccess);
  // The same answer on every rank (the same GPU model is assumed), so every rank makes the same calls.
  std::vector<CudaFloats::Kind> kinds{CudaFloats::Kind::kDevice, CudaFloats::Kind::kPinnedHost};
  if (managed != 0) kinds.push_back(CudaFloats::Kind::kManaged);
  for (const CudaFloats::Kind kind : kinds)
    for (const std::size_t n : {std::size_t{1}, std::size_t{4099}, (std::size_t{1} << 20) + 3}) {
      const std::string what = "kind " + std::to_string(static_cast<int>(kind)) + " n=" + std::to_string(n);
      CudaFloats buf(n, kind);
      buf.upload(random_normal(n, data_seed(me, n)));
      comm.all_reduce_sum(buf.span());
      const std::vector<float> got = buf.download();
      expect_sum(got, n, what);
      EXPECT_TRUE(same_bits_on_every_rank(got)) << what;
    }
}

TEST(NcclCommunicator, EmptySpansOnlyAgree) {
  SKIP_WITHOUT_GPUS();
  NcclCommunicator comm;
  std::vector<float> empty;
  comm.all_reduce_sum(empty);
  comm.all_reduce_sum(std::span<float>{});
  EXPECT_EQ(comm.last_collective_seconds(), 0.0);
  std::vector<float> one{2.5F};
  comm.all_reduce_sum(one);  // still usable
  EXPECT_EQ(one[0], 2.5F * static_cast<float>(comm.size()));
}

TEST(NcclCommunicator, CountMismatchThrowsOnEveryRankAndTheCommunicatorRecovers) {
  SKIP_WITHOUT_GPUS();
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  NcclCommunicator comm;
  testing::expect_count_mismatch_throws_everywhere_and_recovers(comm);
  EXPECT_FALSE(comm.broken());
}

TEST(NcclCommunicator, RejectsBadArgumentsOnEveryRank) {
  SKIP_WITHOUT_GPUS();
  EXPECT_THROW(NcclCommunicator(MPI_COMM_WORLD, NcclCommunicator::kAutoDevice, 0), ConfigError);
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  // Every rank asks for a device it does not have: each throws its own ConfigError.
  try {
    NcclCommunicator comm(MPI_COMM_WORLD, count);
    ADD_FAILURE() << "device " << count << " accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  if (world_size() < 2) return;
  // Only the last rank asks for a missing device: the others throw too, naming it, instead of waiting.
  const int last = world_size() - 1;
  try {
    NcclCommunicator comm(MPI_COMM_WORLD, world_rank() == last ? count : NcclCommunicator::kAutoDevice);
    ADD_FAILURE() << "a missing device on rank " << last << " was accepted";
  } catch (const ConfigError& e) {
    if (world_rank() != last) {
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(last)), std::string::npos) << e.what();
    }
  }
  // Every rank on device 0: ranks of one host would share it.
  int here = 1;  // ranks on this host
  MPI_Comm node = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank(), MPI_INFO_NULL, &node), MPI_SUCCESS);
  MPI_Comm_size(node, &here);
  MPI_Comm_free(&node);
  try {
    NcclCommunicator comm(MPI_COMM_WORLD, 0);
    EXPECT_EQ(here, 1) << "two ranks of one host were both given device 0";
  } catch (const ConfigError& e) {
    EXPECT_GT(here, 1) << e.what();
    EXPECT_NE(std::string(e.what()).find("share the GPU"), std::string::npos) << e.what();
  }
}

// ---- PowerSGD over NCCL against the same steps over LocalCommunicator (one rank: the sum is the data) ----

const Shapes kShapes{{96, 80}, {96, 80}, {80}, {64, 2, 16}, {40, 33}};
const std::vector<std::vector<int>> kRanksPerStep{{4, 2, 0, 3, 5}, {4, 2, 0, 3, 5}, {6, 0, 0, 3, 5}, {2, 2, 0, 1, 1}};
const PowerSgdConfig kConfig{.rank = 4, .seed = 11};

std::size_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return static_cast<std::size_t>(n);
}

// Per step and tensor: the reconstruction Ĝ, then the error buffer E (zeros while empty), all flat.
std::vector<float> run_steps(Communicator& comm) {
  auto backend = make_backend("cpu");
  PowerSgd psgd(*backend, kShapes, kConfig);
  std::vector<float> record;
  for (std::size_t s = 0; s < kRanksPerStep.size(); ++s) {
    for (std::size_t i = 0; i < kShapes.size(); ++i) psgd.set_rank(i, kRanksPerStep[s][i]);
    std::vector<std::vector<float>> grads;
    for (std::size_t i = 0; i < kShapes.size(); ++i)
      grads.push_back(random_normal(numel(kShapes[i]), mix64(s * 31 + i), 0.02));
    std::vector<std::span<float>> views(grads.begin(), grads.end());
    psgd.step(views, comm);
    for (std::size_t i = 0; i < kShapes.size(); ++i) {
      record.insert(record.end(), grads[i].begin(), grads[i].end());
      const std::span<const float> e = psgd.error(i);
      if (e.empty()) {
        record.insert(record.end(), grads[i].size(), 0.0F);
      } else {
        record.insert(record.end(), e.begin(), e.end());
      }
    }
  }
  return record;
}

TEST(NcclCommunicator, PowerSgdStepsMatchLocalCommunicatorBitForBit) {
  SKIP_WITHOUT_GPUS();
  if (world_size() != 1) GTEST_SKIP() << "bit-for-bit only with one rank (NCCL's order of addition is its own)";
  NcclCommunicator nccl;
  LocalCommunicator local;
  const std::vector<float> over_nccl = run_steps(nccl);
  const std::vector<float> over_local = run_steps(local);
  ASSERT_EQ(over_nccl.size(), over_local.size());
  std::size_t differ = 0;
  for (std::size_t k = 0; k < over_nccl.size(); ++k)
    if (std::memcmp(&over_nccl[k], &over_local[k], sizeof(float)) != 0) ++differ;
  EXPECT_EQ(differ, 0u) << "of " << over_nccl.size() << " floats";
}

// ---- without any GPU: construction fails on every rank with a ConfigError that says so ----

TEST(NcclNoDevice, ConstructionThrowsAConfigErrorNamingTheMissingDevice) {
  if (!g_no_device_anywhere) GTEST_SKIP() << "no-GPU test skipped: this machine has a CUDA device";
  try {
    NcclCommunicator comm;
    ADD_FAILURE() << "constructed without a CUDA device";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CUDA device"), std::string::npos) << msg;
  }
  // Nothing was left half-open: MPI still works on every rank.
  EXPECT_EQ(all_sum(1), world_size());
}

}  // namespace
}  // namespace edgc::kernels

int main(int argc, char** argv) {
  // The runtime outlives every communicator (each test destroys its own).
  edgc::kernels::MpiRuntime runtime(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  edgc::kernels::decide_what_runs();
  const int mine = RUN_ALL_TESTS();
  int worst = mine;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
