// Line charts, stacked bars and scatter plots (the heatmap is in heatmap.cpp).
#include "edgc/report/charts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "edgc/report/plot.hpp"
#include "edgc/report/svg.hpp"

namespace edgc::report {
namespace {

using plot::Frame;
using plot::LegendItem;
using plot::Scale;

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

std::string colour_of(const std::string& given, std::size_t index) {
  return given.empty() ? category_colour(index) : given;
}

// Indices of the finite points of s, thinned to the first, lowest, highest and last point per pixel column when
// there are many more points than columns: the drawn envelope stays exact and the file stays small.
std::vector<std::size_t> visible_points(const Series& s, const Scale& x) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
    if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) idx.push_back(i);
  const double columns = std::abs(x.p1 - x.p0);
  if (s.step || static_cast<double>(idx.size()) <= 4.0 * columns) return idx;
  std::vector<std::size_t> kept;
  std::size_t begin = 0;
  while (begin < idx.size()) {
    const long column = std::lround(x(s.x[idx[begin]]));
    std::size_t end = begin;
    std::size_t lo = begin;
    std::size_t hi = begin;
    while (end < idx.size() && std::lround(x(s.x[idx[end]])) == column) {
      if (s.y[idx[end]] < s.y[idx[lo]]) lo = end;
      if (s.y[idx[end]] > s.y[idx[hi]]) hi = end;
      ++end;
    }
    std::vector<std::size_t> bucket{begin, lo, hi, end - 1};
    std::sort(bucket.begin(), bucket.end());
    bucket.erase(std::unique(bucket.begin(), bucket.end()), bucket.end());
    for (const std::size_t b : bucket) kept.push_back(idx[b]);
    begin = end;
  }
  return kept;
}

}  // namespace

double colour_position(double v, double lo, double hi) {
  if (!(hi > lo)) return 0.5;
  return std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
}

