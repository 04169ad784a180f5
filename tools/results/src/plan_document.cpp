#include "edgc/results/plan_document.hpp"

#include <cmath>

#include "edgc/core/atomic_file.hpp"
#include "edgc/core/error.hpp"

namespace edgc::results {

using nlohmann::ordered_json;

namespace {

ordered_json finite_or_null(double x) { return std::isfinite(x) ? ordered_json(x) : ordered_json(nullptr); }

}  // namespace

ordered_json to_json(const PlanDocument& doc) {
  ordered_json target = {{"iterations", doc.target_iterations}};
  if (doc.target_tokens) target = {{"tokens", *doc.target_tokens}, {"iterations", doc.target_iterations}};
  ordered_json options = ordered_json::array();
  for (const PlanDocument::Option& o : doc.options)
    options.push_back({{"label", o.label},
                       {"gpu", o.gpu},
                       {"gpus", o.gpus},
                       {"tp", o.tp},
                       {"pp", o.pp},
                       {"dp", o.dp},
                       {"policy", o.policy},
                       {"training_time_s", o.training_time_s},
                       {"cost_usd", o.cost_usd},
                       {"speedup_vs_none", o.speedup_vs_none},
                       {"gradient_error", std::isfinite(o.gradient_error) ? ordered_json(o.gradient_error) : nullptr},
                       {"pareto", o.pareto},
                       {"iteration_time_s", finite_or_null(o.iteration_time_s)},
                       {"peak_memory_GiB", finite_or_null(o.peak_memory_GiB)},
                       {"memory_capacity_GiB", finite_or_null(o.memory_capacity_GiB)}});
  return {{"schema", kPlanSchema},
          {"spec", doc.spec},
          {"base", doc.base},
          {"target", target},
          {"pays_threshold", doc.pays_threshold},
          {"max_error", doc.max_error ? ordered_json(*doc.max_error) : nullptr},
          {"options", options},
          {"infeasible", doc.infeasible},
          {"verdicts", doc.verdicts}};
}

PlanDocument parse_plan_document(const JsonNode& root) {
  root.check_schema(kPlanSchema);
  PlanDocument out;
  out.spec = root.optional_string("spec");
  out.base = root.optional_string("base");
  if (const auto t = root.find("target")) {
    out.target_iterations = t->optional_integer("iterations");
    if (const auto tok = t->find("tokens")) out.target_tokens = tok->non_negative();
  }
  if (const auto p = root.find("pays_threshold")) out.pays_threshold = p->number();
  if (const auto m = root.find("max_error"); m && !m->raw().is_null()) out.max_error = m->number();
  const JsonNode options = root.at("options");
  for (std::size_t i = 0; i < options.size(); ++i) {
    const JsonNode o = options[i];
    PlanDocument::Option p;
    p.label = o.at("label").string();
    p.training_time_s = o.number_at("training_time_s");
    p.cost_usd = o.number_at("cost_usd");
    p.speedup_vs_none = o.optional_number("speedup_vs_none");
    p.gradient_error = o.optional_number("gradient_error");
    p.iteration_time_s = o.optional_number("iteration_time_s");
    p.peak_memory_GiB = o.optional_number("peak_memory_GiB");
    p.memory_capacity_GiB = o.optional_number("memory_capacity_GiB");
    p.gpu = o.optional_string("gpu");
    p.policy = o.optional_string("policy");
    p.gpus = o.optional_integer("gpus");
    p.tp = o.optional_integer("tp");
    p.pp = o.optional_integer("pp");
    p.dp = o.optional_integer("dp");
    if (const auto pareto = o.find("pareto")) p.pareto = pareto->boolean();
    out.options.push_back(std::move(p));
  }
  for (auto [key, list] : {std::pair{"infeasible", &out.infeasible}, {"verdicts", &out.verdicts}})
    if (const auto v = root.find(key))
      for (std::size_t i = 0; i < v->size(); ++i) list->push_back((*v)[i].string());
  return out;
}

PlanDocument read_plan_document(const std::filesystem::path& file) {
  const ordered_json j = read_json_file(file);
  return parse_plan_document(JsonNode(j, file.string()));
}

}  // namespace edgc::results
