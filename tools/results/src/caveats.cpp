#include "edgc/results/caveats.hpp"

#include "edgc/results/table.hpp"
#include "edgc/sim/kernel_model.hpp"

namespace edgc::results {

namespace {

std::string signed_pct(double e) { return (e > 0.0 ? "+" : "") + fmt_f(100.0 * e, 1) + " %"; }

// One band as a clause: "16 published Megatron-Core 2024 iteration times on H100 (…): errors from … to …, …".
std::string band_text(const sim::ValidatedBand& v) {
  std::string text = std::to_string(v.rows) + " published " + v.stack + " iteration times on " + v.gpu +
                     " (scenarios/validation/: " + v.suites + "): errors from " + signed_pct(v.lowest_error) + " to " +
                     signed_pct(v.highest_error) + ", mean " + signed_pct(v.mean_error) + " (mean |error| " +
                     fmt_f(100.0 * v.mean_abs_error, 1) + " %)";
  if (v.highest_error < 0.0)
    text += ", every one short: it under-predicts, read its iteration times as lower bounds";
  else if (v.lowest_error > 0.0)
    text += ", every one long: it over-predicts, read its iteration times as upper bounds";
  else
    text += v.mean_error < 0.0 ? ", under-predicting on average" : ", over-predicting on average";
  return text;
}

}  // namespace

std::string kernel_model_caveat(const std::string& gpu) {
  std::string text =
      "compute: the kernel-level model (measured GEMM, attention and HBM rates; compute.efficiency not set) was "
      "checked against ";
  for (const sim::ValidatedBand& v : sim::kKernelModelValidation)
    if (gpu.rfind(v.gpu, 0) == 0) return text + band_text(v);
  bool first = true;
  for (const sim::ValidatedBand& v : sim::kKernelModelValidation) {
    text += (first ? "" : "; and ") + band_text(v);
    first = false;
  }
  return text + "; no published run on " + gpu + " was checked";
}

}  // namespace edgc::results