std::string render(const LineChart& c, const std::string& id) {
  SvgWriter svg(c.width, c.height, c.title, id);
  const bool categorical = !c.x_categories.empty();
  Range xr;
  Range yr;
  for (const Series& s : c.series)
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
        xr.add(s.x[i]);
        yr.add(s.y[i]);
      }
  for (const Marker& m : c.markers) xr.add(m.x);
  if (c.y_from_zero) yr.add(0.0);
  if (!yr.empty()) {
    // A little air above and below the data, so that lines never run along the frame (except at a zero baseline).
    const double pad = (yr.hi > yr.lo ? yr.hi - yr.lo : std::abs(yr.hi)) * 0.04;
    if (yr.lo != 0.0) yr.lo -= pad;
    if (yr.hi != 0.0) yr.hi += pad;
  }

  std::vector<LegendItem> legend;
  for (std::size_t i = 0; i < c.series.size(); ++i)
    legend.push_back({c.series[i].name, colour_of(c.series[i].colour, i),
                      categorical          ? LegendItem::Kind::kDot
                      : c.series[i].dashed ? LegendItem::Kind::kDashed
                                           : LegendItem::Kind::kLine});
  const double top = plot::draw_header(svg, c.width, c.title, legend);
  const Ticks yt = yr.empty() ? nice_ticks(0, 1) : nice_ticks(yr.lo, yr.hi, 5);
  Frame f{plot::y_axis_margin(yt), top, c.width - plot::kRightMargin, 0.0};
  if (categorical) f.left = plot::category_left_margin(c.x_categories, f.left, f.right);
  const double n_cat = static_cast<double>(c.x_categories.size());
  const double band = categorical ? (f.right - f.left) / n_cat : 0.0;
  f.bottom = c.height - (categorical ? plot::category_axis_margin(c.x_categories, band) : plot::kBottomMargin);
  const Scale y{yt.lo, yt.hi, f.bottom, f.top};
  plot::draw_y_axis(svg, f, yt, y, c.y_label);

  Scale x;
  if (categorical) {
    x = {-0.5, n_cat - 0.5, f.left, f.right};
    plot::draw_x_categories(svg, f, c.x_categories, x, band, c.x_label);
  } else {
    const Ticks xt = xr.empty() ? nice_ticks(0, 1) : nice_ticks(xr.lo, xr.hi, 6);
    x = {xt.lo, xt.hi, f.left, f.right};
    plot::draw_x_axis(svg, f, xt, x, c.x_label);
  }
  if (xr.empty()) plot::draw_no_data(svg, f);

  for (const Marker& m : c.markers) {
    const double mx = x(m.x);
    svg.line(mx, f.top, mx, f.bottom, R"(class="marker" stroke="#555" stroke-dasharray="2 3")");
    const bool left = mx > (f.left + f.right) / 2;
    svg.text(left ? mx - 4 : mx + 4, f.top + 12, m.label,
             left ? R"(text-anchor="end" fill="#555" font-size="11")" : R"(fill="#555" font-size="11")");
  }

  for (std::size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    const std::vector<std::size_t> pts = visible_points(s, x);
    if (pts.empty()) continue;
    const std::string colour = xml_escape(colour_of(s.colour, si));
    std::string d;
    for (std::size_t k = 0; k < pts.size(); ++k) {
      const double px_ = x(s.x[pts[k]]);
      const double py = y(s.y[pts[k]]);
      if (k == 0 || categorical)
        d += "M" + px(px_) + " " + px(py) + (categorical ? "h0.01" : "");
      else if (s.step)
        d += "H" + px(px_) + "V" + px(py);
      else
        d += "L" + px(px_) + " " + px(py);
    }
    // A lone value, and every value over categories, shows as a dot through the round line cap.
    if (pts.size() == 1 && !categorical) d += "h0.01";
    const double width = categorical ? std::max(8.0, 3.0 * s.line_width) : s.line_width;
    svg.path(d, "class=\"mark series\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"" + px(width) +
                    "\" stroke-linejoin=\"round\" stroke-linecap=\"round\"" +
                    (s.dashed ? " stroke-dasharray=\"6 3\"" : "") + " data-name=\"" + xml_escape(s.name) + "\"");
    if (!s.step && pts.size() <= 40)
      for (const std::size_t i : pts)
        svg.circle(x(s.x[i]), y(s.y[i]), 2.5, "class=\"dot\" fill=\"" + colour + "\"",
                   s.name + ": " + fmt_compact(s.y[i], 4) + " at " + fmt_compact(s.x[i], 6));
  }
  return svg.finish();
}

std::string render(const StackedBarChart& c, const std::string& id) {
  SvgWriter svg(c.width, c.height, c.title, id);
  std::vector<LegendItem> legend;
  std::vector<std::string> colours;
  for (std::size_t k = 0; k < c.components.size(); ++k) {
    colours.push_back(k < c.colours.size() ? c.colours[k] : category_colour(k));
    legend.push_back({c.components[k], colours.back(), LegendItem::Kind::kBox});
  }
  Range totals;
  totals.add(0.0);
  std::vector<double> total(c.categories.size(), 0.0);
  for (std::size_t b = 0; b < c.categories.size() && b < c.values.size(); ++b) {
    for (const double v : c.values[b])
      if (std::isfinite(v) && v > 0) total[b] += v;
    totals.add(total[b]);
  }
  const double top = plot::draw_header(svg, c.width, c.title, legend);
  const Ticks yt = nice_ticks(0.0, totals.hi > 0 ? totals.hi * 1.08 : 1.0, 5);  // room for the total labels
  Frame f{plot::y_axis_margin(yt), top, c.width - plot::kRightMargin, 0.0};
  f.left = plot::category_left_margin(c.categories, f.left, f.right);
  const double n = std::max<double>(1.0, static_cast<double>(c.categories.size()));
  const double band = (f.right - f.left) / n;
  f.bottom = c.height - plot::category_axis_margin(c.categories, band);
  const Scale y{yt.lo, yt.hi, f.bottom, f.top};
  const Scale x{-0.5, n - 0.5, f.left, f.right};
  plot::draw_y_axis(svg, f, yt, y, c.y_label);
  plot::draw_x_categories(svg, f, c.categories, x, band, "");
  if (c.categories.empty()) plot::draw_no_data(svg, f);

  const double bar_w = std::min(band * 0.6, 90.0);
  for (std::size_t b = 0; b < c.categories.size() && b < c.values.size(); ++b) {
    const double cx = x(static_cast<double>(b));
    double base = 0.0;
    for (std::size_t k = 0; k < c.values[b].size() && k < colours.size(); ++k) {
      const double v = c.values[b][k];
      if (!std::isfinite(v) || v <= 0) continue;
      svg.rect(cx - bar_w / 2, y(base + v), bar_w, y(base) - y(base + v),
               "class=\"mark bar\" fill=\"" + xml_escape(colours[k]) + "\"",
               c.categories[b] + ", " + c.components[k] + ": " + fmt_compact(v, 4));
      base += v;
    }
    svg.text(cx, y(total[b]) - 5, fmt_compact(total[b], 3), R"(text-anchor="middle" font-weight="bold")");
  }
  return svg.finish();
}

namespace {

// The ticks and scale of one scatter axis over the finite values in r (empty: 0..1).
struct NumericAxis {
  Ticks ticks;
  bool log = false;
};

// Logarithmic only when every value is positive (r covers every drawn value): a log axis cannot place 0.
NumericAxis scatter_axis(const Range& r, AxisScale kind, int target) {
  const bool positive = !r.empty() && r.lo > 0.0;
  const bool log = positive && (kind == AxisScale::kLog || (kind == AxisScale::kAuto && r.hi / r.lo >= 10.0));
  if (log) return {log_ticks(r.lo / 1.15, r.hi * 1.15), true};
  // Pad the data by 6 % so that points never sit on the frame, without crossing zero: times, costs and errors are
  // never negative, so an axis of non-negative data starts at 0 at the lowest.
  if (r.empty()) return {nice_ticks(0.0, 1.0, target), false};
  const double pad = (r.hi > r.lo ? r.hi - r.lo : std::max(std::abs(r.hi), 1e-9)) * 0.06;
  const double lo = r.lo >= 0.0 ? std::max(0.0, r.lo - pad) : r.lo - pad;
  return {nice_ticks(lo, r.hi + pad, target), false};
}

}  // namespace

std::string render(const ScatterChart& c, const std::string& id) {
  SvgWriter svg(c.width, c.height, c.title, id);
  const auto drawable = [&](const ScatterPoint& p) {
    return p.group < c.groups.size() && std::isfinite(p.x) && std::isfinite(p.y);
  };
  Range xr;
  Range yr;
  for (const ScatterPoint& p : c.points)
    if (drawable(p)) {
      xr.add(p.x);
      yr.add(p.y);
    }
  for (const Threshold& t : c.thresholds) yr.add(t.y);
  std::vector<LegendItem> legend;
  for (const ScatterGroup& g : c.groups) legend.push_back({g.name, g.colour, LegendItem::Kind::kDot});
  const double top = plot::draw_header(svg, c.width, c.title, legend);
  const NumericAxis ya = scatter_axis(yr, c.y_scale, 5);
  const NumericAxis xa = scatter_axis(xr, c.x_scale, 6);
  const Frame f{plot::y_axis_margin(ya.ticks), top, c.width - plot::kRightMargin, c.height - plot::kBottomMargin};
  const Scale y{ya.ticks.lo, ya.ticks.hi, f.bottom, f.top, ya.log};
  const Scale x{xa.ticks.lo, xa.ticks.hi, f.left, f.right, xa.log};
  plot::draw_y_axis(svg, f, ya.ticks, y, c.y_label + (ya.log ? ", log scale" : ""));
  plot::draw_x_axis(svg, f, xa.ticks, x, c.x_label + (xa.log ? ", log scale" : ""));
  if (xr.empty()) plot::draw_no_data(svg, f);

  for (const Threshold& t : c.thresholds) {
    const double ty = y(t.y);
    svg.line(f.left, ty, f.right, ty, R"(class="threshold" stroke="#555" stroke-dasharray="5 4")");
    svg.text(f.right - 4, ty - 4, t.label, R"(text-anchor="end" fill="#555" font-size="11")");
  }

  if (c.front_staircase && !c.groups.empty()) {
    std::vector<const ScatterPoint*> front;
    for (const ScatterPoint& p : c.points)
      if (p.group == 0 && drawable(p)) front.push_back(&p);
    std::sort(front.begin(), front.end(), [](const ScatterPoint* a, const ScatterPoint* b) { return a->x < b->x; });
    if (front.size() > 1) {
      // From each point horizontally to the next one's x, then down to it: the edge of what the front dominates.
      std::string d;
      for (const ScatterPoint* p : front)
        d += d.empty() ? "M" + px(x(p->x)) + " " + px(y(p->y)) : "H" + px(x(p->x)) + "V" + px(y(p->y));
      svg.path(d, "class=\"front\" fill=\"none\" stroke=\"" + xml_escape(c.groups[0].colour) +
                      "\" stroke-width=\"1.2\" stroke-opacity=\"0.7\"");
    }
  }

  const auto tooltip = [&](const ScatterPoint& p) {
    return p.label + ": " + c.x_label + " " + fmt_compact(p.x, 4) + ", " + c.y_label + " " + fmt_compact(p.y, 4);
  };
  for (std::size_t g = c.groups.size(); g-- > 0;) {
    const ScatterGroup& group = c.groups[g];
    const std::string colour = xml_escape(group.colour);
    const std::string style = group.hollow ? "fill=\"#fff\" stroke=\"" + colour + "\" stroke-width=\"1.8\""
                                           : "fill=\"" + colour + "\" stroke=\"#fff\" stroke-width=\"1\"";
    for (const ScatterPoint& p : c.points)
      if (p.group == g && drawable(p))
        svg.circle(x(p.x), y(p.y), group.radius, "class=\"mark point\" " + style, tooltip(p));
  }

  // Labels of the labelled groups, group 0 first, each point in order of x; they cover no point.
  std::vector<plot::LabelRequest> requests;
  std::vector<plot::Box> obstacles;
  for (const ScatterPoint& p : c.points)
    if (drawable(p)) {
      const double r = c.groups[p.group].radius + 1.0;
      obstacles.push_back({x(p.x) - r, y(p.y) - r, 2 * r, 2 * r});
    }
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    if (!c.groups[g].labelled) continue;
    std::vector<const ScatterPoint*> in_group;
    for (const ScatterPoint& p : c.points)
      if (p.group == g && drawable(p) && !p.label.empty()) in_group.push_back(&p);
    std::stable_sort(in_group.begin(), in_group.end(),
                     [](const ScatterPoint* a, const ScatterPoint* b) { return a->x < b->x; });
    for (const ScatterPoint* p : in_group) requests.push_back({x(p->x), y(p->y), p->label, p->short_label});
  }
  for (const auto& l : plot::place_labels(requests, 11.0, f, std::move(obstacles)))
    if (l) svg.text(l->text_x, l->text_y, l->text, R"(class="point-label" font-size="11")");
  return svg.finish();
}

}  // namespace edgc::report
