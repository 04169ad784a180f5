#pragma once
// `edgc report`: finds what a directory holds (simulate result, sweep, plan), builds one self-contained HTML page
// with a section per input, and the same charts as standalone SVG files.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace edgc::report {

struct ReportOptions {
  std::filesystem::path dir;  ///< holds result.json, sweep.json (+ results.jsonl) and/or plan.json
  std::string x_axis;         ///< sweep heatmap x axis; empty: the first axis with more than one value
  std::string y_axis;         ///< sweep heatmap y axis; empty: the next such axis
};

struct ReportFiles {
  std::string html;                                       ///< the page
  std::vector<std::pair<std::string, std::string>> svgs;  ///< file name ("plan-time-cost.svg"), document
  /// What the page says of its inputs that the user should also hear on the console (stderr), one line each
  /// naming the file: an incomplete last line of results.jsonl left out.
  std::vector<std::string> warnings;
};

/// Reads every input present in `options.dir` and renders the page and charts in memory. Throws InputError
/// (naming the directory and the expected files) when the directory is missing or holds none of the inputs,
/// ConfigError naming file, line and field for malformed input, UsageError for an unknown --x/--y axis.
ReportFiles build_report(const ReportOptions& options);

/// Writes the SVG files into `svg_dir` (created when missing), then the page to `html`, each atomically; the page
/// comes last, so a failed run never leaves a new page behind. Throws InputError when `svg_dir` is a file,
/// IoError when writing fails.
void write_report(const ReportFiles& files, const std::filesystem::path& html, const std::filesystem::path& svg_dir);

/// build_report() on `dir`, written as dir/report.html with its SVG files in dir/report/ (what `--report` of
/// simulate, sweep and plan does). Returns the page's path.
std::filesystem::path write_report_into(const std::filesystem::path& dir);

}  // namespace edgc::report
