// `edgc report DIR [--out FILE] [--svg-dir DIR2] [--x KEY] [--y KEY]`: one self-contained HTML page (inline CSS
// and SVG, no external resources) from whatever DIR holds — result.json of `edgc simulate`, sweep.json +
// results.jsonl of `edgc sweep`, plan.json of `edgc plan` — and the same charts as standalone SVG files.
#include <iostream>

#include "cli.hpp"
#include "edgc/report/report.hpp"

namespace edgc::cli {
namespace {

int run_report_command(const std::vector<std::string>& args) {
  std::string dir;
  std::string out;
  std::string svg_dir;
  report::ReportOptions options;
  po::options_description opts;
  opts.add_options()("dir", po::value(&dir)->required(),
                     "directory with result.json, sweep.json + results.jsonl "
                     "and/or plan.json")("out", po::value(&out), "HTML file to write (default: DIR/report.html)")(
      "svg-dir", po::value(&svg_dir), "directory for the charts as .svg files (default: DIR/report)")(
      "x", po::value(&options.x_axis),
      "sweep axis (key) across the heatmaps (default: the first axis with more "
      "than one value)")("y", po::value(&options.y_axis),
                         "sweep axis (key) up the heatmaps (default: the next such axis)");
  po::positional_options_description positional;
  positional.add("dir", 1);
  po::variables_map vm;
  if (!parse("report", "DIR [--out FILE] [--svg-dir DIR2] [--x KEY] [--y KEY]", opts, positional, args, vm)) return 0;

  options.dir = dir;
  const report::ReportFiles files = report::build_report(options);
  for (const std::string& w : files.warnings) std::cerr << "edgc: warning: " << w << "\n";
  const std::filesystem::path html = out.empty() ? options.dir / "report.html" : std::filesystem::path(out);
  report::write_report(files, html, svg_dir.empty() ? options.dir / "report" : std::filesystem::path(svg_dir));
  std::cout << html.string() << "\n";
  return 0;
}

}  // namespace

void add_report_command(std::vector<Command>& commands) {
  commands.push_back(
      {"report", "HTML report with SVG charts of a simulate result, sweep or plan directory", run_report_command});
}

}  // namespace edgc::cli
