// Each chart type draws exactly one data mark per datum it was given (the count the page's self-check and
// tools/check_report.py rely on), escapes its labels, and keeps large series small.
#include "edgc/report/charts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "edgc/report/plot.hpp"
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

// The numbers of attribute `name` of every element that carries `marker`, in order.
std::vector<double> attr_values(const std::string& svg, const std::string& marker, const std::string& name) {
  std::vector<double> out;
  for (std::size_t at = svg.find(marker); at != std::string::npos; at = svg.find(marker, at + 1)) {
    const std::size_t open = svg.rfind('<', at);
    const std::size_t v = svg.find(" " + name + "=\"", open);
    out.push_back(std::stod(svg.substr(v + name.size() + 3)));
  }
  return out;
}

ScatterChart two_group_chart() {
  ScatterChart c;
  c.groups = {{"front", "#e15759", 6.0, true, false}, {"other", "#8c9aa8", 4.5, false, false}};
  return c;
}

TEST(Scatter, OneCirclePerPointAndOnlyTheFrontStaircaseJoinsThem) {
  ScatterChart c = two_group_chart();
  c.points = {{8.6, 22000, "256xH100 & <spot>", 0},
              {15.6, 19900, "128xH100", 0},
              {17.5, 22400, "128xH100 none", 1},
              {44.4, 41000, "256xV100", 1},
              {56.9, 18200, "32xH100", 0}};
  std::string svg = render(c, "sc");
  EXPECT_EQ(count(svg, "<circle class=\"mark point\""), 5U);
  EXPECT_EQ(count(svg, "class=\"front\""), 0U);  // options are not joined unless asked
  EXPECT_EQ(count(svg, "<path"), 0U);
  EXPECT_NE(svg.find("256xH100 &amp; &lt;spot&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<spot>"), std::string::npos);

  c.front_staircase = true;
  svg = render(c, "sc");
  ASSERT_EQ(count(svg, "class=\"front\""), 1U);
  // The staircase only moves horizontally and vertically: H and V after the first point, never L.
  const std::size_t d = svg.find(" d=\"", svg.find("class=\"front\"") - 200);
  const std::string path = svg.substr(d + 4, svg.find('"', d + 4) - d - 4);
  EXPECT_EQ(path.find('L'), std::string::npos) << path;
  EXPECT_EQ(std::count(path.begin(), path.end(), 'H'), 2) << path;
  EXPECT_EQ(std::count(path.begin(), path.end(), 'V'), 2) << path;
}

TEST(Scatter, ValuesSpanningADecadeGetALogAxisAndZeroKeepsItLinear) {
  ScatterChart c = two_group_chart();
  c.points = {{20, 1, "a", 1}, {200, 2, "b", 1}, {2000, 3, "c", 1}};
  std::string svg = render(c, "log");
  EXPECT_NE(svg.find("log scale"), std::string::npos);
  const std::vector<double> cx = attr_values(svg, "class=\"mark point\"", "cx");
  ASSERT_EQ(cx.size(), 3U);
  EXPECT_NEAR(cx[1] - cx[0], cx[2] - cx[1], 0.15);  // equal ratios, equal distances
  c.x_scale = AxisScale::kLinear;
  EXPECT_EQ(render(c, "lin").find("log scale"), std::string::npos);
  c.x_scale = AxisScale::kAuto;
  c.points.push_back({0, 4, "zero", 1});  // a log axis cannot place 0
  svg = render(c, "zero");
  EXPECT_EQ(svg.find("log scale"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle class=\"mark point\""), 4U);
}

