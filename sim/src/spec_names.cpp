#include "edgc/sim/spec_names.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace edgc::sim {
namespace {

template <typename Enum, std::size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

constexpr NameTable<PipelineSchedule, 3> kSchedules = {{{PipelineSchedule::kGpipe, "gpipe"},
                                                        {PipelineSchedule::kOneFOneB, "1f1b"},
                                                        {PipelineSchedule::kInterleaved, "interleaved"}}};
constexpr NameTable<RankOrder, 2> kOrders = {{{RankOrder::kTpDpPp, "tp-dp-pp"}, {RankOrder::kTpPpDp, "tp-pp-dp"}}};
constexpr NameTable<NetworkProfileKind, 2> kNetworkProfiles = {
    {{NetworkProfileKind::kIdeal, "ideal"}, {NetworkProfileKind::kCalibrated, "calibrated"}}};
constexpr NameTable<Recompute, 3> kRecomputes = {
    {{Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"}}};
constexpr NameTable<Mlp, 2> kMlps = {{{Mlp::kGelu, "gelu"}, {Mlp::kSwiglu, "swiglu"}}};
constexpr NameTable<Norm, 2> kNorms = {{{Norm::kLayerNorm, "layernorm"}, {Norm::kRmsNorm, "rmsnorm"}}};
constexpr NameTable<Attention, 2> kAttentions = {
    {{Attention::kMaterialised, "materialised"}, {Attention::kFlash, "flash"}}};
constexpr NameTable<Position, 2> kPositions = {{{Position::kLearned, "learned"}, {Position::kRope, "rope"}}};
constexpr NameTable<LinearBias, 3> kBiases = {
    {{LinearBias::kAll, "all"}, {LinearBias::kNone, "none"}, {LinearBias::kQkv, "qkv"}}};

template <typename Enum, std::size_t N>
std::string_view name_of(const NameTable<Enum, N>& table, Enum value) noexcept {
  const auto it = std::find_if(table.begin(), table.end(), [&](const auto& row) { return row.first == value; });
  return it == table.end() ? std::string_view("?") : it->second;
}

template <typename Enum, std::size_t N>
std::optional<Enum> value_of(const NameTable<Enum, N>& table, std::string_view name) noexcept {
  const auto it = std::find_if(table.begin(), table.end(), [&](const auto& row) { return row.second == name; });
  return it == table.end() ? std::nullopt : std::optional<Enum>(it->first);
}

}  // namespace

std::string_view schedule_name(PipelineSchedule s) noexcept { return name_of(kSchedules, s); }
std::optional<PipelineSchedule> schedule_from_name(std::string_view name) noexcept {
  return value_of(kSchedules, name);
}

std::string_view rank_order_name(RankOrder o) noexcept { return name_of(kOrders, o); }
std::optional<RankOrder> rank_order_from_name(std::string_view name) noexcept { return value_of(kOrders, name); }

std::string_view network_profile_name(NetworkProfileKind k) noexcept { return name_of(kNetworkProfiles, k); }
std::optional<NetworkProfileKind> network_profile_from_name(std::string_view name) noexcept {
  return value_of(kNetworkProfiles, name);
}

std::string_view recompute_name(Recompute r) noexcept { return name_of(kRecomputes, r); }
std::optional<Recompute> recompute_from_name(std::string_view name) noexcept { return value_of(kRecomputes, name); }

std::string_view mlp_name(Mlp m) noexcept { return name_of(kMlps, m); }
std::optional<Mlp> mlp_from_name(std::string_view name) noexcept { return value_of(kMlps, name); }
std::string_view norm_name(Norm n) noexcept { return name_of(kNorms, n); }
std::optional<Norm> norm_from_name(std::string_view name) noexcept { return value_of(kNorms, name); }
std::string_view position_name(Position p) noexcept { return name_of(kPositions, p); }
std::optional<Position> position_from_name(std::string_view name) noexcept { return value_of(kPositions, name); }
std::string_view attention_name(Attention a) noexcept { return name_of(kAttentions, a); }
std::optional<Attention> attention_from_name(std::string_view name) noexcept { return value_of(kAttentions, name); }
std::string_view bias_name(LinearBias b) noexcept { return name_of(kBiases, b); }
std::optional<LinearBias> bias_from_name(std::string_view name) noexcept { return value_of(kBiases, name); }

}  // namespace edgc::sim
