#include "edgc/sim/layer.hpp"

#include <string>

#include "edgc/core/error.hpp"
#include "edgc/sim/cost_model.hpp"

namespace edgc::sim {
namespace {

// The shape of the layer, from the model's keys and their defaults.
struct Dims {
  std::int64_t h = 0, a = 0, g = 0, d = 0, f = 0;  // f: the dense MLP's width (an MoE layer's shared experts', or 0)
  std::int64_t experts = 0, fe = 0;                // an MoE layer's routed experts and each one's width
  std::int64_t q() const { return a * d; }         // query (and attention output) width
  std::int64_t qkv() const { return (a + 2 * g) * d; }  // QKV output width
};

Dims dims_of(const ModelSpec& model) {
  Dims x;
  x.h = model.hidden;
  x.a = model.heads;
  x.g = model.kv_heads_or_default();
  x.d = model.head_dim_or_default();
  x.f = model.ffn_or_default();
  if (model.moe()) {
    x.experts = model.experts;
    x.fe = model.moe_ffn_or_default();
    x.f = static_cast<std::int64_t>(model.shared_experts) * x.fe;
  }
  return x;
}

std::vector<LayerWeight> layer_weights(const ModelSpec& model, const Dims& x) {
  const bool swiglu = model.mlp == Mlp::kSwiglu;
  const std::int64_t fc1_out = swiglu ? 2 * x.f : x.f;
  std::vector<LayerWeight> w = {
      {.name = "qkv", .rows = x.h, .cols = x.qkv(), .sharding = Sharding::kColumn, .matrix = true},
      {.name = "proj", .rows = x.q(), .cols = x.h, .sharding = Sharding::kRow, .matrix = true},
  };
  const bool dense_mlp = x.f > 0;  // the dense MLP, or an MoE layer's shared experts as one TP-split MLP
  if (dense_mlp) {
    w.push_back({.name = "fc1", .rows = x.h, .cols = fc1_out, .sharding = Sharding::kColumn, .matrix = true});
    w.push_back({.name = "fc2", .rows = x.f, .cols = x.h, .sharding = Sharding::kRow, .matrix = true});
  }
  if (x.experts > 0) {
    // The router (replicated over TP, synchronised with the dense parameters) and the routed experts, whole on
    // their expert-parallel rank (expert tensor parallelism 1).
    w.push_back({.name = "router", .rows = x.h, .cols = x.experts, .matrix = true});
    const std::int64_t e_fc1 = swiglu ? 2 * x.fe : x.fe;
    w.push_back({.name = "expert.fc1", .rows = x.h, .cols = e_fc1, .matrix = true, .expert = true, .count = x.experts});
    w.push_back({.name = "expert.fc2", .rows = x.fe, .cols = x.h, .matrix = true, .expert = true, .count = x.experts});
  }
  if (model.bias != LinearBias::kNone)
    w.push_back({.name = "qkv.bias", .rows = 1, .cols = x.qkv(), .sharding = Sharding::kColumn});
  if (model.bias == LinearBias::kAll) {
    w.push_back({.name = "proj.bias", .rows = 1, .cols = x.h});
    if (dense_mlp) {
      w.push_back({.name = "fc1.bias", .rows = 1, .cols = fc1_out, .sharding = Sharding::kColumn});
      w.push_back({.name = "fc2.bias", .rows = 1, .cols = x.h});
    }
  }
  const bool layernorm = model.norm == Norm::kLayerNorm;
  if (model.qk_norm)
    for (const char* norm : {"q_norm", "k_norm"}) {  // one head_dim-wide norm shared by every query (key) head
      w.push_back({.name = norm, .rows = 1, .cols = x.d});
      if (layernorm) w.push_back({.name = norm, .rows = 1, .cols = x.d});
    }
  for (const char* norm : {"norm1", "norm2"}) {
    w.push_back({.name = norm, .rows = 1, .cols = x.h});
    if (layernorm) w.push_back({.name = norm, .rows = 1, .cols = x.h});  // the LayerNorm's bias
  }
  return w;
}

const LayerWeight& weight(const std::vector<LayerWeight>& w, const char* name) {
  for (const LayerWeight& x : w)
    if (std::string(x.name) == name) return x;
  throw InternalError(std::string("describe_layer: no weight named ") + name);
}

// Builds the op list. Every expression keeps the arithmetic order of the GPT closed forms it replaced, so a GPT
// layer's figures are the same doubles as before (sim/README.md, "One layer description").
class OpList {
 public:
  explicit OpList(std::vector<LayerOp>& out) : out_(out) {}

