#pragma once
// The report's chart types, each a plain spec rendered to one standalone SVG document. Every drawn data mark
// carries the class "mark" plus its kind, so tests and the page's self-check can count them:
//   line chart      <path class="mark series">  one per series with at least one value
//   stacked bars    <rect class="mark bar">     one per positive segment
//   heatmap         <rect class="mark cell">    one per cell with data; cells without data are
//                   <rect class="cell-empty"> (hatched grey), not marks
//   scatter         <circle class="mark point"> one per point; its labels are <text class="point-label">
// Ids inside a chart (gradients, patterns) are prefixed with the id passed to render, which also becomes the
// root element's id, so that several charts can share one HTML page.
#include <limits>
#include <string>
#include <vector>

namespace edgc::report {

/// A missing value in chart data.
inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

/// One line of a line chart. Points with a NaN y are skipped and the line joins their neighbours (a missing
/// measurement, not a break); points with a NaN x are dropped.
struct Series {
  std::string name{};
  std::vector<double> x{};
  std::vector<double> y{};
  std::string colour{};  ///< "#rrggbb"; empty: the categorical palette by series index
  bool dashed = false;
  bool step = false;        ///< hold each y until the next x (piecewise-constant data such as rank schedules)
  double line_width = 2.0;  ///< pixels; wider lines under narrower ones keep overlapping series visible
};

/// A labelled vertical line across the plot at x (e.g. the end of warm-up).
struct Marker {
  double x = 0.0;
  std::string label;
};

struct LineChart {
  std::string title;
  std::string x_label;  ///< with its unit, e.g. "iteration"
  std::string y_label;  ///< with its unit, e.g. "entropy (nats)"
  std::vector<Series> series;
  std::vector<Marker> markers;
  /// When set, x values are indices 0..n-1 into these labels (a categorical axis, e.g. string sweep values).
  /// Values over categories are drawn as dots, not joined: there is nothing between two categories.
  std::vector<std::string> x_categories;
  bool y_from_zero = false;  ///< include 0 in the y range
  double width = 560.0;
  double height = 320.0;
};

/// Vertical bars, each stacked from components (same order and colours in every bar).
struct StackedBarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> components;      ///< legend names, bottom to top
  std::vector<std::string> colours;         ///< one per component; empty: the categorical palette
  std::vector<std::string> categories;      ///< one per bar, x axis labels
  std::vector<std::vector<double>> values;  ///< [bar][component], stacked bottom to top; non-positive not drawn
  double width = 560.0;
  double height = 340.0;
};

/// A grid of coloured cells on two categorical axes with a min–max colour legend.
struct Heatmap {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string value_label;   ///< what the colour means, with its unit, e.g. "speedup vs none (×)"
  std::string value_suffix;  ///< appended to the value printed in each cell and on the legend, e.g. "×" or "%"
  std::vector<std::string> x_categories;
  std::vector<std::string> y_categories;  ///< the first is drawn at the bottom
  std::vector<double> values;             ///< row-major [y][x]; NaN: no data (drawn hatched grey)
  /// Half-width of the values' run-to-run noise, in their units (0: none known). The colour scale spans at least
  /// twice this about the data's middle, so that differences within the noise never take the scale's ends.
  double noise = 0.0;
  double width = 560.0;
  double height = 340.0;
};

/// How a numeric axis maps values: linear, logarithmic, or logarithmic when the data are positive and span at
/// least a decade (max/min ≥ 10).
enum class AxisScale { kLinear, kLog, kAuto };

/// A kind of point on a scatter chart, with its legend entry.
struct ScatterGroup {
  std::string name;
  std::string colour;     ///< "#rrggbb"
  double radius = 4.5;    ///< pixels
  bool labelled = false;  ///< write the points' labels beside them, where they fit without overlapping
  bool hollow = false;    ///< a ring instead of a disc
};

struct ScatterPoint {
  double x = 0.0;
  double y = 0.0;
  std::string label;          ///< beside the point when its group is labelled and it fits; always in the tooltip
  std::size_t group = 0;      ///< index into ScatterChart::groups
  std::string short_label{};  ///< used when the label does not fit (e.g. the point's row number in a table)
};

/// A horizontal reference line across the plot at y (e.g. an error budget).
struct Threshold {
  double y = 0.0;
  std::string label;
};

/// Points on two numeric axes, in groups drawn in reverse order (group 0 on top). Points are never joined by
/// lines except, when `front_staircase` is set, group 0's points by the staircase that bounds the region they
/// dominate (lower x and lower y better): a Pareto front over options, which makes no claim about values between
/// them. Labels never overlap one another or any point; those that do not fit are left to the tooltip.
struct ScatterChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ScatterGroup> groups;
  std::vector<ScatterPoint> points;
  AxisScale x_scale = AxisScale::kAuto;
  AxisScale y_scale = AxisScale::kAuto;
  bool front_staircase = false;
  std::vector<Threshold> thresholds;
  double width = 640.0;
  double height = 400.0;
};

std::string render(const LineChart& chart, const std::string& id);
std::string render(const StackedBarChart& chart, const std::string& id);
std::string render(const Heatmap& chart, const std::string& id);
std::string render(const ScatterChart& chart, const std::string& id);

/// Position of v within [lo, hi] as 0..1 (0.5 when the range is empty): the heatmap's colour coordinate.
double colour_position(double v, double lo, double hi);

}  // namespace edgc::report
