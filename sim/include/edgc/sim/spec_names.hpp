#pragma once
// The names of spec.hpp's enums as scenarios and result files spell them, one table each (spec_names.cpp): the
// scenario readers parse with the *_from_name functions, the writers print with the *_name ones.
#include <optional>
#include <string_view>

#include "edgc/sim/spec.hpp"

namespace edgc::sim {

/// "gpipe" | "1f1b" | "interleaved" (parallelism.schedule).
std::string_view schedule_name(PipelineSchedule s) noexcept;
/// The schedule named `name`; nullopt for any other name.
std::optional<PipelineSchedule> schedule_from_name(std::string_view name) noexcept;

/// "tp-dp-pp" | "tp-pp-dp" (parallelism.order).
std::string_view rank_order_name(RankOrder o) noexcept;
/// The order named `name`; nullopt for any other name.
std::optional<RankOrder> rank_order_from_name(std::string_view name) noexcept;

/// "ideal" | "calibrated" (network.profile).
std::string_view network_profile_name(NetworkProfileKind k) noexcept;
/// The profile named `name`; nullopt for any other name.
std::optional<NetworkProfileKind> network_profile_from_name(std::string_view name) noexcept;

/// "none" | "selective" | "full" (model.recompute).
std::string_view recompute_name(Recompute r) noexcept;
/// The recomputation named `name`; nullopt for any other name.
std::optional<Recompute> recompute_from_name(std::string_view name) noexcept;

/// "gelu" | "swiglu" (model.mlp), "layernorm" | "rmsnorm" (model.norm), "learned" | "rope" (model.position),
/// "all" | "none" | "qkv" (model.bias); the *_from_name functions return nullopt for any other name.
std::string_view mlp_name(Mlp m) noexcept;
std::optional<Mlp> mlp_from_name(std::string_view name) noexcept;
std::string_view norm_name(Norm n) noexcept;
std::optional<Norm> norm_from_name(std::string_view name) noexcept;
std::string_view position_name(Position p) noexcept;
std::optional<Position> position_from_name(std::string_view name) noexcept;
std::string_view bias_name(LinearBias b) noexcept;
/// "materialised" | "flash" (model.attention); nullopt for any other name.
std::string_view attention_name(Attention a) noexcept;
std::optional<Attention> attention_from_name(std::string_view name) noexcept;
std::optional<LinearBias> bias_from_name(std::string_view name) noexcept;

}  // namespace edgc::sim
