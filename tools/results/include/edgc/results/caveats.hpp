#pragma once
// Sentences that tell a reader how far a figure can be trusted, shared by the commands that print them.
#include <string>

namespace edgc::results {

/// The kernel-level compute model's error bar (sim::kKernelModelValidation: its errors on the published runs of
/// scenarios/validation/) as one sentence, for predictions on a GPU named `gpu`: adds that no published run was
/// checked when `gpu` is not the one the validation rows ran on.
std::string kernel_model_caveat(const std::string& gpu);

}  // namespace edgc::results
