#include "edgc/report/svg.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace edgc::report {
namespace {

// "%.*f" with trailing zeros (and a trailing point) removed; never "-0".
std::string fixed_trimmed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, decimals), x);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

// Significant digits without e-notation, for magnitudes from 1e-3 to 1e4.
std::string fixed_significant(double x, int sig) {
  const int digits_before_point = static_cast<int>(std::floor(std::log10(std::abs(x)))) + 1;
  return fixed_trimmed(x, sig - digits_before_point);
}

struct Suffix {
  double scale;
  const char* name;
};
constexpr std::array<Suffix, 4> kSuffixes{{{1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {1e12, "T"}}};

struct Rgb {
  double r, g, b;
};

Rgb parse_hex(std::string_view hex) {
  auto channel = [&](std::size_t at) {
    return hex.size() >= at + 2 ? static_cast<double>(std::stoi(std::string(hex.substr(at, 2)), nullptr, 16)) : 0.0;
  };
  return {channel(1), channel(3), channel(5)};
}

std::string to_hex(const Rgb& c) {
  char buf[8];
  auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0))); };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
  return buf;
}

// Viridis sampled at nine evenly spaced points; linear interpolation between them is visually exact enough.
constexpr std::array<const char*, 9> kViridis{"#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c",
                                              "#28ae80", "#5ec962", "#addc30", "#fde725"};
constexpr std::array<const char*, 10> kTableau10{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                 "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
          out += "\xEF\xBF\xBD";
        else
          out += ch;
    }
  }
  return out;
}

std::string fmt_compact(double x, int sig) {
  if (std::isnan(x)) return "\xE2\x80\x93";  // en dash
  if (std::isinf(x)) return x > 0 ? "\xE2\x88\x9E" : "-\xE2\x88\x9E";
  if (x == 0.0) return "0";
  const double a = std::abs(x);
  if (a >= 1e4) {
    for (std::size_t i = 0; i < kSuffixes.size(); ++i) {
      const std::string s = fixed_significant(x / kSuffixes[i].scale, sig);
      // 999,999 rounds to "1000k": move on to "1M" unless there is no larger suffix.
      if (std::abs(std::stod(s)) < 1000.0 || i + 1 == kSuffixes.size()) return s + kSuffixes[i].name;
    }
  }
  if (a < 1e-3) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", std::max(1, sig), x);
    return buf;
  }
  return fixed_significant(x, sig);
}

std::string fmt_percent(double fraction) {
  if (!std::isfinite(fraction)) return fmt_compact(fraction);
  return fmt_compact(100.0 * fraction, 3) + "%";
}

std::string Ticks::label(double v) const {
  if (log) return fmt_compact(v, 3);
  // From 10^4 on, a suffix keeps labels to at most three digits before the point: 20k, 1.5M.
  const double reach = std::max(std::abs(lo), std::abs(hi));
  double scale = 1.0;
  const char* suffix = "";
  if (reach >= 1e4)
    for (const Suffix& s : kSuffixes)
      if (reach >= s.scale) {
        scale = s.scale;
        suffix = s.name;
      }
  // step / scale is 1, 2 or 5 times a power of ten: its negative exponent is the number of decimals needed.
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step / scale) + 1e-9)));
  const std::string s = fixed_trimmed(v / scale, decimals);
  return s == "0" ? s : s + suffix;
}

Ticks log_ticks(double lo, double hi) {
  if (!(lo > 0.0) || !std::isfinite(lo) || !std::isfinite(hi)) return nice_ticks(lo, hi);
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    lo /= 2.0;
    hi *= 2.0;
  }
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  const bool fine = std::log10(hi / lo) <= 2.0;
  std::vector<double> grid;
  for (int e = first; e <= last; ++e) {
    const double power = std::pow(10.0, e);
    for (const double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) grid.push_back(m * power);
  }
  Ticks t;
  t.log = true;
  t.step = 0.0;
  // The grid value at or below lo and the one at or above hi, and every one between.
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const bool next_above_lo = i + 1 < grid.size() && grid[i + 1] <= lo * (1 + 1e-12);
    if (next_above_lo) continue;
    t.values.push_back(grid[i]);
    if (grid[i] >= hi * (1 - 1e-12)) break;
  }
  if (t.values.back() < hi) t.values.push_back(std::pow(10.0, last + 1));
  t.lo = t.values.front();
  t.hi = t.values.back();
  return t;
}

