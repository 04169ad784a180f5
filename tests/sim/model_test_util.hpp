#pragma once
// Small model and layout specs shared by the arithmetic (engine-free) simulation tests.
#include "edgc/sim/spec.hpp"

namespace edgc::sim::test {

/// 8 layers of hidden 256: small enough for closed forms by hand, divisible by the usual tp/pp choices.
inline ModelSpec small_model() {
  ModelSpec m;
  m.name = "small";
  m.layers = 8;
  m.hidden = 256;
  m.heads = 8;
  m.seq_len = 128;
  m.vocab = 1024;
  m.micro_batch_size = 2;
  m.global_batch_size = 32;
  m.dtype = "fp16";
  return m;
}

/// tp × pp × dp with microbatches left to validate() to fill in.
inline ParallelSpec layout(int tp, int pp, int dp) {
  ParallelSpec p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.microbatches = 0;
  return p;
}

}  // namespace edgc::sim::test
