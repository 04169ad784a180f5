#include "edgc/engine/trace_health.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "edgc/results/table.hpp"

namespace edgc::engine {
namespace {

std::string stage_list(const std::vector<std::int64_t>& stages) {
  std::string out;
  for (const std::int64_t s : stages) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return out;
}

}  // namespace

void TraceHealth::add(const traces::IterationData& data) {
  ++iterations_;
  std::int64_t bad = 0;
  for (const traces::TensorData& t : data.tensors) {
    std::int64_t zeros = 0;
    for (const float v : t.values) {
      bad += std::isfinite(v) ? 0 : 1;
      zeros += v == 0.0F ? 1 : 0;
    }
    zeros_ += zeros;
    values_ += static_cast<std::int64_t>(t.values.size());
  }
  non_finite_ += bad;
  iterations_with_non_finite_ += bad > 0 ? 1 : 0;
}

std::vector<std::string> TraceHealth::warnings(const std::string& trace_dir) const {
  std::vector<std::string> out;
  if (iterations_ == 0) return out;
  const std::string inspect = " ('edgc trace inspect " + trace_dir + "' shows where)";
  if (values_ > 0 && non_finite_ == values_) {
    out.push_back(trace_dir +
                  ": every gradient value is NaN or Inf: no entropy can be measured and the compression figures "
                  "mean nothing" +
                  inspect);
  } else if (values_ > 0 && zeros_ == values_ - non_finite_) {
    out.push_back(trace_dir +
                  ": every finite gradient value is zero: the entropy is -inf and there is nothing to compress" +
                  inspect);
  }
  if (non_finite_ > 0 && non_finite_ < values_) {
    out.push_back(trace_dir + ": " + std::to_string(non_finite_) + " of " + std::to_string(values_) +
                  " gradient values are NaN or Inf, in " + std::to_string(iterations_with_non_finite_) + " of " +
                  std::to_string(iterations_) +
                  " iterations: the entropy leaves them out, but PowerSGD's error feedback can carry them into later "
                  "steps of the emulated ranks" +
                  inspect);
  }
  if (iterations_ == 1)
    out.push_back(trace_dir +
                  ": one captured iteration: the entropy has no trend and the controller decides once, from a single "
                  "window (capture more iterations)");
  return out;
}

std::vector<std::string> trace_warnings(const results::ResultDocument& result) {
  std::vector<std::string> out;
  const auto entropy = result.sections.find("entropy");
  if (entropy == result.sections.end() || !entropy->is_object() || entropy->value("source", "") != "trace") return out;
  const std::string path = entropy->value("path", std::string("the trace"));
  if (entropy->value("captured_iterations", std::int64_t{0}) == 1)
    out.push_back(path +
                  ": one captured iteration: its entropy stands for the whole run, a constant with no trend for the "
                  "controller to follow (capture more iterations)");
  if (!result.entropy_series) return out;
  std::vector<std::int64_t> dead;
  for (const results::StageEntropy& s : result.entropy_series->stages) {
    const auto finite = [](double v) { return std::isfinite(v); };
    if (std::none_of(s.gaussian_nats.begin(), s.gaussian_nats.end(), finite) &&
        std::none_of(s.histogram_nats.begin(), s.histogram_nats.end(), finite))
      dead.push_back(s.stage);
  }
  if (dead.empty()) return out;
  std::string which = "no simulated stage has";
  if (dead.size() < result.entropy_series->stages.size())
    which = (dead.size() == 1 ? "simulated stage " : "simulated stages ") + stage_list(dead) + " never " +
            (dead.size() == 1 ? "has" : "have");
  out.push_back(path + ": " + which +
                " a finite gradient entropy in the run: the trace's gradients there are all NaN/Inf or all zero, so "
                "the controller has nothing to decide on ('edgc trace inspect " +
                path + "' shows which)");
  return out;
}

std::string model_family(const std::string& name) {
  static const std::vector<std::string> sizes = {"tiny", "small", "base", "medium", "large", "xl", "mini"};
  std::string out;
  std::string word;
  const auto flush = [&] {
    if (word.size() > 1 && std::find(sizes.begin(), sizes.end(), word) == sizes.end())
      out += (out.empty() ? "" : "-") + word;
    word.clear();
  };
  for (const char c : name) {
    if (std::isalpha(static_cast<unsigned char>(c)))
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else
      flush();
  }
  flush();
  return out;
}

double traced_model_parameters(const traces::Manifest& trace) {
  const nlohmann::json model = nlohmann::json::parse(trace.model_json, nullptr, false);
  double parameters = 0.0;
  if (model.is_object() && model.contains("parameters") && model["parameters"].is_number())
    parameters = model["parameters"].get<double>();
  if (!(parameters > 0.0))
    for (const std::int64_t n : traces::stage_elements(trace)) parameters += static_cast<double>(n);
  return parameters;
}

std::string trace_model_mismatch(const traces::Manifest& trace, const std::string& trace_dir, const std::string& name,
                                 double parameters, const std::string& stands_for) {
  const double trace_parameters = traced_model_parameters(trace);
  std::vector<std::string> why;
  const std::string from = model_family(trace.model_name);
  const std::string to = model_family(name);
  if (!from.empty() && !to.empty() && from != to)
    why.push_back("another model family ('" + trace.model_name + "' vs '" + name + "')");
  if (trace_parameters > 0.0 && parameters > 0.0) {
    const double ratio = std::max(trace_parameters, parameters) / std::min(trace_parameters, parameters);
    if (ratio > kSizeClassFactor)
      why.push_back("another size class (" + results::fmt_g(trace_parameters, 3) + " parameters vs " +
                    results::fmt_g(parameters, 3) + ", " + results::fmt_g(ratio, 3) + "x apart)");
  }
  if (why.empty()) return {};
  std::string joined;
  for (const std::string& w : why) joined += (joined.empty() ? "" : " and ") + w;
  return trace_dir + ": recorded from " + joined + ": its " + stands_for +
         " in for the simulated model's, which may differ (a trace of "
         "the simulated model, or one of its size, is stronger evidence)";
}

}  // namespace edgc::engine
