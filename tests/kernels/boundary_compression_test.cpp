// BoundaryCompressor (PowerSGD on the pipeline's activation gradients) on every CPU kernel variant: an exact low-rank
// message is recovered; the wire is (rows + cols)·r per shard; the carried error is exactly M − Ĝ and the receiver
// gets Σ G − E_last over any number of messages (lazy error propagation); without it each error is dropped; the
// skip rule sends M itself and delivers the carried error; sender and receiver agree; bad sizes are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/kernels/boundary_compression.hpp"
#include "kernel_test_util.hpp"

namespace edgc::kernels {
namespace {

using testing::exact_low_rank;
using testing::frobenius;
using testing::frobenius_diff;
using testing::random_normal;
using testing::spans;

class BoundaryCompression : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Backend> backend = make_backend(GetParam());
};

// Runs one message through a sender and a receiver: returns what the receiver reconstructed per shard, and leaves
// the sender's shards holding what it says the receiver gets.
std::vector<std::vector<float>> send(BoundaryCompressor& tx, BoundaryCompressor& rx,
                                     std::vector<std::vector<float>>& shards, BoundaryStats* stats = nullptr) {
  std::vector<float> wire(static_cast<std::size_t>(tx.wire_floats()));
  const BoundaryStats st = tx.compress(spans(shards), wire);
  if (stats != nullptr) *stats = st;
  std::vector<std::vector<float>> out(shards.size(), std::vector<float>(shards.front().size()));
  rx.decompress(wire, spans(out));
  return out;
}

TEST_P(BoundaryCompression, ExactLowRankMessageIsRecoveredFromTheWire) {
  const BoundaryShape shape{96, 40, 3};
  BoundaryConfig cfg;
  cfg.rank = 4;
  BoundaryCompressor tx(*backend, shape, cfg);
  BoundaryCompressor rx(*backend, shape, cfg);
  EXPECT_TRUE(tx.compressed());
  EXPECT_EQ(tx.wire_floats(), 3 * (96 + 40) * 4);
  const std::vector<float> g = exact_low_rank(96, 40, 4);
  std::vector<std::vector<float>> shards(3, g);
  for (std::size_t s = 0; s < shards.size(); ++s)
    for (float& x : shards[s]) x *= static_cast<float>(s + 1);  // three different tensors of rank 4
  const std::vector<std::vector<float>> sent = shards;
  // One power iteration from a random Q already spans the range; float32 and the orthogonalisation's eps shift leave
  // ~1e-4 after the first message, and warm start refines it (as PowerSgd.RecoversAnExactlyLowRankMatrix).
  BoundaryStats st;
  auto got = send(tx, rx, shards, &st);
  EXPECT_LT(st.relative_error, 1e-3);
  for (int msg = 0; msg < 2; ++msg) {
    shards = sent;
    tx.reset_error();
    got = send(tx, rx, shards, &st);
  }
  EXPECT_TRUE(st.compressed);
  EXPECT_EQ(st.rank, 4);
  EXPECT_EQ(st.wire_floats, 3 * (96 + 40) * 4);
  EXPECT_EQ(st.dense_floats, 3 * 96 * 40);
  EXPECT_LT(st.relative_error, 1e-5);
  for (std::size_t s = 0; s < 3; ++s) {
    EXPECT_LT(frobenius_diff(got[s].data(), sent[s].data(), g.size()) / frobenius(sent[s]), 1e-5) << "shard " << s;
    // The sender's copy is what the receiver reconstructed (up to the last bits of two GEMM paths).
    EXPECT_LT(frobenius_diff(got[s].data(), shards[s].data(), g.size()) / frobenius(sent[s]), 1e-6);
  }
}

TEST_P(BoundaryCompression, LazyErrorPropagationDeliversEverythingButTheLastError) {
  const BoundaryShape shape{64, 48, 2};
  BoundaryConfig cfg;
  cfg.rank = 2;
  BoundaryCompressor tx(*backend, shape, cfg);
  BoundaryCompressor rx(*backend, shape, cfg);
  const std::size_t numel = 64 * 48;
  std::vector<std::vector<double>> sent_sum(2, std::vector<double>(numel, 0.0));
  std::vector<std::vector<double>> got_sum(2, std::vector<double>(numel, 0.0));
  std::vector<std::vector<float>> carried(2, std::vector<float>(numel, 0.0F));
  for (int msg = 0; msg < 5; ++msg) {
    std::vector<std::vector<float>> shards{random_normal(numel, 100 + msg), random_normal(numel, 200 + msg, 2.0)};
    const std::vector<std::vector<float>> g = shards;
    BoundaryStats st;
    const auto got = send(tx, rx, shards, &st);
    ASSERT_TRUE(st.compressed);
    EXPECT_GT(st.relative_error, 0.1);  // random data is far from rank 2
    double err_sq = 0.0;
    for (int s = 0; s < 2; ++s) {
      // The new carried error is exactly M − Ĝ with M = G + the error carried in.
      const std::vector<float> e = tx.carried_error(s);
      double d = 0.0;
      for (std::size_t i = 0; i < numel; ++i) {
        const double m = static_cast<double>(g[s][i]) + carried[s][i];
        const double want = m - shards[s][i];
        d = std::max(d, std::abs(e[i] - want));
        err_sq += static_cast<double>(e[i]) * e[i];
        sent_sum[s][i] += g[s][i];
        got_sum[s][i] += got[s][i];
      }
      EXPECT_LT(d, 1e-5) << "message " << msg << " shard " << s;
      carried[s] = e;
    }
    EXPECT_NEAR(st.carried_error_norm, std::sqrt(err_sq), 1e-6 * std::sqrt(err_sq));
  }
  // Σ Ĝ + E_last = Σ G: nothing is lost, only delayed.
  for (int s = 0; s < 2; ++s) {
    double d = 0.0;
    double scale = 0.0;
    for (std::size_t i = 0; i < numel; ++i) {
      d = std::max(d, std::abs(got_sum[s][i] + carried[s][i] - sent_sum[s][i]));
      scale = std::max(scale, std::abs(sent_sum[s][i]));
    }
    EXPECT_LT(d, 1e-5 * scale) << "shard " << s;
  }
  EXPECT_EQ(tx.messages(), 5);
}

TEST_P(BoundaryCompression, WithoutLazyErrorPropagationEachErrorIsDropped) {
  const BoundaryShape shape{64, 48, 1};
  BoundaryConfig cfg;
  cfg.rank = 2;
  cfg.lazy_error_propagation = false;
  BoundaryCompressor tx(*backend, shape, cfg);
  BoundaryCompressor rx(*backend, shape, cfg);
  const std::size_t numel = 64 * 48;
  const std::vector<float> g = random_normal(numel, 7);
  std::vector<std::vector<float>> a{g};
  BoundaryStats st1;
  send(tx, rx, a, &st1);
  // The same gradient again: without a carried error the second message sees G alone, so it is no worse than the
  // first one (warm start only helps), and nothing is carried.
  std::vector<std::vector<float>> b{g};
  BoundaryStats st2;
  send(tx, rx, b, &st2);
  EXPECT_EQ(st2.carried_error_norm, 0.0);
  EXPECT_LE(st2.relative_error, st1.relative_error + 1e-6);
  for (const float x : tx.carried_error(0)) ASSERT_EQ(x, 0.0F);
}

TEST_P(BoundaryCompression, SkippedMessageSendsMAndDeliversTheCarriedError) {
  const BoundaryShape shape{16, 12, 1};
  BoundaryConfig cfg;
  cfg.rank = 2;  // (16 + 12)·2·2 = 112 < 192: compressed
  BoundaryCompressor tx(*backend, shape, cfg);
  BoundaryCompressor rx(*backend, shape, cfg);
  const std::size_t numel = 16 * 12;
  std::vector<std::vector<float>> a{random_normal(numel, 3)};
  send(tx, rx, a);
  const std::vector<float> e = tx.carried_error(0);
  ASSERT_GT(frobenius(e), 0.0);
  // Rank 5: (16 + 12)·5·2 = 280 ≥ 192, so the skip rule sends M = G + E uncompressed, on both sides.
  tx.set_rank(5);
  rx.set_rank(5);
  EXPECT_FALSE(tx.compressed());
  EXPECT_EQ(tx.wire_floats(), static_cast<std::int64_t>(numel));
  const std::vector<float> g = random_normal(numel, 4);
  std::vector<std::vector<float>> b{g};
  BoundaryStats st;
  const auto got = send(tx, rx, b, &st);
  EXPECT_FALSE(st.compressed);
  EXPECT_EQ(st.relative_error, 0.0);
  for (std::size_t i = 0; i < numel; ++i) ASSERT_FLOAT_EQ(got[0][i], g[i] + e[i]);
  for (const float x : tx.carried_error(0)) ASSERT_EQ(x, 0.0F);
  // Rank 0 is uncompressed too.
  tx.set_rank(0);
  EXPECT_FALSE(tx.compressed());
}

TEST_P(BoundaryCompression, WarmStartTracksARepeatedSubspace) {
  // Messages with the same rank-6 column space and a decaying spectrum: warm-started rank 3 keeps improving its
  // subspace (one more power iteration per message), so the error falls from the first message and settles.
  const BoundaryShape shape{128, 64, 1};
  BoundaryConfig cfg;
  cfg.rank = 3;
  cfg.lazy_error_propagation = false;
  BoundaryCompressor tx(*backend, shape, cfg);
  BoundaryCompressor rx(*backend, shape, cfg);
  std::vector<float> a = random_normal(128 * 6, 11);
  for (std::int64_t i = 0; i < 128; ++i)
    for (int j = 0; j < 6; ++j) a[static_cast<std::size_t>(i * 6 + j)] *= std::ldexp(1.0F, -2 * j);
  const std::vector<float> b = random_normal(64 * 6, 12);
  const std::vector<double> prod = testing::reference_gemm(false, true, 128, 64, 6, a.data(), b.data());
  std::vector<double> err;
  for (int msg = 0; msg < 5; ++msg) {
    std::vector<std::vector<float>> m{std::vector<float>(prod.begin(), prod.end())};
    BoundaryStats st;
    send(tx, rx, m, &st);
    err.push_back(st.relative_error);
  }
  EXPECT_LT(err[1], 0.9 * err[0]);
  EXPECT_NEAR(err[4], err[3], 1e-4 * err[3]);  // converged to the rank-3 subspace
}

TEST_P(BoundaryCompression, BadShapesAndSizesAreRefused) {
  BoundaryConfig cfg;
  cfg.rank = 4;
  EXPECT_THROW(BoundaryCompressor(*backend, BoundaryShape{0, 8, 1}, cfg), ConfigError);
  EXPECT_THROW(BoundaryCompressor(*backend, BoundaryShape{8, 8, 0}, cfg), ConfigError);
  cfg.rank = 9;
  EXPECT_THROW(BoundaryCompressor(*backend, BoundaryShape{8, 40, 1}, cfg), ConfigError);
  cfg.rank = 2;
  BoundaryCompressor tx(*backend, BoundaryShape{32, 16, 2}, cfg);
  EXPECT_THROW(tx.set_rank(-1), ConfigError);
  std::vector<std::vector<float>> one{std::vector<float>(32 * 16)};
  std::vector<float> wire(static_cast<std::size_t>(tx.wire_floats()));
  EXPECT_THROW(tx.compress(spans(one), wire), InputError);  // one shard of two
  std::vector<std::vector<float>> two{std::vector<float>(32 * 16), std::vector<float>(32 * 15)};
  EXPECT_THROW(tx.compress(spans(two), wire), InputError);  // a shard of the wrong size
  std::vector<std::vector<float>> ok(2, std::vector<float>(32 * 16, 1.0F));
  std::vector<float> short_wire(wire.size() - 1);
  EXPECT_THROW(tx.compress(spans(ok), short_wire), InputError);
  EXPECT_THROW(tx.decompress(short_wire, spans(ok)), InputError);
}

INSTANTIATE_TEST_SUITE_P(CpuVariants, BoundaryCompression, ::testing::ValuesIn(testing::cpu_variants()),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace edgc::kernels
