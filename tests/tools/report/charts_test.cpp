// Each chart type draws exactly one data mark per datum it was given (the count the page's self-check and
// tools/check_report.py rely on), escapes its labels, and keeps large series small.
#include "edgc/report/charts.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "edgc/report/svg.hpp"
#include "report_test_util.hpp"

namespace {

using namespace edgc::report;
using edgc::report::test::count;

// The fill of the cell whose tooltip ends with `value`.
std::string cell_fill(const std::string& svg, const std::string& value) {
  const std::size_t title = svg.find(": " + value + "</title>");
  const std::size_t rect = svg.rfind("<rect class=\"mark cell\"", title);
  const std::size_t fill = svg.find("fill=\"", rect);
  return svg.substr(fill + 6, 7);
}

TEST(LineChart, OnePathPerSeriesWithValues) {
  LineChart c;
  c.title = "entropy";
  c.series.push_back({.name = "stage 0", .x = {0, 5, 10}, .y = {-4, -4.5, -5}});
  c.series.push_back({.name = "stage 1", .x = {0, 5, 10}, .y = {kNoValue, -4.7, kNoValue}});
  c.series.push_back({.name = "stage 2", .x = {0, 5, 10}, .y = {kNoValue, kNoValue, kNoValue}});  // nothing to draw
  c.markers.push_back({40, "warm-up ends"});
  const std::string svg = render(c, "t");
  EXPECT_EQ(count(svg, "<path class=\"mark series\""), 2U);
  EXPECT_EQ(count(svg, "class=\"marker\""), 1U);
  EXPECT_EQ(count(svg, "<svg"), 1U);
  EXPECT_EQ(count(svg, "</svg>"), 1U);
  EXPECT_NE(svg.find("id=\"t\""), std::string::npos);
}

TEST(LineChart, StepSeriesHoldValuesAndLongSeriesAreThinned) {
  LineChart steps;
  steps.series.push_back({.name = "stage 0", .x = {0, 40, 120}, .y = {0, 64, 64}, .step = true});
  const std::string s = render(steps, "steps");
  const std::size_t d = s.find(" d=\"M");
  ASSERT_NE(d, std::string::npos);
  EXPECT_NE(s.find('H', d), std::string::npos);  // horizontal, then vertical moves
  EXPECT_NE(s.find('V', d), std::string::npos);

  LineChart big;
  Series many{.name = "noisy"};
  for (int i = 0; i < 100000; ++i) {
    many.x.push_back(i);
    many.y.push_back(std::sin(i * 0.01) + (i % 7) * 0.01);
  }
  big.series.push_back(many);
  const std::string b = render(big, "big");
  EXPECT_EQ(count(b, "<path class=\"mark series\""), 1U);
  EXPECT_LT(count(b, "L"), 4U * 600U);  // at most four points per pixel column
  EXPECT_LT(b.size(), 100000U);
}

TEST(StackedBars, OneRectPerPositiveSegment) {
  StackedBarChart c;
  c.components = {"compute", "TP comm", "bubble", "exposed DP", "exposed compression"};
  c.categories = {"none", "static", "edgc"};
  c.values = {{1.8, 0.46, 0.57, 54.9, 0.0}, {1.8, 0.46, 0.57, 25.8, 0.094}, {1.8, 0.46, 0.57, 24.0, 0.073}};
  const std::string svg = render(c, "bars");
  EXPECT_EQ(count(svg, "<rect class=\"mark bar\""), 14U);
  EXPECT_NE(svg.find(">57.7<"), std::string::npos);  // the total above the first bar
}

TEST(Heatmap, CellsWithDataAreMarksAndEmptyOnesHatched) {
  Heatmap h;
  h.x_categories = {"5", "10", "20"};
  h.y_categories = {"8", "16", "32"};
  h.values = {1.19, 1.20, 1.22, 1.17, 1.18, 1.19, 1.15, 1.16, kNoValue};
  h.value_suffix = "\xC3\x97";
  const std::string svg = render(h, "hm");
  EXPECT_EQ(count(svg, "<rect class=\"mark cell\""), 8U);
  EXPECT_EQ(count(svg, "<rect class=\"cell-empty\""), 1U);
  EXPECT_NE(svg.find("url(#hm-hatch)"), std::string::npos);
  // The smallest value takes the dark end of the scale, the largest the bright end; the legend names both.
  EXPECT_EQ(cell_fill(svg, "1.15\xC3\x97"), "#440154");
  EXPECT_EQ(cell_fill(svg, "1.22\xC3\x97"), "#fde725");
  EXPECT_NE(svg.find("class=\"legend-max\">1.22\xC3\x97<"), std::string::npos);
  EXPECT_NE(svg.find("class=\"legend-min\">1.15\xC3\x97<"), std::string::npos);
}

TEST(Scatter, OneCirclePerPointAndTheFrontJoined) {
  ScatterChart c;
  c.points = {{8.6, 22000, "256xH100 & <spot>", true},
              {15.6, 19900, "128xH100", true},
              {17.5, 22400, "128xH100 none", false},
              {44.4, 41000, "256xV100", false},
              {56.9, 18200, "32xH100", true}};
  const std::string svg = render(c, "sc");
  EXPECT_EQ(count(svg, "<circle class=\"mark point\""), 5U);
  EXPECT_EQ(count(svg, "class=\"front\""), 1U);
  EXPECT_NE(svg.find("256xH100 &amp; &lt;spot&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<spot>"), std::string::npos);
}

TEST(Charts, TitlesAndNamesAreEscaped) {
  LineChart c;
  c.title = "a <b> & \"c\"";
  c.series.push_back({.name = "x<y", .x = {0, 1}, .y = {1, 2}});
  const std::string svg = render(c, "esc");
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("x&lt;y"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("x<y"), std::string::npos);
}

TEST(Charts, EmptyChartsSayNoData) {
  EXPECT_NE(render(LineChart{}, "e1").find(">no data<"), std::string::npos);
  EXPECT_NE(render(ScatterChart{}, "e2").find(">no data<"), std::string::npos);
  Heatmap h;
  h.x_categories = {"a"};
  h.y_categories = {"b"};
  h.values = {kNoValue};
  EXPECT_NE(render(h, "e3").find(">no data<"), std::string::npos);
}

}  // namespace
