#include "edgc/core/checked_int.hpp"

namespace edgc {

std::optional<std::int64_t> checked_multiply(std::int64_t a, std::int64_t b, std::int64_t max) noexcept {
  if (a < 0 || b < 0 || max < 0) return std::nullopt;
  if (a != 0 && b > max / a) return std::nullopt;  // a·b > max, tested without forming a·b
  return a * b;
}

std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b, std::int64_t max) noexcept {
  if (a < 0 || b < 0 || a > max || b > max - a) return std::nullopt;
  return a + b;
}

std::optional<std::int64_t> checked_product(std::span<const std::int64_t> dims, std::int64_t max) noexcept {
  std::int64_t product = 1;
  for (const std::int64_t d : dims) {
    const auto next = checked_multiply(product, d, max);
    if (!next) return std::nullopt;
    product = *next;
  }
  if (product > max) return std::nullopt;  // no dimensions: the product 1
  return product;
}

}  // namespace edgc
