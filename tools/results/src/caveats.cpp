#include "edgc/results/caveats.hpp"

#include "edgc/results/table.hpp"
#include "edgc/sim/kernel_model.hpp"

namespace edgc::results {

std::string kernel_model_caveat(const std::string& gpu) {
  const sim::ValidatedBand& v = sim::kKernelModelValidation;
  auto pct = [](double e) { return (e > 0.0 ? "+" : "") + fmt_f(100.0 * e, 1) + " %"; };
  std::string text =
      "compute: the kernel-level model (measured GEMM rate and HBM bandwidth; compute.efficiency not "
      "set) was checked against " +
      std::to_string(v.rows) + " published Megatron-LM iteration times (" + v.gpu +
      ", scenarios/validation/): errors from " + pct(v.lowest_error) + " to " + pct(v.highest_error);
  if (v.highest_error < 0.0) text += ", every one short: read its iteration times as lower bounds";
  if (gpu.rfind(v.gpu, 0) != 0) text += "; no published run on " + gpu + " was checked";
  return text;
}

}  // namespace edgc::results
