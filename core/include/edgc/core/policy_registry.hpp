#pragma once
// The rank-control policies, one row each: the name compression.policy gives, the factory that builds it and what it
// does. Callers ask a row for a capability (does it read entropy? compress the pipeline?) instead of comparing
// names, so a new policy is one row in policy_registry.cpp plus its implementation and tests. Rows are listed
// explicitly there (no static self-registration), in the order messages name them.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgc::core {

struct ControllerConfig;
class Controller;

struct PolicyInfo {
  std::string_view name;  ///< compression.policy's value
  /// Builds the policy from a config make_controller has validated.
  std::unique_ptr<Controller> (*factory)(const ControllerConfig& config) = nullptr;
  /// Ever compresses the DP gradient sync. False only for the uncompressed baseline every speedup is measured
  /// against (none), which also ignores every compression setting.
  bool compresses_dp = false;
  /// Decides from gradient entropy (edgc, edgc-pp), and so pays for the GDS's entropy passes.
  bool reads_entropy = false;
  /// Also compresses the pipeline's backward messages (edgc-pp): compression.pp_rank and pp_rank_mode apply.
  bool compresses_pipeline = false;
  /// Needs ControllerConfig::stage_shapes, one (m, n) per stage: the CQM reasons about each stage's matrix.
  bool needs_stage_shapes = false;
  /// Once warm, one rank (static_rank, else r_max) for every compressed stage: r_min and step never decide it
  /// (static, selective).
  bool fixed_rank = false;
  /// Decides from compression.signal (edgc-megatron): reads entropy only when the signal is entropy.
  bool reads_signal = false;
};

/// Every policy, in the order messages list them: none, static, selective, loss, edgc, edgc-pp, edgc-megatron.
std::span<const PolicyInfo> policy_registry() noexcept;

/// The row named `name`, or nullptr.
const PolicyInfo* find_policy(std::string_view name) noexcept;

/// Whether any of the named policies (unknown names count as not) compresses the pipeline's backward messages.
bool any_compresses_pipeline(const std::vector<std::string>& policies) noexcept;

/// The row named `name`. Throws ConfigError(where, field, "unknown policy '<name>' (<policy_list()>)") otherwise.
const PolicyInfo& policy_info(std::string_view name, const std::string& where, const std::string& field);

/// The uncompressed baseline (none): the one policy that compresses nothing.
const PolicyInfo& baseline_policy() noexcept;

/// Whether `name` names the uncompressed baseline. Also for names read back from result files, which need not
/// name a known policy (false then).
bool is_baseline_policy(std::string_view name) noexcept;

/// The names, comma-separated in registry order ("none, static, ..."), for messages.
std::string policy_list();

/// The names, in registry order.
const std::vector<std::string>& policy_names();

/// Whether `name` is in the registry.
bool is_policy(std::string_view name) noexcept;

/// Whether the policy named `policy` reads gradient entropy (PolicyInfo::reads_entropy); false for unknown names.
bool reads_entropy(std::string_view policy) noexcept;
/// Whether the policy reads gradient entropy under `config`: as above, and a policy that reads compression.signal
/// (edgc-megatron) when that signal is entropy.
bool reads_entropy(std::string_view policy, const ControllerConfig& config) noexcept;

}  // namespace edgc::core
