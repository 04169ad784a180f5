#pragma once
// The report as a document: sections of figures, tables, notes and lists, rendered to one self-contained HTML
// page (inline CSS and SVG, one small inline script that counts each chart's data marks into
// <body data-chart-marks="{...}"> for tools/check_report.py; no external resources).
#include <string>
#include <variant>
#include <vector>

namespace edgc::report {

/// One chart: `name` is its file stem in the SVG directory and its element id in the page.
struct Figure {
  std::string name;
  std::string svg;      ///< a complete SVG document (charts.hpp)
  std::string caption;  ///< plain text
};

/// Figures side by side (wrapping), e.g. small multiples.
struct FigureGroup {
  std::vector<Figure> figures;
};

struct TableBlock {
  std::string caption;  ///< plain text, above the table
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  ///< plain text cells; numeric-looking cells are right-aligned
};

/// A remark in running text (a skipped chart, failed sweep points, assumptions).
struct Note {
  std::string text;
};

struct ListBlock {
  std::string caption;
  std::vector<std::string> items;
};

using Block = std::variant<FigureGroup, TableBlock, Note, ListBlock>;

struct Section {
  std::string id;       ///< anchor, e.g. "simulate"
  std::string title;    ///< e.g. "Simulated training run"
  std::string source;   ///< the input file(s) it was drawn from
  std::string summary;  ///< one line under the title; may be empty
  std::vector<Block> blocks;
};

/// The whole page. `title` and all texts are escaped here.
std::string render_html(const std::string& title, const std::vector<Section>& sections);

/// Every figure of the sections, in page order.
std::vector<const Figure*> all_figures(const std::vector<Section>& sections);

}  // namespace edgc::report
