#include "edgc/report/report.hpp"

#include <set>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"
#include "edgc/report/sections.hpp"

namespace edgc::report {

namespace fs = std::filesystem;

ReportFiles build_report(const ReportOptions& options) {
  const fs::path& dir = options.dir;
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw InputError(dir.string(), "", "no such directory");
  if (!fs::is_directory(dir, ec)) throw InputError(dir.string(), "", "not a directory");
  const bool has_result = fs::exists(dir / "result.json", ec);
  const bool has_sweep = fs::exists(dir / "sweep.json", ec);
  const bool has_plan = fs::exists(dir / "plan.json", ec);
  if (!has_sweep && fs::exists(dir / "results.jsonl", ec))
    throw InputError((dir / "sweep.json").string(), "", "missing: results.jsonl cannot be read without its sweep spec");
  if (!has_result && !has_sweep && !has_plan)
    throw InputError(dir.string(), "",
                     "nothing to report: expected result.json (edgc simulate), sweep.json with results.jsonl "
                     "(edgc sweep) or plan.json (edgc plan)");
  if (!has_sweep && (!options.x_axis.empty() || !options.y_axis.empty()))
    throw UsageError(options.x_axis.empty() ? "--y" : "--x",
                     "choose sweep axes, but " + dir.string() + " has no sweep.json");

  std::vector<Section> sections;
  std::vector<std::string> warnings;
  if (has_result)
    sections.push_back(simulate_section(read_simulate_result(dir / "result.json"), (dir / "result.json").string()));
  // A plan's directory also holds the sweep of its options: the plan, which answers the question, comes first.
  if (has_plan) sections.push_back(plan_section(read_plan(dir / "plan.json"), (dir / "plan.json").string()));
  if (has_sweep) {
    const Sweep sweep = read_sweep(dir);
    if (sweep.truncated_last_line)
      warnings.push_back((dir / "results.jsonl").string() +
                         ": the last line is incomplete (a sweep still running, or one killed mid-write) and was left "
                         "out of the report");
    sections.push_back(
        sweep_section(sweep, (dir / "sweep.json").string() + " + results.jsonl", options.x_axis, options.y_axis));
  }

  // A page title from the directory's own name ("runs/a/" and "runs/a" alike).
  const fs::path normal = dir.lexically_normal();
  std::string name = (normal.has_filename() ? normal : normal.parent_path()).filename().string();
  ReportFiles files;
  files.html = render_html("edgc report" + (name.empty() || name == "." ? "" : ": " + name), sections);
  std::set<std::string> names;
  for (const Figure* f : all_figures(sections)) {
    if (!names.insert(f->name).second) throw InternalError("report: two charts named '" + f->name + "'");
    files.svgs.emplace_back(f->name + ".svg", f->svg);
  }
  files.warnings = std::move(warnings);
  return files;
}

void write_report(const ReportFiles& files, const fs::path& html, const fs::path& svg_dir) {
  std::error_code ec;
  if (fs::exists(svg_dir, ec) && !fs::is_directory(svg_dir, ec))
    throw InputError(svg_dir.string(), "", "exists and is not a directory (--svg-dir)");
  if (fs::is_directory(html, ec)) throw InputError(html.string(), "", "is a directory (--out names the HTML file)");
  if (html.has_parent_path()) {
    fs::create_directories(html.parent_path(), ec);
    if (ec) throw InputError(html.string(), "", "cannot create its folder (--out): " + ec.message());
  }
  check_output_file(html, "--out");  // before the SVG folder is made: a page that cannot be written leaves nothing
  const bool svg_dir_existed = fs::exists(svg_dir, ec);
  fs::create_directories(svg_dir, ec);
  if (ec) throw InputError(svg_dir.string(), "", "cannot create the chart folder (--svg-dir): " + ec.message());
  try {
    for (const auto& [name, svg] : files.svgs) write_file_atomic(svg_dir / name, svg);
  } catch (...) {
    if (!svg_dir_existed) fs::remove_all(svg_dir, ec);
    throw;
  }
  write_file_atomic(html, files.html);
}

std::filesystem::path write_report_into(const std::filesystem::path& dir) {
  ReportOptions options;
  options.dir = dir;
  std::filesystem::path html = dir / "report.html";
  write_report(build_report(options), html, dir / "report");
  return html;
}

}  // namespace edgc::report
