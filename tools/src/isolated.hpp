#pragma once
// Runs work in forked child processes. SimGrid's engine cannot be reset (one simulation per process), so
// `simulate` gives every distinct simulation its own child; the child's result (a string) comes back through
// a private temporary file, read after the child exited.
#include <functional>
#include <string>
#include <vector>

namespace edgc::cli {

/// Runs jobs[i]() each in its own forked child, at most `parallel` (≥ 1) at once, and returns their results in
/// job order. A ConfigError/TraceFormatError/UsageError (any InputError) thrown in a child is rethrown here as
/// a ConfigError with the same where, field and message; any other failure (exception, crash, signal) as
/// InternalError naming the job. The first failing job in job order wins; the others still run to completion.
std::vector<std::string> run_isolated(const std::vector<std::function<std::string()>>& jobs, int parallel);

}  // namespace edgc::cli
