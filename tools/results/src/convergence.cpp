// Convergence records beside the predictions (convergence.hpp).
#include "edgc/results/convergence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "edgc/core/policy_registry.hpp"
#include "edgc/results/json_reader.hpp"
#include "edgc/results/result_document.hpp"
#include "edgc/results/verdict.hpp"

namespace edgc::results {

using nlohmann::ordered_json;

const ConvergenceRun* ConvergenceRecord::find(const std::string& policy) const {
  for (const ConvergenceRun& r : runs)
    if (r.policy == policy) return &r;
  return nullptr;
}

ConvergenceRecord read_convergence_record(const std::filesystem::path& file) {
  const ordered_json doc = read_json_file(file);
  const JsonNode root(doc, file.string());
  root.check_schema(kConvergeSchema);
  ConvergenceRecord r;
  r.file = file.string();
  const JsonNode s = root.at("settings");
  r.layers = s.at("layers").integer(1);
  r.d_model = s.at("d_model").integer(1);
  r.heads = s.at("heads").integer(1);
  r.seq_len = s.at("seq_len").integer(1);
  r.steps = s.at("steps").integer(1);
  r.seed = s.at("seed").integer();
  r.window = s.at("window").integer(1);
  r.r_min = s.at("r_min").integer(0);
  r.r_max = s.at("r_max").integer(0);
  r.step = s.at("step").integer(0);
  r.alpha = s.at("alpha").number();
  r.beta = s.at("beta").number();
  const auto p = root.find("provenance");
  if (p && p->find("world_size")) r.world_size = p->at("world_size").integer(1);
  if (const auto d = s.find("device"); d && d->one_of({"cpu", "cuda"}) == "cuda") {
    if (!p) root.fail("a record made on a GPU (settings.device cuda) must name it in provenance.gpu");
    r.gpu = p->at("gpu").string();
    r.ranks_per_gpu = p->at("ranks_per_gpu").integer(1);
  }
  const JsonNode runs = root.at("runs");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ConvergenceRun run;
    run.policy = runs[i].at("policy").string();
    run.final_val_loss = runs[i].at("final_val_loss").number();
    run.bytes_ratio = runs[i].at("bytes_ratio").non_negative();
    const JsonNode curve = runs[i].at("loss_curve");
    for (std::size_t k = 0; k < curve.size(); ++k) run.loss_curve.push_back(curve[k].number_or_nan());
    r.runs.push_back(std::move(run));
  }
  return r;
}

std::optional<ConvergenceKey> convergence_key(const ResultDocument& doc) {
  const ordered_json& a = doc.model_architecture;
  if (!a.is_object() || !doc.run) return std::nullopt;
  const auto integer = [&a](const char* k) {
    return a.contains(k) && a[k].is_number() ? static_cast<std::int64_t>(a[k].get<double>()) : std::int64_t{0};
  };
  ConvergenceKey k;
  k.layers = integer("layers");
  k.hidden = integer("hidden");
  k.heads = integer("heads");
  k.seq_len = integer("seq_len");
  k.window = doc.run->window;
  k.r_min = doc.run->r_min;
  k.r_max = doc.run->r_max;
  k.step = doc.run->step;
  k.alpha = doc.run->alpha;
  k.beta = doc.run->beta;
  return k;
}

namespace {

std::string differ(const char* what, double ours, double theirs) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s %.6g, the record's %.6g", what, ours, theirs);
  return buf;
}

std::string differ(const char* what, std::int64_t ours, std::int64_t theirs) {
  return differ(what, static_cast<double>(ours), static_cast<double>(theirs));
}

bool same(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::max(std::abs(a), std::abs(b))); }

// "+0.0081": a loss change to 2 significant digits, signed.
std::string signed_change(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2g", x);
  return buf;
}

std::string model_text(const ConvergenceRecord& r) {
  return std::to_string(r.layers) + "-layer GPT (d_model " + std::to_string(r.d_model) + ", " +
         std::to_string(r.heads) + " heads, seq_len " + std::to_string(r.seq_len) + ")";
}

}  // namespace