  void pass(const char* name, const char* op, double elements, double row, double bytes_per_element, bool backward,
            bool core) {
    out_.push_back({.name = name,
                    .op = op,
                    .backward = backward,
                    .attention_core = core,
                    .elements = elements,
                    .row = row,
                    .bytes_per_element = bytes_per_element});
  }
  void fused_attention(const char* name, const AttentionShape& a, bool backward) {
    out_.push_back({.name = name,
                    .op = backward ? "flash_attention_backward" : "flash_attention",
                    .backward = backward,
                    .attention_core = true,
                    .attention = a});
  }
  void gemm(const char* name, const GemmShape& g, bool backward, bool core) {
    out_.push_back({.name = name, .op = "gemm", .backward = backward, .attention_core = core, .gemm = g});
  }
  // A forward GEMM's input-gradient (m × k × n) and weight-gradient (k × n × m) GEMMs.
  void backward_gemms(const char* const names[3], const GemmShape& g, bool core) {
    gemm(names[1], {.m = g.m, .n = g.k, .k = g.n, .batch = g.batch}, true, core);
    gemm(names[2], {.m = g.k, .n = g.n, .k = g.m, .batch = g.batch}, true, core);
  }

 private:
  std::vector<LayerOp>& out_;
};

// The attention core of one layer: one fused kernel each way (flash), or the materialised scores GEMM, softmax,
// dropout, softmax·V GEMM and the context copy, and their backward passes.
struct AttentionCore {
  bool flash = false;
  bool dropout = false;
  AttentionShape fused;
  GemmShape scores, context;
  double scores_elements = 0.0;  // b·a/t·s², the softmax's and dropout's tensor
  double s = 0.0, e = 0.0;
  double context_elements = 0.0, context_row = 0.0;  // the context copy's b·s·q/t elements, q/t per row

  void forward(OpList& o) const {
    if (flash) {
      o.fused_attention("flash_attention", fused, false);
      return;
    }
    const char* const n_scores[3] = {"scores", "scores.dgrad", "scores.wgrad"};
    const char* const n_context[3] = {"context", "context.dgrad", "context.wgrad"};
    o.gemm(n_scores[0], scores, false, true);
    o.pass("softmax", "softmax", scores_elements, s, 2 * e, false, true);
    if (dropout) o.pass("attention_dropout", "dropout", scores_elements, s, 2 * e + 1, false, true);
    o.gemm(n_context[0], context, false, true);
    // [b, np, s, hn] -> [s, b, np·hn]
    o.pass("context_copy", "copy", context_elements, context_row, 2 * e, false, true);
  }
  void backward(OpList& o) const {
    if (flash) {
      o.fused_attention("flash_attention.backward", fused, true);
      return;
    }
    const char* const n_scores[3] = {"scores", "scores.dgrad", "scores.wgrad"};
    const char* const n_context[3] = {"context", "context.dgrad", "context.wgrad"};
    o.backward_gemms(n_context, context, true);
    if (dropout) o.pass("attention_dropout.backward", "dropout_backward", scores_elements, s, 2 * e + 1, true, true);
    o.pass("softmax.backward", "softmax_backward", scores_elements, s, 3 * e, true, true);
    o.backward_gemms(n_scores, scores, true);
  }
};

// An MoE layer's routed experts on one GPU (expert tensor parallelism 1): `tokens` of the GPU's own (÷ tp with
// sequence parallelism) go through the router and are permuted into expert order; after the dispatch all-to-all
// (the iteration's, not an op) each of the experts / ep local experts runs its fc1, activation and fc2 over the
// busiest expert's tokens (a grouped GEMM, timed as one batched GEMM), and the combine all-to-all brings the outputs
// back to be un-permuted and summed with their routing weights.
struct RoutedExperts {
  double tokens = 0.0;         // the GPU's tokens, b·s (÷ tp)
  double experts = 0.0;        // routed experts E
  double top_k = 0.0;          // experts per token
  double local = 0.0;          // experts on this GPU, E / ep
  double expert_tokens = 0.0;  // tokens of the busiest local expert: load · ep · tokens · k / E
  double h = 0.0, fe = 0.0, e = 0.0;
  double fc1_out = 0.0;  // 2·fe with SwiGLU
  bool swiglu = false;

