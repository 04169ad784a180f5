// Heatmaps: a categorical grid coloured on the viridis scale from the smallest to the largest value (or over the
// noise band, when that is wider), with a min–max colour legend; cells without data are hatched grey.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "edgc/report/charts.hpp"
#include "edgc/report/plot.hpp"
#include "edgc/report/svg.hpp"

namespace edgc::report {

namespace {

// The values' range and the colour scale: the data's range, widened about its middle to at least the noise band.
struct ValueRange {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool any_empty = false;
  int sig = 3;  // significant digits of the labels
  double colour_lo = 0.0;
  double colour_hi = 0.0;
  bool has_data() const { return lo <= hi; }
};

ValueRange value_range(const Heatmap& c) {
  ValueRange r;
  const std::size_t cells = c.x_categories.size() * c.y_categories.size();
  for (std::size_t i = 0; i < cells; ++i) {
    const double v = i < c.values.size() ? c.values[i] : kNoValue;
    if (std::isfinite(v)) {
      r.lo = std::min(r.lo, v);
      r.hi = std::max(r.hi, v);
    } else {
      r.any_empty = true;
    }
  }
  // Enough digits to tell apart values a tenth of the range apart: speedups of 2.196 and 2.2 must not both read 2.2.
  if (r.has_data() && r.hi > r.lo) {
    const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10((r.hi - r.lo) / 10.0))), 0, 6);
    const double reach = std::max(std::abs(r.lo), std::abs(r.hi));
    const int int_digits = reach >= 1.0 ? static_cast<int>(std::floor(std::log10(reach))) + 1 : 1;
    r.sig = std::max(r.sig, int_digits + decimals);
  }
  r.colour_lo = r.lo;
  r.colour_hi = r.hi;
  if (r.has_data() && std::isfinite(c.noise) && r.hi - r.lo < 2.0 * c.noise) {
    const double mid = (r.lo + r.hi) / 2.0;
    r.colour_lo = mid - c.noise;
    r.colour_hi = mid + c.noise;
  }
  return r;
}

