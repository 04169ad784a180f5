// The report's SVG building blocks: 1-2-5 axis ticks and their labels, compact numbers, XML escaping of labels
// read from files, and the heatmap colour scale at its ends.
#include "edgc/report/svg.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "edgc/report/charts.hpp"

namespace {

using namespace edgc::report;

std::vector<std::string> labels(const Ticks& t) {
  std::vector<std::string> out;
  for (const double v : t.values) out.push_back(t.label(v));
  return out;
}

TEST(NiceTicks, CoverTheRangeInOneTwoFiveSteps) {
  const Ticks a = nice_ticks(0.0, 0.0577, 5);
  EXPECT_DOUBLE_EQ(a.step, 0.01);
  EXPECT_EQ(labels(a), (std::vector<std::string>{"0", "0.01", "0.02", "0.03", "0.04", "0.05", "0.06"}));

  const Ticks b = nice_ticks(0.0, 120.0, 5);
  EXPECT_DOUBLE_EQ(b.step, 20.0);
  EXPECT_EQ(labels(b), (std::vector<std::string>{"0", "20", "40", "60", "80", "100", "120"}));

  const Ticks c = nice_ticks(-6.3, -4.0, 5);
  EXPECT_DOUBLE_EQ(c.step, 0.5);
  EXPECT_EQ(labels(c), (std::vector<std::string>{"-6.5", "-6", "-5.5", "-5", "-4.5", "-4"}));

  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{{0.3, 0.9}, {1e-7, 3e-7}, {17, 1e6}, {-3, 2}}) {
    const Ticks t = nice_ticks(lo, hi, 5);
    EXPECT_LE(t.lo, lo);
    EXPECT_GE(t.hi, hi);
    const double mantissa = t.step / std::pow(10.0, std::floor(std::log10(t.step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9)
        << lo << ".." << hi << ": step " << t.step;
    EXPECT_GE(t.values.size(), 3U);
    EXPECT_LE(t.values.size(), 12U);
  }
}

TEST(NiceTicks, LargeAxesUseSuffixesAndDegenerateRangesWiden) {
  EXPECT_EQ(labels(nice_ticks(0, 100000, 5)), (std::vector<std::string>{"0", "20k", "40k", "60k", "80k", "100k"}));
  EXPECT_EQ(labels(nice_ticks(0, 2.5e6, 5)), (std::vector<std::string>{"0", "0.5M", "1M", "1.5M", "2M", "2.5M"}));
  const Ticks flat = nice_ticks(5.0, 5.0);
  EXPECT_LT(flat.lo, 5.0);
  EXPECT_GT(flat.hi, 5.0);
  const Ticks zero = nice_ticks(0.0, 0.0);
  EXPECT_EQ(zero.lo, -1.0);
  EXPECT_EQ(zero.hi, 1.0);
  const Ticks reversed = nice_ticks(10.0, 0.0);
  EXPECT_EQ(reversed.lo, 0.0);
  EXPECT_EQ(reversed.hi, 10.0);
}

TEST(LogTicks, OneTwoFiveWithinTwoDecadesAndPowersOfTenBeyond) {
  const Ticks fine = log_ticks(21.0, 1371.0);
  EXPECT_TRUE(fine.log);
  EXPECT_EQ(fine.values, (std::vector<double>{20, 50, 100, 200, 500, 1000, 2000}));
  EXPECT_EQ(fine.lo, 20.0);
  EXPECT_EQ(fine.hi, 2000.0);
  EXPECT_EQ(fine.label(2000.0), "2000");
  EXPECT_EQ(fine.label(50.0), "50");
  const Ticks coarse = log_ticks(0.03, 4.0e4);
  EXPECT_EQ(coarse.values, (std::vector<double>{0.01, 0.1, 1, 10, 100, 1000, 1e4, 1e5}));
  const Ticks exact = log_ticks(10.0, 100.0);  // ends on the grid stay the ends
  EXPECT_EQ(exact.values.front(), 10.0);
  EXPECT_EQ(exact.values.back(), 100.0);
  EXPECT_FALSE(log_ticks(0.0, 10.0).log);  // no log axis through zero
}

TEST(Format, CompactNumbers) {
  EXPECT_EQ(fmt_compact(0.0577), "0.0577");
  EXPECT_EQ(fmt_compact(1.5), "1.5");
  EXPECT_EQ(fmt_compact(2.0), "2");
  EXPECT_EQ(fmt_compact(57.704), "57.7");
  EXPECT_EQ(fmt_compact(4519.4), "4519");
  EXPECT_EQ(fmt_compact(120000), "120k");
  EXPECT_EQ(fmt_compact(3.4e6), "3.4M");
  EXPECT_EQ(fmt_compact(999999), "1M");
  EXPECT_EQ(fmt_compact(-0.25), "-0.25");
  EXPECT_EQ(fmt_compact(9.377e-5), "9.38e-05");
  EXPECT_EQ(fmt_compact(0.0), "0");
  EXPECT_EQ(fmt_compact(std::nan("")), "\xE2\x80\x93");
  EXPECT_EQ(fmt_percent(0.52824), "52.8%");
  EXPECT_EQ(fmt_percent(0.0), "0%");
}

TEST(Escape, LabelsFromFilesCannotBreakTheMarkup) {
  EXPECT_EQ(xml_escape("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  EXPECT_EQ(xml_escape("plain text \xC3\x97 2"), "plain text \xC3\x97 2");            // UTF-8 passes through
  EXPECT_EQ(xml_escape(std::string("bell\x07") + "\ttab"), "bell\xEF\xBF\xBD\ttab");  // not allowed in XML 1.0
  EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");  // escaped once more: the text is shown as written
}

TEST(Colour, SequentialScaleEndsAndClamps) {
  EXPECT_EQ(sequential_colour(0.0), "#440154");  // viridis: dark purple at the minimum
  EXPECT_EQ(sequential_colour(1.0), "#fde725");  // yellow at the maximum
  EXPECT_EQ(sequential_colour(-3.0), "#440154");
  EXPECT_EQ(sequential_colour(7.0), "#fde725");
  EXPECT_EQ(sequential_colour(0.5), "#21918c");
  EXPECT_FALSE(prefers_dark_text("#440154"));
  EXPECT_TRUE(prefers_dark_text("#fde725"));
  EXPECT_TRUE(prefers_dark_text("#ffffff"));
}

TEST(Colour, PositionMapsTheDataRangeOntoTheScale) {
  EXPECT_DOUBLE_EQ(colour_position(1.15, 1.15, 1.22), 0.0);
  EXPECT_DOUBLE_EQ(colour_position(1.22, 1.15, 1.22), 1.0);
  EXPECT_DOUBLE_EQ(colour_position(2.0, 1.0, 3.0), 0.5);
  EXPECT_DOUBLE_EQ(colour_position(4.0, 4.0, 4.0), 0.5);  // one value: the middle of the scale
}

}  // namespace
