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

/// mistralai/Mixtral-8x7B-v0.1's config.json (scenarios/models/hf/mixtral-8x7b-config.json).
inline ModelSpec mixtral_8x7b() {
  ModelSpec m;
  m.name = "Mixtral-8x7B";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.seq_len = 4096;
  m.vocab = 32000;
  m.micro_batch_size = 1;
  m.global_batch_size = 256;
  m.dtype = "bf16";
  m.mlp = Mlp::kSwiglu;
  m.norm = Norm::kRmsNorm;
  m.position = Position::kRope;
  m.bias = LinearBias::kNone;
  m.tie_embeddings = false;
  m.dropout = false;
  m.experts = 8;
  m.top_k = 2;
  m.moe_ffn_hidden = 14336;
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