  GemmShape router() const { return {.m = tokens, .n = experts, .k = h}; }
  GemmShape fc1() const { return {.m = expert_tokens, .n = fc1_out, .k = h, .batch = local}; }
  GemmShape fc2() const { return {.m = expert_tokens, .n = h, .k = fe, .batch = local}; }
  double routed_elements() const { return tokens * top_k * h; }  // the permuted copies of the tokens
  double act_elements() const { return local * expert_tokens * fe; }

  void forward(OpList& o) const {
    o.gemm("router", router(), false, false);
    o.pass("router_softmax", "softmax", tokens * experts, experts, 2 * e, false, false);
    o.pass("permute", "copy", routed_elements(), h, 2 * e, false, false);
    o.gemm("expert.fc1", fc1(), false, false);
    if (swiglu)
      o.pass("expert.swiglu", "swiglu", act_elements(), fe, 3 * e, false, false);
    else
      o.pass("expert.gelu", "bias_gelu", act_elements(), fe, 2 * e, false, false);
    o.gemm("expert.fc2", fc2(), false, false);
    o.pass("unpermute", "copy", routed_elements(), h, 2 * e, false, false);
  }
  void backward(OpList& o) const {
    const char* const n_fc2[3] = {"expert.fc2", "expert.fc2.dgrad", "expert.fc2.wgrad"};
    const char* const n_fc1[3] = {"expert.fc1", "expert.fc1.dgrad", "expert.fc1.wgrad"};
    const char* const n_router[3] = {"router", "router.dgrad", "router.wgrad"};
    o.pass("unpermute.backward", "copy", routed_elements(), h, 2 * e, true, false);
    o.backward_gemms(n_fc2, fc2(), false);
    if (swiglu)
      o.pass("expert.swiglu.backward", "swiglu_backward", act_elements(), fe, 5 * e, true, false);
    else
      o.pass("expert.gelu.backward", "gelu_backward", act_elements(), fe, 3 * e, true, false);
    o.backward_gemms(n_fc1, fc1(), false);
    o.pass("permute.backward", "copy", routed_elements(), h, 2 * e, true, false);
    o.pass("router_softmax.backward", "softmax_backward", tokens * experts, experts, 3 * e, true, false);
    o.backward_gemms(n_router, router(), false);
  }
};

RoutedExperts routed_experts(const ModelSpec& model, const ParallelSpec& parallel, const Dims& x) {
  const double e = bytes_per_element(model.dtype), t = parallel.tp;
  RoutedExperts r;
  r.tokens = static_cast<double>(model.micro_batch_size) * model.seq_len / t;
  r.experts = static_cast<double>(x.experts);
  r.top_k = model.top_k;
  r.local = r.experts / parallel.ep;
  r.expert_tokens = model.moe_load_factor * parallel.ep * r.tokens * r.top_k / r.experts;
  r.h = static_cast<double>(x.h);
  r.fe = static_cast<double>(x.fe);
  r.e = e;
  r.swiglu = model.mlp == Mlp::kSwiglu;
  r.fc1_out = r.swiglu ? 2.0 * r.fe : r.fe;
  return r;
}

// The dense MLP (an MoE layer's shared experts too): fc1, GeLU or SwiGLU, fc2, and their backward passes, with
// Transformer Engine's FP8 cast-transposes of the output gradients.
struct DenseMlp {
  GemmShape fc1, fc2;
  double mlp = 0.0, width = 0.0;  // the activation's output elements and its row (f / t)
  double e = 0.0, h = 0.0, bs = 0.0;
  bool swiglu = false, fp8 = false;

