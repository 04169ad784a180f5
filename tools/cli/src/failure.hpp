#pragma once
// The one place where a failed command becomes an exit code and a message (main() of edgc and edgc-nccl).
#include <exception>
#include <ostream>
#include <string>

namespace edgc::cli {

/// Prints what `failure` was to `err` and returns the exit code:
///   * InputError and its children (the user's input is wrong): 2, one line "edgc: error: <where>: <field>: <why>";
///   * IoError, CudaError (the system refused): 1, one line "edgc: error: …" naming the path or call;
///   * std::bad_alloc: 1, "edgc: error: out of memory" with what to reduce;
///   * anything else — InternalError, a std::exception of a library, a foreign exception: 1,
///     "edgc: internal error: <what>" and a second line saying it is a bug and what a report should hold.
/// `command_line`: the command as typed, repeated in the bug-report hint.
int report_failure(const std::exception_ptr& failure, const std::string& command_line, std::ostream& err);

/// The second line of an internal error: that it is a bug, and what to put in a report.
std::string bug_report_hint(const std::string& command_line);

}  // namespace edgc::cli
