#include "edgc/scenario/megatron_args.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"

namespace edgc::scenario {
namespace {

constexpr const char* kField = "model.megatron_args";

// Arguments that take an integer and the key it sets.
const std::map<std::string, std::string>& integer_arguments() {
  static const std::map<std::string, std::string> m = {
      {"--num-layers", "model.layers"},
      {"--hidden-size", "model.hidden"},
      {"--ffn-hidden-size", "model.ffn_hidden"},
      {"--num-attention-heads", "model.heads"},
      {"--num-query-groups", "model.kv_heads"},
      {"--kv-channels", "model.head_dim"},
      {"--seq-length", "model.seq_len"},
      {"--micro-batch-size", "model.micro_batch_size"},
      {"--global-batch-size", "model.global_batch_size"},
      {"--vocab-size", "model.vocab"},
      {"--make-vocab-size-divisible-by", "model.vocab_divisor"},
      {"--tensor-model-parallel-size", "parallelism.tp"},
      {"--pipeline-model-parallel-size", "parallelism.pp"},
      {"--num-experts", "model.experts"},
      {"--moe-router-topk", "model.top_k"},
      {"--moe-ffn-hidden-size", "model.moe_ffn_hidden"},
      {"--expert-model-parallel-size", "parallelism.ep"},
      {"--expert-tensor-parallel-size", "parallelism.etp"},
  };
  return m;
}

// Switches and the key they set to a value.
const std::map<std::string, std::pair<std::string, nlohmann::json>>& switch_arguments() {
  static const std::map<std::string, std::pair<std::string, nlohmann::json>> m = {
      {"--swiglu", {"model.mlp", "swiglu"}},
      {"--untie-embeddings-and-output-weights", {"model.tie_embeddings", false}},
      {"--qk-layernorm", {"model.qk_norm", true}},
      {"--use-rotary-position-embeddings", {"model.position", "rope"}},
      {"--sequence-parallel", {"parallelism.sequence_parallel", true}},
      {"--use-distributed-optimizer", {"parallelism.distributed_optimizer", true}},
      {"--overlap-grad-reduce", {"parallelism.overlap_grad_reduce", true}},
      {"--overlap-param-gather", {"parallelism.overlap_param_gather", true}},
      {"--tp-comm-overlap", {"parallelism.tp_comm_overlap", true}},
      {"--use-flash-attn", {"model.attention", "flash"}},
      {"--no-async-tensor-model-parallel-allreduce", {"parallelism.async_tp_allreduce", false}},
      {"--no-gradient-accumulation-fusion", {"parallelism.grad_accumulation_fusion", false}},
      {"--bf16", {"model.dtype", "bf16"}},
      {"--fp16", {"model.dtype", "fp16"}},
      {"--overlap-moe-expert-parallel-comm", {"parallelism.moe_a2a_overlap", true}},
  };
  return m;
}

// Arguments with no cost in edgc's model, and how many values each takes: accepted and ignored.
const std::map<std::string, int>& ignored_arguments() {
  static const std::map<std::string, int> m = {
      {"--lr", 1},
      {"--min-lr", 1},
      {"--lr-decay-style", 1},
      {"--lr-decay-iters", 1},
      {"--lr-decay-samples", 1},
      {"--lr-warmup-iters", 1},
      {"--lr-warmup-samples", 1},
      {"--lr-warmup-fraction", 1},
      {"--weight-decay", 1},
      {"--clip-grad", 1},
      {"--adam-beta1", 1},
      {"--adam-beta2", 1},
      {"--adam-eps", 1},
      {"--init-method-std", 1},
      {"--train-iters", 1},
      {"--train-samples", 1},
      {"--eval-iters", 1},
      {"--eval-interval", 1},
      {"--log-interval", 1},
      {"--save", 1},
      {"--load", 1},
      {"--save-interval", 1},
      {"--data-path", 1},
      {"--split", 1},
      {"--tokenizer-type", 1},
      {"--tokenizer-model", 1},
      {"--vocab-file", 1},
      {"--merge-file", 1},
      {"--distributed-backend", 1},
      {"--seed", 1},
      {"--norm-epsilon", 1},
      {"--rotary-base", 1},
      {"--rotary-percent", 1},
      {"--max-position-embeddings", 1},
      {"--tensorboard-dir", 1},
      {"--transformer-impl", 1},
      {"--use-mcore-models", 0},
      {"--attention-softmax-in-fp32", 0},
      {"--accumulate-allreduce-grads-in-fp32", 0},
      {"--no-masked-softmax-fusion", 0},
      {"--no-bias-gelu-fusion", 0},
      {"--no-bias-dropout-fusion", 0},
      {"--use-rope-scaling", 0},
      {"--log-throughput", 0},
      {"--no-load-optim", 0},
      {"--no-load-rng", 0},
      // Mixture of experts: the router's loss terms and numerics, and fusions of what edgc already times as fused
      // (the experts as one grouped GEMM, the permutation as one pass).
      {"--moe-grouped-gemm", 0},
      {"--moe-permute-fusion", 0},
      {"--moe-router-pre-softmax", 0},
      {"--moe-router-enable-expert-bias", 0},
      {"--moe-router-load-balancing-type", 1},
      {"--moe-aux-loss-coeff", 1},
      {"--moe-z-loss-coeff", 1},
      {"--moe-router-dtype", 1},
      {"--moe-router-score-function", 1},
      {"--moe-router-topk-scaling-factor", 1},
      {"--moe-router-bias-update-rate", 1},
      {"--moe-token-drop-policy", 1},
  };
  return m;
}

// Arguments that change the cost in ways not modelled yet: refused with the reason.
const std::map<std::string, std::string>& refused_arguments() {
  static const std::map<std::string, std::string> m = {
      {"--context-parallel-size", "context parallelism is not modelled"},
      {"--moe-shared-expert-overlap", "overlapping the shared experts with the token all-to-alls is not modelled"},
      {"--delay-wgrad-compute", "delaying the weight-gradient GEMMs is not modelled"},
      {"--apply-residual-connection-post-layernorm", "post-LayerNorm residuals are not modelled"},
  };
  return m;
}

[[noreturn]] void refuse(const std::string& where, const std::string& detail) {
  throw ConfigError(where, kField, detail);
}

class Reader {
 public:
  Reader(const std::vector<std::string>& args, std::string where) : args_(args), where_(std::move(where)) {}

