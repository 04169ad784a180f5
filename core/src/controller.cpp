#include "edgc/core/controller.hpp"

#include <string>

#include "edgc/core/error.hpp"
#include "impl/policies.hpp"

namespace edgc::core {

std::unique_ptr<Controller> make_controller(const ControllerConfig& c, const char* where) {
  if (c.stages < 1) throw ConfigError(where, "stages", "must be >= 1");
  validate(c.warmup, where);
  validate(c.cqm, where);
  validate(c.dac, where);
  if (c.static_rank < 0 || c.static_rank % c.cqm.quantum != 0)
    throw ConfigError(where, "compression.static_rank", "must be 0 (= r_max) or a positive multiple of the quantum");
  if (c.selective_stages < 0 || c.selective_stages > c.stages)
    throw ConfigError(where, "compression.selective_stages",
                      "must be between 0 and the number of stages (" + std::to_string(c.stages) + ")");
  if (c.policy == "none") return impl::make_none(c);
  if (c.policy == "static") return impl::make_static(c);
  if (c.policy == "selective") return impl::make_selective(c);
  if (c.policy == "loss") return impl::make_loss(c);
  if (c.policy == "edgc") {
    if (c.stage_shapes.size() != static_cast<std::size_t>(c.stages))
      throw ConfigError(where, "stage_shapes", "one (m, n) per stage is needed by the edgc policy");
    for (const auto& [m, n] : c.stage_shapes)
      if (m < 1 || n < 1) throw ConfigError(where, "stage_shapes", "shapes must be positive");
    return impl::make_edgc(c);
  }
  throw ConfigError(where, "compression.policy",
                    "unknown policy '" + c.policy + "' (none, static, selective, loss, edgc)");
}

}  // namespace edgc::core
