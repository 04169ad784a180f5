#pragma once
// Sentences that tell a reader how far a figure can be trusted, shared by the commands that print them.
#include <string>

namespace edgc::results {

/// The kernel-level compute model's error bar (sim::kKernelModelValidation: its signed errors on the published runs
/// of scenarios/validation/, per GPU and stack) as one sentence, for predictions on a GPU named `gpu`: the band of
/// that GPU, saying which way the model errs; for a GPU no published run was checked on, every band and that fact.
std::string kernel_model_caveat(const std::string& gpu);

}  // namespace edgc::results
