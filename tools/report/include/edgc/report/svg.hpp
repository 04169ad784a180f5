#pragma once
// Building blocks of the report's SVG charts: XML escaping, compact number formatting, "nice" axis ticks on a
// 1-2-5 grid, colour scales and a small element writer. No layout decisions live here (see charts.hpp).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace edgc::report {

/// Escapes text for XML and HTML character data and attribute values (& < > " '). Control characters that
/// XML 1.0 forbids (below U+0020 except tab, newline, carriage return) become U+FFFD, so labels read from input
/// files can never break the document.
std::string xml_escape(std::string_view text);

/// Compact human formatting with about `sig` significant digits and trailing zeros trimmed: 0.0577 → "0.0577",
/// 1.5 → "1.5", 120000 → "120k", 3.4e6 → "3.4M"; magnitudes below 1e-3 use e-notation; NaN → "–".
std::string fmt_compact(double x, int sig = 3);

/// A fraction as a percentage, compactly: 0.5282 → "52.8%".
std::string fmt_percent(double fraction);

/// Axis ticks: `values` run from `lo` to `hi` in steps of `step`, which is 1, 2 or 5 times a power of ten.
struct Ticks {
  double lo = 0.0;
  double hi = 1.0;
  double step = 0.2;
  std::vector<double> values;
  bool log = false;  ///< ticks of a logarithmic axis (log_ticks): `step` is unused

  /// A tick value with as many decimals as the step needs, and a k/M/G suffix when the axis reaches 10^4; on a
  /// log axis, compactly (fmt_compact).
  std::string label(double v) const;
};

/// About `target` intervals of a 1-2-5 step covering [lo, hi] (swapped when reversed; widened when empty).
Ticks nice_ticks(double lo, double hi, int target = 5);

/// Ticks of a logarithmic axis covering [lo, hi], both > 0: the 1-2-5 values when the range spans at most two
/// decades, else the powers of ten; the ends are the nearest such values outside the range.
Ticks log_ticks(double lo, double hi);

/// Sequential colour scale (viridis, perceptually uniform and colour-blind safe): t in [0, 1], clamped,
/// to "#rrggbb"; 0 is dark purple, 1 is yellow.
std::string sequential_colour(double t);

/// The i-th colour of a categorical palette (Tableau 10), cycling.
std::string category_colour(std::size_t i);

/// Whether text over a "#rrggbb" background reads better dark than white.
bool prefers_dark_text(std::string_view hex);

/// Estimated rendered width in pixels of `text` at `font_px` in a sans-serif font; used for margins, legend
/// wrapping and label placement, where a few pixels off do no harm.
double text_width(std::string_view text, double font_px = 12.0);

/// A coordinate with at most one decimal ("12.5", "80").
std::string px(double v);

/// Appends SVG elements to a string. `attrs` are preformatted attributes (`class="mark bar" fill="#4e79a7"`);
/// text content is escaped here, attribute values are the caller's to escape.
class SvgWriter {
 public:
  /// Opens the root element with an accessible <title>; `id` prefixes ids defined inside (gradients,
  /// patterns) so that several charts can share one HTML page.
  SvgWriter(double width, double height, std::string_view title, std::string_view id);

  /// `tooltip`, when given, becomes a <title> child (shown on hover in a browser).
  void rect(double x, double y, double w, double h, std::string_view attrs, std::string_view tooltip = "");
  void line(double x1, double y1, double x2, double y2, std::string_view attrs);
  void circle(double cx, double cy, double r, std::string_view attrs, std::string_view tooltip = "");
  void path(std::string_view d, std::string_view attrs);
  void text(double x, double y, std::string_view content, std::string_view attrs = "");
  /// Inserts markup as is (definitions, groups).
  void raw(std::string_view markup);

  const std::string& id() const noexcept { return id_; }
  /// Closes the root element and returns the document.
  std::string finish();

 private:
  void close_element(std::string_view tag, std::string_view tooltip);

  std::string out_;
  std::string id_;
};

}  // namespace edgc::report