  std::vector<KeySetting> read() {
    for (i_ = 0; i_ < args_.size(); ++i_) one(args_[i_]);
    finish();
    return out_;
  }

 private:
  std::string value(const std::string& arg) {
    if (i_ + 1 >= args_.size() || args_[i_ + 1].rfind("--", 0) == 0) refuse(where_, arg + " needs a value");
    return args_[++i_];
  }
  std::int64_t integer(const std::string& arg) {
    const std::string v = value(arg);
    std::string_view digits = v;
    if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-') digits.remove_prefix(1);  // as Python's int()
    try {  // 2^30 bounds every width and count of a real model, and keeps their products in int64
      return parse_integer<std::int64_t>(digits, 1, std::int64_t{1} << 30);
    } catch (const IntegerError&) {
      refuse(where_, arg + " " + v + ": expected a positive integer");
    }
  }
  double number(const std::string& arg) {
    const std::string v = value(arg);
    std::size_t used = 0;
    double x = -1.0;
    try {
      x = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || !(x >= 0.0 && x <= 1.0)) refuse(where_, arg + " " + v + ": expected a number in [0, 1]");
    return x;
  }
  void set(const std::string& key, nlohmann::json v) { out_.push_back({key, std::move(v)}); }

  void one(const std::string& arg) {
    if (arg.rfind("--", 0) != 0) refuse(where_, "'" + arg + "' is not an argument (expected --name)");
    if (!seen_.insert(arg).second) refuse(where_, arg + " is given twice");
    if (const auto it = integer_arguments().find(arg); it != integer_arguments().end()) {
      set(it->second, integer(arg));
    } else if (const auto s = switch_arguments().find(arg); s != switch_arguments().end()) {
      set(s->second.first, s->second.second);
    } else if (const auto ig = ignored_arguments().find(arg); ig != ignored_arguments().end()) {
      for (int k = 0; k < ig->second; ++k) (void)value(arg);
    } else if (const auto r = refused_arguments().find(arg); r != refused_arguments().end()) {
      refuse(where_, arg + ": " + r->second);
    } else {
      special(arg);
    }
  }