  void forward(OpList& o) const {
    const char* const n_fc1[3] = {"fc1", "fc1.dgrad", "fc1.wgrad"};
    const char* const n_fc2[3] = {"fc2", "fc2.dgrad", "fc2.wgrad"};
    o.gemm(n_fc1[0], fc1, false, false);
    if (swiglu)
      o.pass("swiglu", "swiglu", mlp, width, 3 * e, false, false);  // reads gate and up, writes their product
    else
      o.pass("bias_gelu", "bias_gelu", mlp, width, 2 * e, false, false);
    o.gemm(n_fc2[0], fc2, false, false);
  }
  // FP8: each linear layer's output gradient is cast to FP8 with its transpose (for the input- and the
  // weight-gradient GEMM) in one kernel: read 16-bit, write 1 + 1 bytes per element (Transformer Engine's
  // cast-transpose).
  void cast_transpose(OpList& o, const char* name, double columns) const {
    if (fp8) o.pass(name, "cast_transpose", bs * columns, columns, e + 2, true, false);
  }
  void backward(OpList& o) const {
    const char* const n_fc1[3] = {"fc1", "fc1.dgrad", "fc1.wgrad"};
    const char* const n_fc2[3] = {"fc2", "fc2.dgrad", "fc2.wgrad"};
    cast_transpose(o, "fc2.grad_cast", h);
    o.backward_gemms(n_fc2, fc2, false);
    if (swiglu)
      o.pass("swiglu.backward", "swiglu_backward", mlp, width, 5 * e, true, false);  // dy, gate, up → two grads
    else
      o.pass("gelu.backward", "gelu_backward", mlp, width, 3 * e, true, false);
    cast_transpose(o, "fc1.grad_cast", fc1.n);
    o.backward_gemms(n_fc1, fc1, false);
  }
};

// Bias gradients: column sums of the biased GEMM outputs' gradients (a column-parallel output split over TP, a
// row-parallel one over the sequence-parallel shard), one pass over all of them.
void bias_grads(OpList& o, const std::vector<LayerWeight>& w, double Er, double bs, double t, double h, double e) {
  double replicated_biases = 0.0, column_bias_width = 0.0;
  for (const LayerWeight& m : w)
    if (!m.matrix && std::string(m.name).find(".bias") != std::string::npos) {
      if (m.sharding == Sharding::kColumn)
        column_bias_width += static_cast<double>(m.cols);
      else
        replicated_biases += 1.0;
    }
  if (replicated_biases + column_bias_width > 0.0)
    o.pass("bias_grads", "bias_grads", replicated_biases * Er + bs * column_bias_width / t, h, e, true, false);
}

void describe_ops(const ModelSpec& model, const ParallelSpec& parallel, const std::vector<LayerWeight>& w,
                  const Dims& x, std::vector<LayerOp>& out) {
  const double e = bytes_per_element(model.dtype), t = parallel.tp;
  const double b = model.micro_batch_size, s = model.seq_len, h = model.hidden;
  const double E = b * s * h;
  const double A = b * model.heads / t * s * s;
  const double Er = parallel.sequence_parallel ? E / t : E;  // norm, dropout and residual work
  const double bs = b * s;
  const double q = static_cast<double>(x.q()), qkv = static_cast<double>(x.qkv()), f = static_cast<double>(x.f);
  const double mlp = bs * f / t;  // the activation's output elements
  const bool dropout = model.dropout, swiglu = model.mlp == Mlp::kSwiglu, rope = model.position == Position::kRope;
  const bool ln = model.norm == Norm::kLayerNorm;
  const char* norm = ln ? "layernorm" : "rmsnorm";
  const char* norm_backward = ln ? "layernorm_backward" : "rmsnorm_backward";
  const double heads = static_cast<double>(model.heads) / t * b;
  const double d = static_cast<double>(x.d);
  const auto linear = [&](const char* name) {
    const LayerWeight& m = weight(w, name);
    return GemmShape{.m = bs,
                     .n = static_cast<double>(m.shard_cols(parallel.tp)),
                     .k = static_cast<double>(m.shard_rows(parallel.tp))};
  };
  const AttentionCore core{
      .flash = model.attention == Attention::kFlash,
      .dropout = dropout,
      .fused = {.heads = heads, .seq = s, .head_dim = d, .group = static_cast<double>(x.a) / static_cast<double>(x.g)},
      .scores = {.m = s, .n = s, .k = d, .batch = heads},
      .context = {.m = s, .n = d, .k = s, .batch = heads},
      .scores_elements = A,
      .s = s,
      .e = e,
      .context_elements = bs * q / t,
      .context_row = q / t};
  const bool dense_mlp = x.f > 0;
  const GemmShape g_qkv = linear("qkv"), g_proj = linear("proj");
  const DenseMlp mlp_block{.fc1 = dense_mlp ? linear("fc1") : GemmShape{},
                           .fc2 = dense_mlp ? linear("fc2") : GemmShape{},
                           .mlp = mlp,
                           .width = f / t,
                           .e = e,
                           .h = h,
                           .bs = bs,
                           .swiglu = swiglu,
                           .fp8 = model.fp8};
  const char* const n_qkv[3] = {"qkv", "qkv.dgrad", "qkv.wgrad"};
  const char* const n_proj[3] = {"proj", "proj.dgrad", "proj.wgrad"};
  const double rope_elements = bs * static_cast<double>((x.a + x.g) * x.d) / t;  // queries and keys
  OpList o(out);
  // Forward, in execution order.
  o.pass(ln ? "layernorm1" : "rmsnorm1", norm, Er, h, 2 * e, false, false);
  o.gemm(n_qkv[0], g_qkv, false, false);
  if (model.qk_norm) o.pass("qk_norm", norm, rope_elements, d, 2 * e, false, false);
  if (rope) o.pass("rope", "rope", rope_elements, d, 2 * e, false, false);
  core.forward(o);
  // FP8 (Transformer Engine): the attention output is cast to FP8 for the projection (read 16-bit, write 1 byte); the
  // other linear inputs leave their norm or activation kernel in FP8 already.
  if (model.fp8) o.pass("proj_input.cast", "cast", bs * q / t, q / t, e + 1, false, false);
  o.gemm(n_proj[0], g_proj, false, false);
  if (dropout)
    o.pass("bias_dropout_add1", "bias_dropout_add", Er, h, 3 * e + 1, false, false);
  else
    o.pass("residual_add1", "add", Er, h, 3 * e, false, false);
  o.pass(ln ? "layernorm2" : "rmsnorm2", norm, Er, h, 2 * e, false, false);
  if (dense_mlp) mlp_block.forward(o);
  if (model.moe()) routed_experts(model, parallel, x).forward(o);
  if (dropout)
    o.pass("bias_dropout_add2", "bias_dropout_add", Er, h, 3 * e + 1, false, false);
  else
    o.pass("residual_add2", "add", Er, h, 3 * e, false, false);
  // Backward, in reverse.
  if (dropout) o.pass("bias_dropout_add2.backward", "bias_dropout_add_backward", Er, h, 2 * e + 1, true, false);
  o.pass("residual_sum2", "add", Er, h, 3 * e, true, false);
  if (model.moe()) routed_experts(model, parallel, x).backward(o);
  if (dense_mlp) mlp_block.backward(o);
  o.pass(ln ? "layernorm2.backward" : "rmsnorm2.backward", norm_backward, Er, h, 3 * e, true, false);
  if (dropout) o.pass("bias_dropout_add1.backward", "bias_dropout_add_backward", Er, h, 2 * e + 1, true, false);
  o.pass("residual_sum1", "add", Er, h, 3 * e, true, false);
  mlp_block.cast_transpose(o, "proj.grad_cast", h);
  o.backward_gemms(n_proj, g_proj, false);
  core.backward(o);
  if (rope) o.pass("rope.backward", "rope", rope_elements, d, 2 * e, true, false);
  if (model.qk_norm) o.pass("qk_norm.backward", norm_backward, rope_elements, d, 3 * e, true, false);
  o.pass("qkv_split.backward", "cat", bs * qkv / t, qkv / t, 2 * e, true, false);  // Q, K, V gradients joined
  mlp_block.cast_transpose(o, "qkv.grad_cast", qkv / t);
  o.backward_gemms(n_qkv, g_qkv, false);
  o.pass(ln ? "layernorm1.backward" : "rmsnorm1.backward", norm_backward, Er, h, 3 * e, true, false);
  bias_grads(o, w, Er, bs, t, h, e);
}

}  // namespace

LayerDescription describe_layer(const ModelSpec& model, const ParallelSpec& parallel) {
  if (parallel.tp < 1 || model.hidden < 1 || model.heads < 1)
    throw InternalError("describe_layer: the model and layout must have passed check_layout");
  const Dims x = dims_of(model);
  LayerDescription layer;
  layer.weights = layer_weights(model, x);
  for (const LayerWeight& w : layer.weights)  // a GPU holds experts / ep copies of each expert weight
    layer.tensors += w.expert ? static_cast<int>(w.count / parallel.ep) : 1;
  describe_ops(model, parallel, layer.weights, x, layer.ops);
  // Korthikanti et al. 2022 §4.1 per element of s·b·h (16-bit): norm inputs 2 + 2, QKV and fc1 inputs 2 + 2, the
  // two dropout masks 1 + 1 on every rank; Q, K, V, the projection's input and the MLP's (GeLU: its input and fc2's
  // input; SwiGLU: gate, up and fc2's input) split over TP; softmax output, dropout mask and dropout output per
  // score (2 + 1 + 2; the softmax output alone without dropout).
  // With FP8 the linear layers keep their inputs for the weight gradient as the FP8 copies their GEMMs read (1 byte
  // instead of 2: QKV's and fc1's on every rank, the projection's and fc2's split over TP).
  const std::int64_t kept = model.fp8 ? 1 : 2;
  layer.saved.replicated = (model.dropout ? 6.0 : 4.0) + 2.0 * static_cast<double>(kept);
  const auto mlp_saved = [&](std::int64_t f) {
    return model.mlp == Mlp::kSwiglu ? 4 * f + kept * f : 2 * f + kept * f;
  };
  const std::int64_t mlp_bytes = mlp_saved(x.f);
  const std::int64_t qk_norm_inputs = model.qk_norm ? 2 * (x.a + x.g) * x.d : 0;
  layer.saved.sharded = static_cast<double>(2 * x.q() + 4 * x.g * x.d + kept * x.q() + mlp_bytes + qk_norm_inputs) /
                        static_cast<double>(x.h);
  // Routed experts, per token of the GPU's (sequence-parallel) share: the permuted input each of its top-k experts
  // reads (for fc1's weight gradient) and that expert's MLP activations, at the busiest expert's load. The router's
  // input is the norm's output, counted above.
  if (model.moe())
    layer.saved.sharded += model.moe_load_factor * model.top_k * static_cast<double>(kept * x.h + mlp_saved(x.fe)) /
                           static_cast<double>(x.h);
  const bool flash = model.attention == Attention::kFlash;
  layer.saved.score_factor = flash ? 0.0 : model.dropout ? 5.0 : 2.0;
  layer.saved.head_stats = flash ? 2.0 : 0.0;
  const double b = model.micro_batch_size, s = model.seq_len, t = parallel.tp;
  layer.beside.qkv = 2.0 * b * s * static_cast<double>(weight(layer.weights, "qkv").elements()) / t;
  layer.beside.proj = 2.0 * b * s * static_cast<double>(weight(layer.weights, "proj").elements()) / t;
  if (x.f > 0) {
    layer.beside.fc1 = 2.0 * b * s * static_cast<double>(weight(layer.weights, "fc1").elements()) / t;
    layer.beside.fc2 = 2.0 * b * s * static_cast<double>(weight(layer.weights, "fc2").elements()) / t;
  }
  return layer;
}

std::int64_t layer_sharded_per_rank(const LayerDescription& layer, int tp) {
  std::int64_t sum = 0;
  for (const LayerWeight& w : layer.weights)
    if (!w.expert && w.sharding != Sharding::kReplicated) sum += w.elements();
  return sum / tp;
}

std::int64_t layer_replicated_params(const LayerDescription& layer) {
  std::int64_t sum = 0;
  for (const LayerWeight& w : layer.weights)
    if (!w.expert && w.sharding == Sharding::kReplicated) sum += w.elements();
  return sum;
}

std::int64_t layer_matrix_elements(const LayerDescription& layer) {
  std::int64_t sum = 0;
  for (const LayerWeight& w : layer.weights)
    if (w.matrix && !w.expert) sum += w.elements();
  return sum;
}

std::int64_t layer_expert_params(const LayerDescription& layer, int experts) {
  std::int64_t sum = 0;
  for (const LayerWeight& w : layer.weights)
    if (w.expert) sum += w.elements() * experts;
  return sum;
}

std::int64_t final_norm_params(const ModelSpec& model) {
  return model.norm == Norm::kLayerNorm ? 2 * static_cast<std::int64_t>(model.hidden) : model.hidden;
}

}  // namespace edgc::sim
