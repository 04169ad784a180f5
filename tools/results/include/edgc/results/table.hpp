#pragma once
// Console tables: columns padded to their widest cell, numbers right-aligned.
#include <ostream>
#include <string>
#include <vector>

namespace edgc::results {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& os, const std::string& indent = "  ") const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// printf("%.*g")-style formatting for table cells; "-" for NaN.
std::string fmt_g(double x, int digits = 4);
/// Fixed-point formatting with `decimals` places.
std::string fmt_f(double x, int decimals = 2);

}  // namespace edgc::results