std::string convergence_mismatch(const ConvergenceRecord& r, const ConvergenceKey& k, const std::string& policy) {
  if (r.find(policy) == nullptr) return "the record has no run of " + policy;
  if (r.find("none") == nullptr) return "the record has no run of none to compare with";
  if (k.layers != r.layers) return differ("model.layers", k.layers, r.layers);
  if (k.hidden != r.d_model) return differ("model.hidden", k.hidden, r.d_model);
  if (k.heads != r.heads) return differ("model.heads", k.heads, r.heads);
  if (k.seq_len != r.seq_len) return differ("model.seq_len", k.seq_len, r.seq_len);
  if (core::is_baseline_policy(policy)) return "";
  if (k.window != r.window) return differ("compression.window", k.window, r.window);
  if (k.r_min != r.r_min) return differ("compression.r_min", k.r_min, r.r_min);
  if (k.r_max != r.r_max) return differ("compression.r_max", k.r_max, r.r_max);
  if (k.step != r.step) return differ("compression.step", k.step, r.step);
  if (!same(k.alpha, r.alpha)) return differ("compression.alpha", k.alpha, r.alpha);
  if (!same(k.beta, r.beta)) return differ("compression.beta", k.beta, r.beta);
  return "";
}

void add_convergence(const std::vector<ConvergenceRecord>& records, ResultDocument& doc) {
  if (records.empty()) return;
  const std::optional<ConvergenceKey> key = convergence_key(doc);
  ordered_json list = ordered_json::array();
  for (const ConvergenceRecord& r : records) {
    ordered_json e = {
        {"file", r.file}, {"model", model_text(r)}, {"steps", r.steps}, {"seed", r.seed}, {"world_size", r.world_size}};
    if (!r.gpu.empty()) {
      e["gpu"] = r.gpu;
      e["ranks_per_gpu"] = r.ranks_per_gpu;
    }
    ordered_json matches = ordered_json::object();
    ordered_json mismatches = ordered_json::object();
    for (ResultRun& run : doc.runs) {
      if (core::is_baseline_policy(run.policy)) continue;
      const std::string why = key ? convergence_mismatch(r, *key, run.policy) : "the result has no model or run";
      if (!why.empty()) {
        mismatches[run.policy] = why;
        continue;
      }
      const double loss = r.find(run.policy)->final_val_loss;
      const double none = r.find("none")->final_val_loss;
      matches[run.policy] = {{"val_loss", loss}, {"none_val_loss", none}, {"change", loss - none}};
      ordered_json& m = run.detail["measured_loss"];
      if (!m.is_object()) m = {{"change", 0.0}, {"records", ordered_json::array()}};
      m["records"].push_back({{"file", r.file}, {"steps", r.steps}, {"seed", r.seed}, {"change", loss - none}});
      double sum = 0.0;
      for (const auto& x : m["records"]) sum += x["change"].get<double>();
      m["change"] = sum / static_cast<double>(m["records"].size());
    }
    e["matches"] = matches;
    e["mismatches"] = mismatches;
    ordered_json curves = ordered_json::object();
    for (const ConvergenceRun& run : r.runs) curves[run.policy] = run.loss_curve;
    e["loss_curves"] = curves;
    list.push_back(std::move(e));
  }
  doc.sections["convergence"] = {
      {"rule",
       "a record matches policy P when it has runs of P and none, its model's layers, hidden (d_model), heads and "
       "seq_len equal the simulated model's, and (P not none) its window, r_min, r_max, step, alpha and beta equal "
       "the run's compression settings; the change is measured over the record's own steps"},
      {"records", list}};
}

std::vector<std::string> convergence_lines(const ResultDocument& doc) {
  std::vector<std::string> out;
  const auto c = doc.sections.find("convergence");
  if (c == doc.sections.end() || !c->is_object() || !c->contains("records")) return out;
  for (const ResultRun& run : doc.runs) {
    if (core::is_baseline_policy(run.policy)) continue;
    std::string changes;
    std::string where;
    for (const auto& r : (*c)["records"]) {
      if (!r.contains("matches") || !r["matches"].contains(run.policy)) continue;
      changes += (changes.empty() ? "" : ", ") + signed_change(r["matches"][run.policy]["change"].get<double>()) +
                 " (seed " + std::to_string(r.value("seed", std::int64_t{0})) + ")";
      where = r.value("model", std::string()) + " over " + std::to_string(r.value("steps", std::int64_t{0})) +
              " steps on " + std::to_string(r.value("world_size", std::int64_t{0})) + " ranks";
      if (r.contains("gpu"))
        where += r.value("ranks_per_gpu", std::int64_t{1}) > 1 ? ", sharing one " + r["gpu"].get<std::string>()
                                                               : " on " + r["gpu"].get<std::string>() + " GPUs";
    }
    if (!changes.empty())
      out.push_back(
          run.policy + ": validation loss " + changes + " against none, measured on a " + where +
          " (bundled convergence record; its gradient error here: " +
          (std::isfinite(run.gradient_error) ? fmt_sig3(100.0 * run.gradient_error) + " %" : std::string("-")) + ")");
  }
  return out;
}

}  // namespace edgc::results