TEST(Scatter, LabelsNeverOverlapAndThoseThatDoNotFitFallBackToShortOnes) {
  ScatterChart c = two_group_chart();
  // A tight cluster of long labels, as when several cluster sizes of one GPU land at nearly the same point.
  for (int i = 0; i < 12; ++i)
    c.points.push_back({10.0 + 0.05 * i, 100.0 + 0.2 * i, "128xH100-SXM5-80GB tp4 pp4 dp" + std::to_string(i), 0,
                        "#" + std::to_string(i + 1)});
  c.points.push_back({90.0, 500.0, "far away", 0, "#13"});
  const std::string svg = render(c, "crowd");
  const std::vector<double> xs = attr_values(svg, "class=\"point-label\"", "x");
  const std::vector<double> ys = attr_values(svg, "class=\"point-label\"", "y");
  ASSERT_EQ(xs.size(), ys.size());
  EXPECT_LT(xs.size(), 13U);  // not all long labels fit
  EXPECT_GE(xs.size(), 3U);
  EXPECT_NE(svg.find(">far away</text>"), std::string::npos);
  EXPECT_NE(svg.find(">#"), std::string::npos);  // short labels took some of the rest
  std::vector<std::string> texts;
  for (std::size_t at = svg.find("class=\"point-label\""); at != std::string::npos;
       at = svg.find("class=\"point-label\"", at + 1)) {
    const std::size_t open = svg.find('>', at) + 1;
    texts.push_back(svg.substr(open, svg.find('<', open) - open));
  }
  ASSERT_EQ(texts.size(), xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i)
    for (std::size_t j = i + 1; j < xs.size(); ++j) {
      const plot::Box a{xs[i], ys[i] - 10, text_width(texts[i], 11), 13};
      const plot::Box b{xs[j], ys[j] - 10, text_width(texts[j], 11), 13};
      EXPECT_FALSE(a.overlaps(b)) << texts[i] << " / " << texts[j];
    }
}

TEST(Scatter, ThresholdsAreDrawnAcrossThePlot) {
  ScatterChart c = two_group_chart();
  c.points = {{1, 10, "a", 0}, {2, 30, "b", 1}};
  c.thresholds = {{50.0, "budget"}};
  const std::string svg = render(c, "th");
  EXPECT_EQ(count(svg, "class=\"threshold\""), 1U);
  EXPECT_NE(svg.find(">budget<"), std::string::npos);
}

TEST(LineChart, ValuesOverCategoriesAreDotsNotLines) {
  LineChart c;
  c.x_categories = {"256xV100-SXM2-32GB tp4 pp4 dp16", "b", "c"};
  c.series.push_back({.name = "edgc", .x = {0, 1, 2}, .y = {1, 2, 1.5}});
  const std::string svg = render(c, "cat");
  ASSERT_EQ(count(svg, "<path class=\"mark series\""), 1U);
  const std::size_t d = svg.find(" d=\"", svg.find("<path class=\"mark series\""));
  const std::string path = svg.substr(d + 4, svg.find('"', d + 4) - d - 4);
  EXPECT_EQ(path.find('L'), std::string::npos) << path;
  EXPECT_EQ(std::count(path.begin(), path.end(), 'M'), 3) << path;
  // The long first label, rotated, ends at its band's centre and must not run off the chart's left edge.
  const std::size_t label = svg.find(">256xV100-SXM2-32GB tp4 pp4 dp16<");
  const std::size_t open = svg.rfind("<text", label);
  const double x = std::stod(svg.substr(svg.find(" x=\"", open) + 4));
  EXPECT_GE(x - 0.82 * text_width("256xV100-SXM2-32GB tp4 pp4 dp16", 12), 0.0);
}

TEST(Heatmap, TheColourScaleSpansAtLeastTheNoise) {
  Heatmap h;
  h.x_categories = {"a", "b"};
  h.y_categories = {"y"};
  h.value_suffix = "\xC3\x97";
  h.values = {1.100, 1.104};
  std::string svg = render(h, "n0");
  EXPECT_EQ(cell_fill(svg, "1.104\xC3\x97"), "#fde725");  // without noise: the ends of the scale
  h.noise = 0.05;
  svg = render(h, "n1");
  EXPECT_NE(cell_fill(svg, "1.104\xC3\x97"), "#fde725");
  EXPECT_NE(cell_fill(svg, "1.1\xC3\x97"), "#440154");
  EXPECT_NE(svg.find("class=\"legend-max\">1.152\xC3\x97<"), std::string::npos) << svg;
  EXPECT_NE(svg.find("class=\"legend-min\">1.052\xC3\x97<"), std::string::npos);
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
