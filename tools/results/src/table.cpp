#include "edgc/results/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace edgc::results {
namespace {

bool looks_numeric(const std::string& s) {
  return !s.empty() &&
         (std::isdigit(static_cast<unsigned char>(s[0])) != 0 || s[0] == '-' || s[0] == '+' || s[0] == '.');
}

}  // namespace

void Table::print(std::ostream& os, const std::string& indent) const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& r : rows_)
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells, bool is_header) {
    std::string out = indent;
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      const bool right = !is_header && c > 0 && looks_numeric(cell);
      out += right ? pad + cell : cell + pad;
      if (c + 1 < width.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    os << out << "\n";
  };
  line(header_, true);
  std::size_t total = 0;
  for (std::size_t w : width) total += w;
  os << indent << std::string(total + 2 * (width.empty() ? 0 : width.size() - 1), '-') << "\n";
  for (const auto& r : rows_) line(r, false);
}

std::string fmt_g(double x, int digits) {
  if (std::isnan(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string fmt_f(double x, int decimals) {
  if (std::isnan(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

}  // namespace edgc::results
