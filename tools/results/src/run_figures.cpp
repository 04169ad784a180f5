#include "edgc/results/run_figures.hpp"

namespace edgc::results {

double reduction(double base, double x) { return base > 0.0 ? 1.0 - x / base : 0.0; }

nlohmann::ordered_json breakdown_json(const sim::IterationBreakdown& b) {
  nlohmann::ordered_json j = {{"compute_s", b.compute_s},
                              {"tp_comm_s", b.tp_comm_s},
                              {"bubble_s", b.bubble_s},
                              {"exposed_dp_comm_s", b.exposed_dp_comm_s},
                              {"embedding_sync_s", b.embedding_sync_s},
                              {"optimizer_s", b.optimizer_s},
                              {"exposed_compression_s", b.exposed_compression_s},
                              {"entropy_s", b.entropy_s},
                              {"compression_s", b.compression_s},
                              {"pp_comm_s", b.pp_comm_s},
                              {"pp_compression_s", b.pp_compression_s},
                              {"pp_send_bytes", b.pp_send_bytes}};
  if (b.all_to_all_s > 0 || b.expert_sync_s > 0) {  // a mixture of experts
    j["all_to_all_s"] = b.all_to_all_s;
    j["expert_sync_s"] = b.expert_sync_s;
  }
  return j;
}

}  // namespace edgc::results
