#include "edgc/report/document.hpp"

#include <cctype>
#include <string_view>

#include "edgc/report/svg.hpp"

namespace edgc::report {
namespace {

constexpr const char* kStyle = R"(
:root { color-scheme: light; }
body { font-family: 'DejaVu Sans', 'Helvetica Neue', Arial, sans-serif; margin: 0; background: #f4f6f8; color: #222;
       line-height: 1.45; font-size: 14px; }
header { background: #1f2d3d; color: #fff; padding: 16px 32px; }
header h1 { margin: 0; font-size: 22px; }
header nav { margin-top: 6px; font-size: 13px; }
header nav a { color: #cfe0f5; margin-right: 18px; }
main { max-width: 1260px; margin: 0 auto; padding: 4px 24px 40px; }
section { background: #fff; border: 1px solid #dde2e8; border-radius: 6px; padding: 14px 24px 18px; margin: 20px 0; }
h2 { margin: 0; font-size: 19px; }
.source { color: #666; font-size: 12px; margin: 2px 0 8px; font-family: 'DejaVu Sans Mono', monospace; }
.summary { margin: 4px 0 10px; }
.figures { display: flex; flex-wrap: wrap; gap: 14px; margin: 12px 0; }
figure { margin: 0; width: min-content; border: 1px solid #e6e9ee; border-radius: 4px; padding: 4px; }
figure svg { display: block; }
figcaption { font-size: 12px; color: #555; margin: 4px 4px 2px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 14px; }
caption { caption-side: top; text-align: left; font-weight: bold; padding: 4px 0; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e3e6ea; text-align: left; white-space: nowrap; }
th { background: #eef1f5; white-space: normal; vertical-align: bottom; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafbfc; }
.note { color: #444; background: #fff8e6; border-left: 3px solid #e0b341; padding: 6px 10px; margin: 10px 0;
        font-size: 13px; }
.list-caption { font-weight: bold; margin: 10px 0 2px; }
ul { margin: 4px 0 12px; }
)";

// Counts each chart's data marks into the page, where tools/check_report.py reads them back after the page
// ran in a real browser: a chart that drew nothing, or a script that failed, is caught there.
constexpr const char* kSelfCheck = R"(
(function () {
  var marks = {};
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    marks[svg.id] = svg.querySelectorAll('.mark').length;
  });
  document.body.setAttribute('data-chart-marks', JSON.stringify(marks));
  document.body.setAttribute('data-page-height', String(document.documentElement.scrollHeight));
})();
)";

// Whether a table cell reads as a number ("1.2k", "-3.5%", "28.25 ± 0.11", "–"), to right-align it. Labels that
// merely start with a digit ("64xH100 tp8 ...") are text.
bool numeric_cell(const std::string& s) {
  if (s == "\xE2\x80\x93") return true;
  const std::size_t first = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (first >= s.size() || std::isdigit(static_cast<unsigned char>(s[first])) == 0) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (std::isdigit(c) != 0 || std::string_view(".-+e%kMGT ").find(static_cast<char>(c)) != std::string_view::npos)
      continue;
    if (s.compare(i, 2, "\xC2\xB1") == 0 || s.compare(i, 2, "\xC3\x97") == 0) {  // ± and ×
      ++i;
      continue;
    }
    return false;
  }
  return true;
}

// Header text that may wrap after the dots of dotted keys ("compression.<wbr>window").
std::string header_html(const std::string& text) {
  std::string out;
  for (const char ch : xml_escape(text)) {
    out += ch;
    if (ch == '.') out += "<wbr>";
  }
  return out;
}

void render_block(std::string& out, const FigureGroup& g) {
  out += "<div class=\"figures\">\n";
  for (const Figure& f : g.figures) {
    out += "<figure>\n" + f.svg;
    if (!f.caption.empty()) out += "<figcaption>" + xml_escape(f.caption) + "</figcaption>\n";
    out += "</figure>\n";
  }
  out += "</div>\n";
}

void render_block(std::string& out, const TableBlock& t) {
  out += "<div class=\"table-wrap\"><table>\n";
  if (!t.caption.empty()) out += "<caption>" + xml_escape(t.caption) + "</caption>\n";
  out += "<thead><tr>";
  for (const std::string& h : t.header) out += "<th>" + header_html(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c)
      out += (c > 0 && numeric_cell(row[c]) ? "<td class=\"num\">" : "<td>") + xml_escape(row[c]) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

void render_block(std::string& out, const Note& n) { out += "<p class=\"note\">" + xml_escape(n.text) + "</p>\n"; }

void render_block(std::string& out, const ListBlock& l) {
  if (!l.caption.empty()) out += "<p class=\"list-caption\">" + xml_escape(l.caption) + "</p>\n";
  out += "<ul>\n";
  for (const std::string& item : l.items) out += "<li>" + xml_escape(item) + "</li>\n";
  out += "</ul>\n";
}

}  // namespace

std::string render_html(const std::string& title, const std::vector<Section>& sections) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      xml_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<header>\n<h1>" +
      xml_escape(title) + "</h1>\n<nav>";
  for (const Section& s : sections) out += "<a href=\"#" + xml_escape(s.id) + "\">" + xml_escape(s.title) + "</a>";
  out += "</nav>\n</header>\n<main>\n";
  for (const Section& s : sections) {
    out += "<section id=\"" + xml_escape(s.id) + "\">\n<h2>" + xml_escape(s.title) + "</h2>\n<p class=\"source\">" +
           xml_escape(s.source) + "</p>\n";
    if (!s.summary.empty()) out += "<p class=\"summary\">" + xml_escape(s.summary) + "</p>\n";
    for (const Block& b : s.blocks) std::visit([&](const auto& block) { render_block(out, block); }, b);
    out += "</section>\n";
  }
  out += "</main>\n<script>" + std::string(kSelfCheck) + "</script>\n</body>\n</html>\n";
  return out;
}

std::vector<const Figure*> all_figures(const std::vector<Section>& sections) {
  std::vector<const Figure*> out;
  for (const Section& s : sections)
    for (const Block& b : s.blocks)
      if (const auto* g = std::get_if<FigureGroup>(&b))
        for (const Figure& f : g->figures) out.push_back(&f);
  return out;
}

}  // namespace edgc::report