  void special(const std::string& arg) {
    if (arg == "--group-query-attention") {
      gqa_ = true;
    } else if (arg == "--disable-bias-linear") {
      no_bias_ = true;
    } else if (arg == "--add-qkv-bias") {
      qkv_bias_ = true;
    } else if (arg == "--normalization") {
      const std::string v = value(arg);
      if (v != "LayerNorm" && v != "RMSNorm") refuse(where_, arg + " " + v + ": expected LayerNorm or RMSNorm");
      set("model.norm", v == "RMSNorm" ? "rmsnorm" : "layernorm");
    } else if (arg == "--position-embedding-type") {
      const std::string v = value(arg);
      if (v != "learned_absolute" && v != "rope") refuse(where_, arg + " " + v + ": expected learned_absolute or rope");
      set("model.position", v == "rope" ? "rope" : "learned");
    } else if (arg == "--attention-dropout" || arg == "--hidden-dropout") {
      (arg == "--attention-dropout" ? attention_dropout_ : hidden_dropout_) = number(arg);
    } else if (arg == "--recompute-granularity") {
      const std::string v = value(arg);
      if (v != "full" && v != "selective") refuse(where_, arg + " " + v + ": expected full or selective");
      set("model.recompute", v);
    } else if (arg == "--fp8-format") {
      const std::string v = value(arg);
      if (v != "e4m3" && v != "hybrid") refuse(where_, arg + " " + v + ": expected e4m3 or hybrid");
      set("model.precision", "fp8");  // both run the GEMMs at the FP8 rate (hybrid: e5m2 gradients)
    } else if (arg == "--attention-backend") {
      const std::string v = value(arg);
      if (v != "flash" && v != "fused" && v != "auto" && v != "unfused" && v != "local")
        refuse(where_, arg + " " + v + ": expected flash, fused, unfused, local or auto");
      set("model.attention", v == "unfused" || v == "local" ? "materialised" : "flash");
    } else if (arg == "--recompute-method") {
      recompute_method_ = value(arg);
    } else if (arg == "--recompute-num-layers") {
      recompute_layers_ = integer(arg);
    } else if (arg == "--num-layers-per-virtual-pipeline-stage") {
      layers_per_virtual_ = integer(arg);
    } else if (arg == "--moe-shared-expert-intermediate-size") {
      shared_width_ = integer(arg);
    } else if (arg == "--moe-token-dispatcher-type") {
      const std::string v = value(arg);
      if (v != "alltoall") refuse(where_, arg + " " + v + ": only the all-to-all dispatcher (alltoall) is modelled");
    } else if (arg == "--moe-expert-capacity-factor") {
      const std::string v = value(arg);
      std::size_t used = 0;
      double x = 0.0;
      try {
        x = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || !(x >= 1.0 && x <= 1e6)) refuse(where_, arg + " " + v + ": expected a factor ≥ 1");
      set("model.moe_capacity_factor", x);
    } else if (arg == "--moe-layer-freq") {
      set("model.moe_layer_freq", moe_layer_freq(arg, value(arg)));
    } else {
      refuse(where_, "unknown argument " + arg + " (scenarios/README.md lists the arguments edgc reads and ignores)");
    }
  }

  std::int64_t given(const char* key) const {
    for (const KeySetting& s : out_)
      if (s.key == key) return s.value.get<std::int64_t>();
    return 0;
  }

  void finish() {
    if (given("model.kv_heads") > 0 && !gqa_) refuse(where_, "--num-query-groups needs --group-query-attention");
    if (gqa_ && given("model.kv_heads") == 0) refuse(where_, "--group-query-attention needs --num-query-groups");
    if (qkv_bias_ && !no_bias_) refuse(where_, "--add-qkv-bias needs --disable-bias-linear (QKV-only biases)");
    if (no_bias_) set("model.bias", qkv_bias_ ? "qkv" : "none");
    // Megatron's defaults are 0.1 each; dropout is on unless both are zero.
    set("model.dropout", attention_dropout_ > 0.0 || hidden_dropout_ > 0.0);
    // Full recomputation as edgc models it checkpoints every layer: Megatron's uniform method over 1 layer.
    if (!recompute_method_.empty() && (recompute_method_ != "uniform" || recompute_layers_ != 1))
      refuse(where_, "--recompute-method " + recompute_method_ + " --recompute-num-layers " +
                         std::to_string(recompute_layers_) +
                         ": only full recomputation of every layer (uniform, 1) is modelled");
    if (shared_width_ > 0) {  // edgc counts shared experts in experts' widths
      const std::int64_t width = given("model.moe_ffn_hidden");
      if (width == 0 || shared_width_ % width != 0)
        refuse(where_, "--moe-shared-expert-intermediate-size " + std::to_string(shared_width_) +
                           " needs --moe-ffn-hidden-size and a whole number of experts' widths");
      set("model.shared_experts", shared_width_ / width);
    }
    if (layers_per_virtual_ > 0) {
      const std::int64_t layers = given("model.layers"), pp = given("parallelism.pp");
      if (layers == 0 || pp == 0 || layers % (pp * layers_per_virtual_) != 0)
        refuse(where_,
               "--num-layers-per-virtual-pipeline-stage needs --num-layers and "
               "--pipeline-model-parallel-size with layers a multiple of pp times it");
      set("parallelism.schedule", "interleaved");
      set("parallelism.virtual_stages", layers / (pp * layers_per_virtual_));
    }
  }

