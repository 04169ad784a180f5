#include "edgc/report/plot.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

namespace edgc::report::plot {
namespace {

constexpr double kLegendSwatch = 18.0;
constexpr double kLegendGap = 16.0;
constexpr double kRotation = 35.0;  // degrees, for crowded category labels

}  // namespace

double draw_header(SvgWriter& svg, double width, const std::string& title, const std::vector<LegendItem>& legend) {
  svg.text(12, 20, title, R"(font-size="14" font-weight="bold")");
  double y = 34.0;
  if (legend.empty()) return y + 4.0;
  double x = 12.0;
  for (const LegendItem& item : legend) {
    const double w = kLegendSwatch + 4.0 + text_width(item.name, kFont);
    if (x > 12.0 && x + w > width - kRightMargin) {
      x = 12.0;
      y += kLegendRow;
    }
    const double cy = y - 4.0;
    const std::string colour = "\"" + xml_escape(item.colour) + "\"";
    switch (item.kind) {
      case LegendItem::Kind::kLine:
      case LegendItem::Kind::kDashed:
        svg.line(x, cy, x + kLegendSwatch, cy,
                 "stroke=" + colour + " stroke-width=\"2.5\"" +
                     (item.kind == LegendItem::Kind::kDashed ? " stroke-dasharray=\"5 3\"" : ""));
        break;
      case LegendItem::Kind::kBox:
        svg.rect(x + 4, cy - 5, 10, 10, "fill=" + colour);
        break;
      case LegendItem::Kind::kDot:
        svg.circle(x + kLegendSwatch / 2, cy, 4.5, "fill=" + colour);
        break;
    }
    svg.text(x + kLegendSwatch + 4.0, y, item.name);
    x += w + kLegendGap;
  }
  return y + 12.0;
}

std::vector<std::optional<PlacedLabel>> place_labels(const std::vector<LabelRequest>& requests, double font_px,
                                                     const Frame& frame, std::vector<Box> obstacles) {
  std::vector<std::optional<PlacedLabel>> out(requests.size());
  const double h = font_px + 2.0;
  constexpr double kGap = 8.0;  // from the point to the nearest edge of the label
  const auto place = [&](double ax, double ay, const std::string& text) -> std::optional<PlacedLabel> {
    const double w = text_width(text, font_px);
    // Top-left corners: right, left, upper right, lower right, upper left, lower left, above, below.
    const std::pair<double, double> corners[] = {{ax + kGap, ay - h / 2},
                                                 {ax - kGap - w, ay - h / 2},
                                                 {ax + kGap / 2, ay - kGap / 2 - h},
                                                 {ax + kGap / 2, ay + kGap / 2},
                                                 {ax - kGap / 2 - w, ay - kGap / 2 - h},
                                                 {ax - kGap / 2 - w, ay + kGap / 2},
                                                 {ax - w / 2, ay - kGap - h},
                                                 {ax - w / 2, ay + kGap}};
    for (const auto& [x, y] : corners) {
      const Box b{x, y, w, h};
      if (b.x < frame.left || b.x + b.w > frame.right || b.y < frame.top || b.y + b.h > frame.bottom) continue;
      if (std::any_of(obstacles.begin(), obstacles.end(), [&](const Box& o) { return b.overlaps(o); })) continue;
      obstacles.push_back(b);
      return PlacedLabel{b, b.x, b.y + b.h - 3.0, text};
    }
    return std::nullopt;
  };
  for (std::size_t i = 0; i < requests.size(); ++i) out[i] = place(requests[i].x, requests[i].y, requests[i].text);
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (!out[i] && !requests[i].fallback.empty()) out[i] = place(requests[i].x, requests[i].y, requests[i].fallback);
  return out;
}

double y_axis_margin(const Ticks& ticks) {
  double widest = 0.0;
  for (const double v : ticks.values) widest = std::max(widest, text_width(ticks.label(v), kFont));
  return widest + 36.0;
}

void draw_y_axis(SvgWriter& svg, const Frame& f, const Ticks& ticks, const Scale& y, const std::string& label) {
  for (const double v : ticks.values) {
    const double py = y(v);
    svg.line(f.left, py, f.right, py, v == 0.0 ? R"(stroke="#999")" : R"(stroke="#e3e3e3")");
    svg.text(f.left - 6, py + 4, ticks.label(v), R"(text-anchor="end" fill="#444")");
  }
  const double cy = (f.top + f.bottom) / 2;
  // A label longer than the frame is tall would run into the legend: smaller type, down to 9 px.
  const double room = f.bottom - f.top;
  const double wide = text_width(label, kFont);
  const std::string size = wide > room ? " font-size=\"" + px(std::max(9.0, kFont * room / wide)) + "\"" : "";
  svg.text(14, cy, label, "text-anchor=\"middle\" transform=\"rotate(-90 14 " + px(cy) + ")\" fill=\"#333\"" + size);
}

void draw_x_axis(SvgWriter& svg, const Frame& f, const Ticks& ticks, const Scale& x, const std::string& label) {
  svg.line(f.left, f.bottom, f.right, f.bottom, R"(stroke="#999")");
  for (const double v : ticks.values) {
    const double px_ = x(v);
    svg.line(px_, f.bottom, px_, f.bottom + 4, R"(stroke="#999")");
    svg.text(px_, f.bottom + 16, ticks.label(v), R"(text-anchor="middle" fill="#444")");
  }
  svg.text((f.left + f.right) / 2, f.bottom + 34, label, R"(text-anchor="middle" fill="#333")");
}

bool rotate_categories(const std::vector<std::string>& labels, double band) {
  return std::any_of(labels.begin(), labels.end(),
                     [&](const std::string& l) { return text_width(l, kFont) > band - 6.0; });
}

double category_left_margin(const std::vector<std::string>& labels, double left, double right) {
  const double n = static_cast<double>(std::max<std::size_t>(1, labels.size()));
  // Rotated labels end at their band's centre and reach left by cos(kRotation) of their width (draw_x_categories).
  for (int pass = 0; pass < 2; ++pass) {
    const double band = (right - left) / n;
    if (!rotate_categories(labels, band)) return left;
    double need = left;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      // 8 px of air: text_width is an estimate.
      const double reach = text_width(labels[i], kFont) * std::cos(kRotation * std::numbers::pi / 180.0);
      need = std::max(need, reach - band * (static_cast<double>(i) + 0.5) + 8.0);
    }
    left = need;
  }
  return left;
}

double category_axis_margin(const std::vector<std::string>& labels, double band) {
  if (!rotate_categories(labels, band)) return kBottomMargin;
  double widest = 0.0;
  for (const std::string& l : labels) widest = std::max(widest, text_width(l, kFont));
  return std::min(160.0, widest * 0.6) + 34.0;  // sin(35°) ≈ 0.57 of the label rises into the margin
}

void draw_x_categories(SvgWriter& svg, const Frame& f, const std::vector<std::string>& labels, const Scale& x,
                       double band, const std::string& label) {
  svg.line(f.left, f.bottom, f.right, f.bottom, R"(stroke="#999")");
  const bool rotated = rotate_categories(labels, band);
  double lowest = f.bottom + 16;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const double cx = x(static_cast<double>(i));
    if (rotated) {
      const double ty = f.bottom + 12;
      svg.text(cx, ty, labels[i],
               "text-anchor=\"end\" fill=\"#444\" transform=\"rotate(-" + px(kRotation) + " " + px(cx) + " " + px(ty) +
                   ")\"");
      lowest = std::max(lowest, ty + std::min(160.0, text_width(labels[i], kFont) * 0.6));
    } else {
      svg.text(cx, f.bottom + 16, labels[i], R"(text-anchor="middle" fill="#444")");
    }
  }
  svg.text((f.left + f.right) / 2, lowest + 18, label, R"(text-anchor="middle" fill="#333")");
}

void draw_no_data(SvgWriter& svg, const Frame& f) {
  svg.text((f.left + f.right) / 2, (f.top + f.bottom) / 2, "no data", R"(text-anchor="middle" fill="#888")");
}

}  // namespace edgc::report::plot
