#pragma once
// The one error policy of edgc: library code throws these; only a tool's main() turns them into exit codes
// (InputError and its children → 2, everything else → 1). Messages name the file, the field and the value.
#include <stdexcept>
#include <string>

namespace edgc {

/// Root of every exception edgc throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Input the user gave us is wrong: a file, a field in it, or a command-line value. Exit code 2.
/// The message reads "<where>: <field>: <detail>" (parts left out when empty).
class InputError : public Error {
 public:
  InputError(const std::string& where, const std::string& field, const std::string& detail);
  const std::string& where() const noexcept { return where_; }
  const std::string& field() const noexcept { return field_; }

 private:
  std::string where_;
  std::string field_;
};

/// Bad command-line usage (unknown option, missing argument, out-of-range value).
class UsageError : public InputError {
 public:
  explicit UsageError(const std::string& detail) : InputError("", "", detail) {}
  UsageError(const std::string& option, const std::string& detail) : InputError("", option, detail) {}
};

/// A scenario, sweep spec or other configuration file is malformed.
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

/// A gradient trace (manifest or safetensors file) is malformed, truncated or of an unknown version.
class TraceFormatError : public InputError {
 public:
  using InputError::InputError;
};

/// The operating system refused a read or write that should have worked (disk full, permissions). Exit code 1.
class IoError : public Error {
 public:
  IoError(const std::string& path, const std::string& detail);
};

/// A CUDA, cuBLAS or NCCL call failed. Exit code 1.
class CudaError : public Error {
 public:
  using Error::Error;
};

/// An invariant of ours broke: a bug. Exit code 1.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace edgc