  const std::vector<std::string>& args_;
  std::string where_;
  std::size_t i_ = 0;
  std::vector<KeySetting> out_;
  std::set<std::string> seen_;
  bool gqa_ = false, no_bias_ = false, qkv_bias_ = false;
  double attention_dropout_ = 0.1, hidden_dropout_ = 0.1;
  std::string recompute_method_;
  std::int64_t recompute_layers_ = 0, layers_per_virtual_ = 0, shared_width_ = 0;

  // --moe-layer-freq: an integer, or Megatron-Core's Python list expression of 0/1 ("[1]*3+[0]", "([1,0])*24",
  // quoted or not, written without spaces): lists, parentheses, + (concatenation) and * (repetition by an integer).
  nlohmann::json moe_layer_freq(const std::string& arg, std::string text) {
    while (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front())
      text = text.substr(1, text.size() - 2);
    if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos)
      return count_in(arg, text, text, 1, 1 << 16, "the frequency");
    std::size_t at = 0;
    std::vector<int> pattern = pattern_sum(arg, text, at);
    if (at != text.size()) refuse(where_, arg + " " + text + ": cannot read it as a list expression");
    return pattern;
  }
  // A decimal count in `text` (the whole --moe-layer-freq value, for the message) through the checked reader.
  std::int64_t count_in(const std::string& arg, const std::string& text, std::string_view digits, std::int64_t min,
                        std::int64_t max, const char* what) {
    try {
      return parse_integer<std::int64_t>(digits, min, max);
    } catch (const IntegerError& e) {
      refuse(where_, arg + " " + text + ": " + what + " " + e.what());
    }
  }
  std::vector<int> pattern_sum(const std::string& arg, const std::string& text, std::size_t& at) {
    std::vector<int> out = pattern_product(arg, text, at);
    while (at < text.size() && text[at] == '+') {
      const std::vector<int> more = pattern_product(arg, text, ++at);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
  std::vector<int> pattern_product(const std::string& arg, const std::string& text, std::size_t& at) {
    std::vector<int> list = pattern_atom(arg, text, at);
    while (at < text.size() && text[at] == '*') {
      const std::size_t end = std::min(text.find_first_not_of("0123456789", ++at), text.size());
      const std::int64_t limit =
          (std::int64_t{1} << 16) / static_cast<std::int64_t>(std::max<std::size_t>(list.size(), 1));
      const std::int64_t n = count_in(arg, text, std::string_view(text).substr(at, end - at), 0, limit, "a repetition");
      at = end;
      std::vector<int> repeated;
      for (std::int64_t k = 0; k < n; ++k) repeated.insert(repeated.end(), list.begin(), list.end());
      list = std::move(repeated);
    }
    return list;
  }
  std::vector<int> pattern_atom(const std::string& arg, const std::string& text, std::size_t& at) {
    if (at < text.size() && text[at] == '(') {
      std::vector<int> inner = pattern_sum(arg, text, ++at);
      if (at >= text.size() || text[at] != ')') refuse(where_, arg + " " + text + ": unbalanced parentheses");
      ++at;
      return inner;
    }
    if (at >= text.size() || text[at] != '[') refuse(where_, arg + " " + text + ": expected a list such as [1]*4");
    std::vector<int> list;
    for (++at; at < text.size() && text[at] != ']'; ++at) {  // 0 or 1, then a comma or the closing bracket
      if (text[at] != '0' && text[at] != '1') refuse(where_, arg + " " + text + ": list entries must be 0 or 1");
      list.push_back(text[at] - '0');
      if (at + 1 < text.size() && text[at + 1] == ',')
        ++at;
      else if (at + 1 < text.size() && text[at + 1] != ']')
        refuse(where_, arg + " " + text + ": list entries must be 0 or 1, separated by commas");
    }
    if (at >= text.size()) refuse(where_, arg + " " + text + ": unclosed list");
    ++at;
    return list;
  }
};

}  // namespace

std::vector<std::string> split_arguments(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

std::vector<KeySetting> read_megatron_args(const std::vector<std::string>& args, const std::string& where) {
  return Reader(args, where).read();
}

}  // namespace edgc::scenario
