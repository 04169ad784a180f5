#pragma once
// Layout shared by the chart renderers (private to tools/src/report): title and legend header, the plot frame,
// linear scales and axes with gridlines. All sizes are SVG pixels.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edgc/report/svg.hpp"

namespace edgc::report::plot {

inline constexpr double kTitleFont = 14.0;
inline constexpr double kFont = 12.0;
inline constexpr double kLegendRow = 16.0;
inline constexpr double kRightMargin = 18.0;
inline constexpr double kBottomMargin = 44.0;  ///< tick labels and the x axis label

struct LegendItem {
  enum class Kind { kLine, kDashed, kBox, kDot };
  std::string name;
  std::string colour;
  Kind kind = Kind::kLine;
};

/// Map from the data interval [d0, d1] to the pixel interval [p0, p1], linear or (log, d0 > 0) logarithmic; the
/// middle when d0 == d1.
struct Scale {
  double d0 = 0.0;
  double d1 = 1.0;
  double p0 = 0.0;
  double p1 = 1.0;
  bool log = false;
  double operator()(double v) const {
    if (d1 == d0) return (p0 + p1) / 2;
    if (log) return p0 + std::log(v / d0) * (p1 - p0) / std::log(d1 / d0);
    return p0 + (v - d0) * (p1 - p0) / (d1 - d0);
  }
};

/// The plot area inside the margins.
struct Frame {
  double left = 0.0;
  double top = 0.0;
  double right = 0.0;
  double bottom = 0.0;
};

/// An axis-aligned box in pixels (a label's extent, a marker's bounds).
struct Box {
  double x = 0.0;  ///< left
  double y = 0.0;  ///< top
  double w = 0.0;
  double h = 0.0;
  bool overlaps(const Box& o) const { return x < o.x + o.w && o.x < x + w && y < o.y + o.h && o.y < y + h; }
};

/// A label to place beside the point (x, y), with a shorter text to try where the label does not fit.
struct LabelRequest {
  double x = 0.0;
  double y = 0.0;
  std::string text;
  std::string fallback{};  ///< empty: none
};

/// Where a label goes: its box, the text anchor point (start of the baseline) and the text that fitted.
struct PlacedLabel {
  Box box;
  double text_x = 0.0;
  double text_y = 0.0;
  std::string text;
};

/// Places labels beside their points so that no two overlap, none covers an obstacle (drawn points) and all stay
/// inside the frame: each takes the first free of eight positions around its point, right and left before above
/// and below. Every full text is tried first, in order; then the fallbacks of those that did not fit, around what
/// is placed. nullopt where neither fits.
std::vector<std::optional<PlacedLabel>> place_labels(const std::vector<LabelRequest>& requests, double font_px,
                                                     const Frame& frame, std::vector<Box> obstacles);

/// Draws the title and, under it, the legend wrapped into rows; returns where the plot area may begin.
double draw_header(SvgWriter& svg, double width, const std::string& title, const std::vector<LegendItem>& legend);

/// Left margin that fits the tick labels of `ticks` and the rotated axis label.
double y_axis_margin(const Ticks& ticks);

/// Horizontal gridlines, tick labels and the rotated label of a numeric y axis.
void draw_y_axis(SvgWriter& svg, const Frame& f, const Ticks& ticks, const Scale& y, const std::string& label);

/// Tick marks, labels and the label of a numeric x axis along the bottom of the frame.
void draw_x_axis(SvgWriter& svg, const Frame& f, const Ticks& ticks, const Scale& x, const std::string& label);

/// Whether category labels need rotating to fit bands of `band` pixels, and the bottom margin they then take.
bool rotate_categories(const std::vector<std::string>& labels, double band);
double category_axis_margin(const std::vector<std::string>& labels, double band);
/// The left edge of a frame whose category labels, rotated, must not run off the chart's left side: `left` or
/// more, for bands spanning [left, right].
double category_left_margin(const std::vector<std::string>& labels, double left, double right);

/// Category labels centred at x(i) under the frame (rotated when crowded), and the axis label.
void draw_x_categories(SvgWriter& svg, const Frame& f, const std::vector<std::string>& labels, const Scale& x,
                       double band, const std::string& label);

/// A grey "no data" message in the middle of the frame, for charts with nothing to draw.
void draw_no_data(SvgWriter& svg, const Frame& f);

}  // namespace edgc::report::plot
