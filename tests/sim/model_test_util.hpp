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

/// Llama-3 8B (meta-llama/Meta-Llama-3-8B config.json): 32 layers, hidden 4096, 32 heads, 8 kv heads, intermediate
/// 14336, vocabulary 128256, RMSNorm, SwiGLU, RoPE, no biases, untied embeddings.
inline ModelSpec llama3_8b() {
  ModelSpec m;
  m.name = "llama3-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.vocab = 128256;
  m.seq_len = 8192;
  m.micro_batch_size = 1;
  m.global_batch_size = 128;
  m.dtype = "bf16";
  m.mlp = Mlp::kSwiglu;
  m.norm = Norm::kRmsNorm;
  m.position = Position::kRope;
  m.bias = LinearBias::kNone;
  m.tie_embeddings = false;
  m.dropout = false;
  return m;
}

/// mistralai/Mixtral-8x7B-v0.1's config.json (scenarios/models/hf/mixtral-8x7b-config.json): Llama-3 8B's layer
/// shape with 8 experts of width 14336, top 2, vocabulary 32000, sequence 4096.
inline ModelSpec mixtral_8x7b() {
  ModelSpec m = llama3_8b();
  m.name = "Mixtral-8x7B";
  m.ffn_hidden = 0;
  m.vocab = 32000;
  m.seq_len = 4096;
  m.global_batch_size = 256;
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
