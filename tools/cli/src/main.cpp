// edgc: what-if engine for entropy-driven dynamic gradient compression. main() only dispatches subcommands and
// turns exceptions into exit codes (failure.hpp): 0 success, 2 bad usage or bad input, 1 a failure of the system
// or of edgc itself (then with a bug-report hint).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "edgc/core/error.hpp"
#include "failure.hpp"

namespace {

void print_usage(const std::vector<edgc::cli::Command>& commands) {
  std::cout << "usage: edgc <command> [options]   (edgc <command> --help for its options)\n\ncommands:\n";
  for (const auto& c : commands) {
    std::cout << "  " << c.name << std::string(c.name.size() < 18 ? 18 - c.name.size() : 1, ' ') << c.summary << "\n";
  }
  std::cout << "\nexit codes: 0 success, 2 bad usage or bad input, 1 internal failure\n";
}

int run(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const auto commands = edgc::cli::all_commands();
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(commands);
    return args.empty() ? 2 : 0;
  }
  // Longest match: "trace inspect" before a hypothetical "trace".
  const edgc::cli::Command* best = nullptr;
  std::size_t best_words = 0;
  for (const auto& c : commands) {
    std::vector<std::string> words;
    for (std::size_t pos = 0; pos <= c.name.size();) {
      const std::size_t sp = c.name.find(' ', pos);
      words.push_back(c.name.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos));
      if (sp == std::string::npos) break;
      pos = sp + 1;
    }
    if (words.size() <= args.size() && std::equal(words.begin(), words.end(), args.begin()) &&
        words.size() > best_words) {
      best = &c;
      best_words = words.size();
    }
  }
  if (best == nullptr) {
    std::string group_help;
    std::string group_names;
    for (const auto& c : commands) {
      if (c.name.rfind(args[0] + " ", 0) == 0) {
        group_help += "\n  edgc " + c.name + "  " + c.summary;
        group_names += (group_names.empty() ? "" : ", ") + c.name.substr(args[0].size() + 1);
      }
    }
    if (!group_help.empty()) {
      if (args.size() == 1 || args[1] == "--help" || args[1] == "-h") {
        std::cout << "usage:" << group_help << "\n";
        return args.size() == 1 ? 2 : 0;
      }
      throw edgc::UsageError("unknown subcommand 'edgc " + args[0] + " " + args[1] + "' (one of: " + group_names + ")");
    }
    throw edgc::UsageError("unknown command '" + args[0] + "' (see 'edgc --help')");
  }
  return best->run(std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(best_words), args.end()));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (...) {  // the one catch at the edge: typed errors, and whatever else slipped through
    std::string command_line = "edgc";
    for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
    return edgc::cli::report_failure(std::current_exception(), command_line, std::cerr);
  }
}