Ticks nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    lo = 0.0;
    hi = 1.0;
  }
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0.0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target);
  int exponent = static_cast<int>(std::floor(std::log10(raw)));
  const double norm = raw / std::pow(10.0, exponent);
  int mantissa = norm < 1.5 ? 1 : norm < 3.0 ? 2 : norm < 7.0 ? 5 : 10;
  if (mantissa == 10) {
    mantissa = 1;
    ++exponent;
  }
  // Tick k is k·mantissa·10^exponent, computed as one rounded product or quotient of exact integers, so that
  // 3 × 0.1 comes out as the double nearest 0.3 (not 0.30000000000000004).
  const double power = std::pow(10.0, std::abs(exponent));
  const auto value = [&](double k) { return exponent < 0 ? k * mantissa / power : k * mantissa * power; };
  Ticks t;
  t.step = value(1.0);
  const double first = std::floor(lo / t.step + 1e-9);
  const double last = std::ceil(hi / t.step - 1e-9);
  for (double k = first; k <= last; k += 1.0) t.values.push_back(k == 0.0 ? 0.0 : value(k));
  t.lo = t.values.front();
  t.hi = t.values.back();
  return t;
}

std::string sequential_colour(double t) {
  if (std::isnan(t)) t = 0.0;
  t = std::clamp(t, 0.0, 1.0);
  const double pos = t * static_cast<double>(kViridis.size() - 1);
  const std::size_t i = std::min(static_cast<std::size_t>(pos), kViridis.size() - 2);
  const double f = pos - static_cast<double>(i);
  const Rgb a = parse_hex(kViridis[i]);
  const Rgb b = parse_hex(kViridis[i + 1]);
  return to_hex({a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f});
}

std::string category_colour(std::size_t i) { return kTableau10[i % kTableau10.size()]; }

bool prefers_dark_text(std::string_view hex) {
  const Rgb c = parse_hex(hex);
  // Relative luminance with the sRGB weights, on gamma-encoded values: good enough to choose black or white.
  return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b > 140.0;
}

double text_width(std::string_view text, double font_px) {
  double em = 0.0;
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if ((u & 0xC0) == 0x80) continue;  // UTF-8 continuation byte: counted with its lead byte
    if (std::string_view("il.,:;|!'1 ()[]fjtr").find(ch) != std::string_view::npos)
      em += 0.36;
    else if (std::isupper(u) != 0 || ch == 'm' || ch == 'w' || ch == '%')
      em += 0.74;
    else
      em += 0.6;
  }
  return em * font_px;
}

std::string px(double v) { return fixed_trimmed(v, 1); }

SvgWriter::SvgWriter(double width, double height, std::string_view title, std::string_view id) : id_(id) {
  out_ = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"" + xml_escape(id) + "\" width=\"" +
         px(width) + "\" height=\"" + px(height) + "\" viewBox=\"0 0 " + px(width) + " " + px(height) +
         "\" role=\"img\" font-family=\"'DejaVu Sans', 'Helvetica Neue', Arial, sans-serif\" font-size=\"12\" "
         "fill=\"#222\">\n<title>" +
         xml_escape(title) + "</title>\n";
  rect(0, 0, width, height, R"(fill="#fff")");
}

void SvgWriter::rect(double x, double y, double w, double h, std::string_view attrs, std::string_view tooltip) {
  out_ += "<rect " + std::string(attrs) + " x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(0.0, w)) +
          "\" height=\"" + px(std::max(0.0, h)) + "\"";
  close_element("rect", tooltip);
}

void SvgWriter::line(double x1, double y1, double x2, double y2, std::string_view attrs) {
  out_ += "<line " + std::string(attrs) + " x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" +
          px(y2) + "\"/>\n";
}

void SvgWriter::circle(double cx, double cy, double r, std::string_view attrs, std::string_view tooltip) {
  out_ += "<circle " + std::string(attrs) + " cx=\"" + px(cx) + "\" cy=\"" + px(cy) + "\" r=\"" + px(r) + "\"";
  close_element("circle", tooltip);
}

void SvgWriter::close_element(std::string_view tag, std::string_view tooltip) {
  if (tooltip.empty())
    out_ += "/>\n";
  else
    out_ += "><title>" + xml_escape(tooltip) + "</title></" + std::string(tag) + ">\n";
}

void SvgWriter::path(std::string_view d, std::string_view attrs) {
  out_ += "<path " + std::string(attrs) + " d=\"" + std::string(d) + "\"/>\n";
}

void SvgWriter::text(double x, double y, std::string_view content, std::string_view attrs) {
  out_ += "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + (attrs.empty() ? "" : " ") + std::string(attrs) + ">" +
          xml_escape(content) + "</text>\n";
}

void SvgWriter::raw(std::string_view markup) { out_ += markup; }

std::string SvgWriter::finish() {
  out_ += "</svg>\n";
  return std::move(out_);
}

}  // namespace edgc::report
