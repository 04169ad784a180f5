#include "edgc/core/policy_registry.hpp"

#include <algorithm>
#include <array>

#include "edgc/core/controller.hpp"
#include "edgc/core/error.hpp"
#include "impl/policies.hpp"

namespace edgc::core {
namespace {

// clang-format off
constexpr std::array kPolicies = {
    //          name             factory                   dp     entropy pipeline shapes fixed  signal
    PolicyInfo{"none",          impl::make_none,          false, false,  false,   false, false, false},
    PolicyInfo{"static",        impl::make_static,        true,  false,  false,   false, true,  false},
    PolicyInfo{"selective",     impl::make_selective,     true,  false,  false,   false, true,  false},
    PolicyInfo{"loss",          impl::make_loss,          true,  false,  false,   false, false, false},
    PolicyInfo{"edgc",          impl::make_edgc,          true,  true,   false,   true,  false, false},
    PolicyInfo{"edgc-pp",       impl::make_edgc_pp,       true,  true,   true,    true,  false, false},
    PolicyInfo{"edgc-megatron", impl::make_edgc_megatron, true,  false,  false,   false, false, true},
};
// clang-format on

}  // namespace

std::span<const PolicyInfo> policy_registry() noexcept { return kPolicies; }

const PolicyInfo* find_policy(std::string_view name) noexcept {
  const auto it = std::find_if(kPolicies.begin(), kPolicies.end(), [&](const PolicyInfo& p) { return p.name == name; });
  return it == kPolicies.end() ? nullptr : &*it;
}

bool any_compresses_pipeline(const std::vector<std::string>& policies) noexcept {
  return std::any_of(policies.begin(), policies.end(), [](const std::string& p) {
    const PolicyInfo* policy = find_policy(p);
    return policy != nullptr && policy->compresses_pipeline;
  });
}

const PolicyInfo& policy_info(std::string_view name, const std::string& where, const std::string& field) {
  if (const PolicyInfo* p = find_policy(name)) return *p;
  throw ConfigError(where, field, "unknown policy '" + std::string(name) + "' (" + policy_list() + ")");
}

const PolicyInfo& baseline_policy() noexcept { return kPolicies.front(); }

bool is_baseline_policy(std::string_view name) noexcept { return name == baseline_policy().name; }

std::string policy_list() {
  std::string s;
  for (const PolicyInfo& p : kPolicies) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PolicyInfo& p : kPolicies) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

bool is_policy(std::string_view name) noexcept { return find_policy(name) != nullptr; }

bool reads_entropy(std::string_view policy) noexcept {
  const PolicyInfo* p = find_policy(policy);
  return p != nullptr && p->reads_entropy;
}

bool reads_entropy(std::string_view policy, const ControllerConfig& config) noexcept {
  const PolicyInfo* p = find_policy(policy);
  if (p != nullptr && p->reads_signal) return config.megatron_signal == MegatronSignal::kEntropy;
  return p != nullptr && p->reads_entropy;
}

}  // namespace edgc::core
