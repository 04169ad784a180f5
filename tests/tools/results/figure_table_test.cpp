// The run-figure table (figure_table.hpp) and what it drives: keys unique, every RunFigures member in it, every
// figure through the result.json and results.jsonl writers and readers and back in the table's order, the
// averaging and its half-widths, summary.csv's and the best-points table's columns taken from the table, and an
// explicit better side for every name `sweep --best-by` accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/error.hpp"
#include "edgc/results/figure_table.hpp"
#include "edgc/results/result_document.hpp"
#include "edgc/results/sweep_document.hpp"

namespace edgc::results {
namespace {

using nlohmann::ordered_json;

// A distinct, exactly representable value per figure: 1.5, 2.5, …
double sample_value(std::size_t i) { return static_cast<double>(i) + 1.5; }

SweepRun sample_sweep_run() {
  SweepRun run;
  run.policy = "edgc";
  for (std::size_t i = 0; i < std::size(kRunFigures); ++i) {
    run.*kRunFigures[i].member = sample_value(i);
    if (kRunFigures[i].ci95 != nullptr) run.*kRunFigures[i].ci95 = sample_value(i) / 8.0;
  }
  return run;
}

std::vector<std::string> keys_of(const ordered_json& j) {
  std::vector<std::string> out;
  for (const auto& [key, value] : j.items()) out.push_back(key);
  return out;
}

TEST(RunFigureTable, KeysAreUniqueAndNoFigureNameIsAnotherOne) {
  std::set<std::string> names = {"policy"};
  for (const RunFigureSpec& f : kRunFigures) {
    EXPECT_TRUE(names.insert(f.key).second) << f.key;
    if (f.ci95 != nullptr) {
      EXPECT_TRUE(names.insert(ci95_key(f)).second) << f.key;
    }
  }
  for (const RunCountSpec& c : kRunCounts) EXPECT_TRUE(names.insert(c.key).second) << c.key;
  for (const RunFigureSpec& f : kRunFigures) {
    EXPECT_EQ(find_run_figure(f.key), &f);
    EXPECT_TRUE(is_figure_key(f.key));
    EXPECT_NE(std::string(f.unit), "") << f.key;
  }
  EXPECT_TRUE(is_figure_key("policy"));
  EXPECT_FALSE(is_figure_key("training_time_s_ci95"));
  EXPECT_EQ(find_run_figure("nonsense"), nullptr);
}

TEST(RunFigureTable, EveryMemberOfRunFiguresHasOneRow) {
  // A double added to RunFigures without a row changes the struct's size: this fails until the row is written.
  EXPECT_EQ(sizeof(RunFigures), sizeof(std::string) + std::size(kRunFigures) * sizeof(double));
  for (std::size_t i = 0; i < std::size(kRunFigures); ++i)  // member pointers compare only for equality
    for (std::size_t k = 0; k < i; ++k) {
      EXPECT_NE(kRunFigures[i].member, kRunFigures[k].member) << kRunFigures[i].key;
      if (kRunFigures[i].ci95 != nullptr) {
        EXPECT_NE(kRunFigures[i].ci95, kRunFigures[k].ci95) << kRunFigures[i].key;
      }
    }
}

TEST(RunFigureTable, EveryFigureSurvivesTheResultWriterAndReaderInTableOrder) {
  ResultRun run;
  static_cast<RunFigures&>(run) = sample_sweep_run();
  ResultDocument doc;
  doc.runs.push_back(std::move(run));
  const ordered_json j = ordered_json::parse(to_json(doc).dump());
  std::vector<std::string> expected = {"policy"};
  for (const RunFigureSpec& f : kRunFigures) expected.emplace_back(f.key);
  std::vector<std::string> written = keys_of(j.at("runs")[0]);
  written.resize(expected.size());
  EXPECT_EQ(written, expected);
  const ResultDocument back = parse_result_document(JsonNode(j, "result.json"));
  for (std::size_t i = 0; i < std::size(kRunFigures); ++i)
    EXPECT_EQ(back.runs[0].*kRunFigures[i].member, sample_value(i)) << kRunFigures[i].key;
}

TEST(RunFigureTable, EveryFigureAndHalfWidthSurvivesTheResultsLineWriterAndReader) {
  SweepRecord r;
  r.point = 1;
  r.runs = {sample_sweep_run()};
  const ordered_json j = ordered_json::parse(to_json(r).dump());
  const SweepRecord back = parse_sweep_record(JsonNode(j, "results.jsonl", "line 1"));
  for (std::size_t i = 0; i < std::size(kRunFigures); ++i) {
    const RunFigureSpec& f = kRunFigures[i];
    EXPECT_EQ(back.runs[0].*f.member, sample_value(i)) << f.key;
    EXPECT_EQ(run_figure(back.runs[0], f.key), sample_value(i)) << f.key;
    if (f.ci95 == nullptr) continue;
    EXPECT_EQ(back.runs[0].*f.ci95, sample_value(i) / 8.0) << f.key;
    EXPECT_EQ(run_figure(back.runs[0], ci95_key(f)), sample_value(i) / 8.0) << f.key;
  }
}

TEST(RunFigureTable, OptionalFiguresAreLeftOutWhenAbsentAndRequiredOnesAreNamedWhenMissing) {
  ordered_json j;
  write_figures(RunFigures{}, j);
  for (const RunFigureSpec& f : kRunFigures) EXPECT_EQ(j.contains(f.key), f.presence != Presence::kOptional) << f.key;
  for (const RunFigureSpec& f : kRunFigures) {
    if (f.presence == Presence::kOptional) continue;
    ordered_json missing = j;
    missing.erase(f.key);
    RunFigures out;
    EXPECT_THROW(read_figures(JsonNode(missing, "result.json"), true, out), ConfigError) << f.key;
    if (f.presence == Presence::kRequiredInResult) {
      read_figures(JsonNode(missing, "results.jsonl"), false, out);
      EXPECT_TRUE(std::isnan(out.*f.member)) << f.key;
    } else {
      EXPECT_THROW(read_figures(JsonNode(missing, "results.jsonl"), false, out), ConfigError) << f.key;
    }
  }
}

TEST(RunFigureTable, EveryFigureIsAveragedAndThoseWithAHalfWidthGetOne) {
  RunFigures a, b;
  for (const RunFigureSpec& f : kRunFigures) {
    a.*f.member = 1.0;
    b.*f.member = 3.0;
  }
  SweepRun one;
  average_figures({&a}, one);
  SweepRun two;
  average_figures({&a, &b}, two);
  for (const RunFigureSpec& f : kRunFigures) {
    EXPECT_EQ(one.*f.member, 1.0) << f.key;
    EXPECT_EQ(two.*f.member, 2.0) << f.key;
    if (f.ci95 == nullptr) continue;
    EXPECT_TRUE(std::isnan(one.*f.ci95)) << f.key;  // a single repeat has no interval
    EXPECT_NEAR(two.*f.ci95, 12.706 * std::sqrt(2.0) / std::sqrt(2.0), 1e-12) << f.key;  // t(1) · sd / √n
  }
}

TEST(RunFigureTable, SummaryCsvColumnsComeFromTheTable) {
  SweepRecord r;
  r.point = 0;
  r.gpus = 8;
  r.gpu = "A100";
  r.runs = {sample_sweep_run()};
  for (const bool with_ci : {false, true}) {
    const std::string csv = summary_csv({}, {r}, with_ci);
    std::string expected = "point,gpus,gpu";
    for (const std::string& c : csv_figure_columns(with_ci)) expected += ",edgc." + c;
    EXPECT_EQ(csv.substr(0, csv.find('\n')), expected + ",error");
    for (const std::string& c : csv_figure_columns(with_ci)) {
      const RunFigureSpec* f = find_run_figure(c);
      bool is_ci = false;
      for (const RunFigureSpec& s : kRunFigures) is_ci = is_ci || (s.ci95 != nullptr && s.csv && ci95_key(s) == c);
      EXPECT_TRUE((f != nullptr && f->csv) || (with_ci && is_ci)) << c;
    }
  }
}

TEST(RunFigureTable, ConsoleColumnsComeFromTheTableInTheirPositions) {
  const std::vector<const RunFigureSpec*> shown = console_figures();
  std::size_t with_header = 0;
  for (const RunFigureSpec& f : kRunFigures) with_header += f.console.header != nullptr ? 1 : 0;
  ASSERT_EQ(shown.size(), with_header);
  std::set<int> positions;
  for (const RunFigureSpec* f : shown) {
    EXPECT_EQ(find_run_figure(f->key), f);
    EXPECT_TRUE(positions.insert(f->console.position).second) << f->key;  // no two columns in one place
  }
  for (std::size_t i = 1; i < shown.size(); ++i) EXPECT_LT(shown[i - 1]->console.position, shown[i]->console.position);
  RunFigures run;
  run.training_time_s = 7200.0;
  run.gradient_error = RunFigures::kAbsent;
  EXPECT_EQ(console_cell(*find_run_figure("training_time_s"), run), "2.00");
  EXPECT_EQ(console_cell(*find_run_figure("gradient_error"), run), "-");
}

TEST(RunFigureTable, EveryNameBestByAcceptsHasAnExplicitBetterSide) {
  for (const RunFigureSpec& f : kRunFigures) {
    EXPECT_NE(f.better, Better::kNone) << f.key << ": a figure says which way is better";
    EXPECT_EQ(better_of(f.key), f.better);
  }
  for (const std::string& name : run_figure_names(true)) EXPECT_NO_THROW(better_of(name)) << name;
  EXPECT_EQ(better_of("speedup_vs_none"), Better::kHigher);
  EXPECT_EQ(better_of("training_time_s"), Better::kLower);
  EXPECT_EQ(better_of("cost_usd"), Better::kLower);
  EXPECT_EQ(better_of("training_time_s_ci95"), Better::kNone);
  EXPECT_EQ(better_of("warmup_end_iteration"), Better::kNone);
  EXPECT_THROW(better_of("nonsense"), InternalError);
}

TEST(RunFigureTable, BestByNamesAreTheFiguresThenTheirHalfWidthsThenTheCounts) {
  std::vector<std::string> expected;
  for (const RunFigureSpec& f : kRunFigures) expected.emplace_back(f.key);
  std::size_t figures = expected.size();
  for (const RunCountSpec& c : kRunCounts) expected.emplace_back(c.key);
  EXPECT_EQ(run_figure_names(false), expected);
  std::vector<std::string> with_ci = run_figure_names(true);
  for (const RunFigureSpec& f : kRunFigures)
    if (f.ci95 != nullptr) expected.insert(expected.begin() + static_cast<std::ptrdiff_t>(figures++), ci95_key(f));
  EXPECT_EQ(with_ci, expected);
}

}  // namespace
}  // namespace edgc::results