// The hatch pattern of empty cells and the colour scale's gradient.
void write_defs(SvgWriter& svg, const std::string& id) {
  svg.raw("<defs><pattern id=\"" + xml_escape(id) +
          "-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
          "<rect width=\"6\" height=\"6\" fill=\"#eee\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bbb\" "
          "stroke-width=\"2\"/></pattern><linearGradient id=\"" +
          xml_escape(id) + "-scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
  for (int k = 0; k <= 8; ++k)
    svg.raw("<stop offset=\"" + px(k / 8.0 * 100.0) + "%\" stop-color=\"" + sequential_colour(k / 8.0) + "\"/>");
  svg.raw("</linearGradient></defs>\n");
}

// The grid's cells: coloured with their value (printed where it fits), or hatched where there is none.
template <class Label>
void draw_cells(SvgWriter& svg, const Heatmap& c, const std::string& id, const plot::Frame& f, double cw, double ch,
                const ValueRange& r, const Label& label) {
  const std::size_t nx = c.x_categories.size();
  const std::size_t ny = c.y_categories.size();
  const bool values_fit = ch >= 16.0 && cw >= text_width(label(r.hi), plot::kFont) + 6.0 &&
                          cw >= text_width(label(r.lo), plot::kFont) + 6.0;
  for (std::size_t j = 0; j < ny; ++j) {
    for (std::size_t i = 0; i < nx; ++i) {
      const std::size_t at = j * nx + i;
      const double v = at < c.values.size() ? c.values[at] : kNoValue;
      const double rx = f.left + static_cast<double>(i) * cw + 1;
      const double ry = f.bottom - static_cast<double>(j + 1) * ch + 1;
      const std::string where = c.x_label + " " + c.x_categories[i] + ", " + c.y_label + " " + c.y_categories[j];
      if (!std::isfinite(v)) {
        svg.rect(rx, ry, cw - 2, ch - 2, "class=\"cell-empty\" fill=\"url(#" + xml_escape(id) + "-hatch)\"",
                 where + ": no data");
        continue;
      }
      const std::string fill = sequential_colour(colour_position(v, r.colour_lo, r.colour_hi));
      svg.rect(rx, ry, cw - 2, ch - 2, "class=\"mark cell\" fill=\"" + fill + "\"", where + ": " + label(v));
      if (values_fit)
        svg.text(rx + (cw - 2) / 2, ry + (ch - 2) / 2 + 4, label(v),
                 std::string("text-anchor=\"middle\" fill=\"") + (prefers_dark_text(fill) ? "#111" : "#fff") + "\"");
    }
  }
}

// Colour legend: the gradient bar with the max at the top and the min at the bottom, and the value label.
template <class Label>
void draw_legend(SvgWriter& svg, const Heatmap& c, const std::string& id, const plot::Frame& f, const ValueRange& r,
                 const Label& label) {
  const double lx = f.right + 14.0;
  const double bar_bottom = r.any_empty ? f.bottom - 22.0 : f.bottom;
  svg.rect(lx, f.top, 12, bar_bottom - f.top, "fill=\"url(#" + xml_escape(id) + "-scale)\" stroke=\"#999\"");
  if (r.has_data()) {
    svg.text(lx + 16, f.top + 10, label(r.colour_hi), R"(class="legend-max")");
    if (r.colour_hi > r.colour_lo) svg.text(lx + 16, bar_bottom, label(r.colour_lo), R"(class="legend-min")");
  }
  if (r.any_empty) {
    svg.rect(lx, f.bottom - 12, 12, 12, "fill=\"url(#" + xml_escape(id) + "-hatch)\" stroke=\"#999\"");
    svg.text(lx + 16, f.bottom - 2, "no data", R"(fill="#666")");
  }
  const double lmid = (f.top + bar_bottom) / 2;
  const double vx = c.width - 6.0;  // rotated like the y label: the glyphs rise to the left of vx
  svg.text(vx, lmid, c.value_label,
           "text-anchor=\"middle\" transform=\"rotate(-90 " + px(vx) + " " + px(lmid) + ")\" fill=\"#333\"");
}

}  // namespace

std::string render(const Heatmap& c, const std::string& id) {
  SvgWriter svg(c.width, c.height, c.title, id);
  const std::size_t nx = c.x_categories.size();
  const std::size_t ny = c.y_categories.size();
  const ValueRange r = value_range(c);
  const auto label = [&](double v) { return fmt_compact(v, r.sig) + c.value_suffix; };
  write_defs(svg, id);

  const double top = plot::draw_header(svg, c.width, c.title, {});
  double y_labels = 0.0;
  for (const std::string& l : c.y_categories) y_labels = std::max(y_labels, text_width(l, plot::kFont));
  const double legend_w =
      28.0 + std::max(text_width(label(r.colour_lo), plot::kFont), text_width(label(r.colour_hi), plot::kFont)) + 26.0;
  plot::Frame f{y_labels + 36.0, top, c.width - legend_w, 0.0};
  f.left = plot::category_left_margin(c.x_categories, f.left, f.right);
  const double cw = (f.right - f.left) / static_cast<double>(std::max<std::size_t>(1, nx));
  f.bottom = c.height - plot::category_axis_margin(c.x_categories, cw);
  const double ch = (f.bottom - f.top) / static_cast<double>(std::max<std::size_t>(1, ny));
  if (!r.has_data()) plot::draw_no_data(svg, f);

  const plot::Scale x{-0.5, static_cast<double>(nx) - 0.5, f.left, f.right};
  plot::draw_x_categories(svg, f, c.x_categories, x, cw, c.x_label);
  for (std::size_t j = 0; j < ny; ++j) {
    const double cy = f.bottom - (static_cast<double>(j) + 0.5) * ch;
    svg.text(f.left - 6, cy + 4, c.y_categories[j], R"(text-anchor="end" fill="#444")");
  }
  const double mid = (f.top + f.bottom) / 2;
  svg.text(14, mid, c.y_label, "text-anchor=\"middle\" transform=\"rotate(-90 14 " + px(mid) + ")\" fill=\"#333\"");
  draw_cells(svg, c, id, f, cw, ch, r, label);
  draw_legend(svg, c, id, f, r, label);
  return svg.finish();
}

}  // namespace edgc::report
