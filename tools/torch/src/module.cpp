// edgc_torch._core: the C++ half of edgc_torch (the Python package in python/edgc_torch wraps it). Gradients come in
// as float32 numpy arrays that share memory with the torch tensors (torch.Tensor.numpy()); collectives go out through
// a Python callable that all-reduces a numpy array in place (torch.distributed on the hook's process group).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "edgc/core/controller.hpp"
#include "edgc/core/error.hpp"
#include "edgc/core/policy_registry.hpp"
#include "edgc/core/rank_rule.hpp"
#include "edgc/kernels/backend.hpp"
#include "edgc/kernels/communicator.hpp"
#include "edgc/kernels/powersgd.hpp"
#include "edgc/kernels/stage_entropy.hpp"
#include "hook_engine.hpp"
#include "settings.hpp"

namespace py = pybind11;
using edgc::torch_ext::HookEngine;

namespace {

using FloatArray = py::array_t<float, py::array::c_style>;

// The all-reduce of PowerSgd::step through a Python callable `all_reduce(array)` that sums the float32 array in place
// over the group (None: a group of one).
class PyCommunicator final : public edgc::kernels::Communicator {
 public:
  PyCommunicator(py::object all_reduce, int rank, int size) : fn_(std::move(all_reduce)), rank_(rank), size_(size) {
    if (size < 1 || rank < 0 || rank >= size)
      throw edgc::ConfigError("", "world_size", "rank " + std::to_string(rank) + " of " + std::to_string(size));
    if (size > 1 && fn_.is_none())
      throw edgc::ConfigError("", "all_reduce", "needed for a group of more than one rank");
  }
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  void all_reduce_sum(std::span<float> data) override {
    if (size_ == 1 || data.empty()) return;
    // Kernels run without the GIL (another Python thread may train meanwhile); the callable needs it back.
    const py::gil_scoped_acquire gil;
    // A view, not a copy: the callable sums into PowerSgd's own buffer.
    const py::capsule owner(data.data(), [](void*) {});
    fn_(py::array_t<float>({static_cast<py::ssize_t>(data.size())}, {sizeof(float)}, data.data(), owner));
  }

 private:
  py::object fn_;
  int rank_;
  int size_;
};

// A writable float32 C-contiguous array as a span (no copy); anything else is a ValueError naming `what`.
std::span<float> writable(const py::handle& h, const std::string& what) {
  if (!py::isinstance<py::array>(h)) throw edgc::ConfigError("", what, "must be a numpy array");
  auto a = py::reinterpret_borrow<py::array>(h);
  if (!a.dtype().is(py::dtype::of<float>()))
    throw edgc::ConfigError("", what, "must be float32, got " + std::string(py::str(a.dtype())));
  if (!(a.flags() & py::array::c_style)) throw edgc::ConfigError("", what, "must be C-contiguous");
  if (!a.writeable()) throw edgc::ConfigError("", what, "must be writable");
  return {static_cast<float*>(a.mutable_data()), static_cast<std::size_t>(a.size())};
}

// A bucket's gradients for the engine: float32 numpy arrays (host memory), or (address, numel) pairs of float32
// tensors (torch.Tensor.data_ptr(), numel()) in the engine backend's memory — the only form a device backend takes.
// The pairs are trusted as hook.py makes them from the bucket's own tensor.
std::vector<std::span<float>> gradients_of(const py::list& grads, bool device) {
  std::vector<std::span<float>> out;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const std::string what = "grads[" + std::to_string(i) + "]";
    if (py::isinstance<py::tuple>(grads[i])) {
      const auto pair = grads[i].cast<py::tuple>();
      if (pair.size() != 2 || !py::isinstance<py::int_>(pair[0]) || !py::isinstance<py::int_>(pair[1]))
        throw edgc::ConfigError("", what, "must be an (address, numel) pair of integers");
      const auto address = pair[0].cast<std::uintptr_t>();
      const auto numel = pair[1].cast<std::int64_t>();
      if (numel < 0 || (address == 0 && numel > 0) || address % alignof(float) != 0)
        throw edgc::ConfigError("", what, "is not a float32 tensor's (data_ptr, numel)");
      out.emplace_back(reinterpret_cast<float*>(address),
                       static_cast<std::size_t>(numel));  // NOLINT(performance-no-int-to-ptr)
    } else if (device) {
      throw edgc::ConfigError("", what, "a device backend takes (data_ptr, numel) pairs of its GPU's tensors");
    } else {
      out.push_back(writable(grads[i], what));
    }
  }
  return out;
}

std::vector<std::span<float>> spans_of(const py::list& arrays, const char* what) {
  std::vector<std::span<float>> out;
  for (std::size_t i = 0; i < arrays.size(); ++i)
    out.push_back(writable(arrays[i], std::string(what) + "[" + std::to_string(i) + "]"));
  return out;
}

py::object opt(const std::optional<double>& v) { return v ? py::object(py::float_(*v)) : py::object(py::none()); }

py::dict decision_dict(const edgc::core::WindowDecision& d) {
  py::list stages;
  for (const auto& r : d.stages)
    stages.append(py::dict(py::arg("rank") = r.rank, py::arg("continuous") = r.continuous,
                           py::arg("binding") = std::string(edgc::core::rank_binding_name(r.binding))));
  return py::dict(py::arg("warmup") = d.warmup, py::arg("stages") = stages,
                  py::arg("pipeline_ranks") = d.pipeline_ranks);
}

py::dict observation_dict(const edgc::core::StageObservation& o) {
  return py::dict(py::arg("entropy_gaussian") = opt(o.entropy_gaussian),
                  py::arg("entropy_histogram") = opt(o.entropy_histogram),
                  py::arg("excess_kurtosis") = opt(o.excess_kurtosis), py::arg("elements") = o.elements);
}

py::dict window_dict(const edgc::torch_ext::HookWindow& w) {
  py::list stages;
  for (std::size_t s = 0; s < w.ranks.size(); ++s) {
    py::dict d = observation_dict(w.observation.stages[s]);
    d["rank"] = w.ranks[s];
    d["step_error"] = opt(w.step_error[s]);
    d["wire_floats"] = w.wire_floats[s];
    d["dense_floats"] = w.dense_floats[s];
    d["next_rank"] = w.next.stages.empty() ? 0 : w.next.stages[s].rank;
    stages.append(d);
  }
  return py::dict(py::arg("window") = w.window, py::arg("first_iteration") = w.first_iteration,
                  py::arg("end_iteration") = w.end_iteration, py::arg("warmup") = w.warmup,
                  py::arg("sampled_iterations") = w.observation.sampled_iterations,
                  py::arg("mean_loss") = opt(w.observation.mean_loss), py::arg("stages") = stages,
                  py::arg("next") = decision_dict(w.next));
}

// Controller observation from a dict {"stages": [{"entropy_gaussian": ..., ...}], "mean_loss": ..., ...}.
edgc::core::WindowObservation observation_from(const py::dict& d) {
  edgc::core::WindowObservation o;
  auto num = [](const py::dict& m, const char* k) -> std::optional<double> {
    if (!m.contains(k) || m[k].is_none()) return std::nullopt;
    return m[k].cast<double>();
  };
  if (d.contains("window")) o.window = d["window"].cast<std::int64_t>();
  if (d.contains("first_iteration")) o.first_iteration = d["first_iteration"].cast<std::int64_t>();
  if (d.contains("end_iteration")) o.end_iteration = d["end_iteration"].cast<std::int64_t>();
  if (d.contains("sampled_iterations")) o.sampled_iterations = d["sampled_iterations"].cast<int>();
  o.mean_loss = num(d, "mean_loss");
  if (d.contains("stages"))
    for (const auto& h : d["stages"].cast<py::list>()) {
      const auto s = h.cast<py::dict>();
      o.stages.push_back({num(s, "entropy_gaussian"), num(s, "entropy_histogram"), num(s, "excess_kurtosis"),
                          s.contains("elements") ? s["elements"].cast<std::int64_t>() : 0});
    }
  return o;
}

// A controller on its own: decide() per window from observations the caller makes.
class PyController {
 public:
  PyController(const std::vector<std::pair<std::int64_t, std::int64_t>>& stage_shapes, const py::kwargs& kw) {
    edgc::torch_ext::HookSettings s = edgc::torch_ext::settings_from_kwargs(kw);
    s.controller.stage_shapes = stage_shapes;
    if (!kw.contains("stages")) s.controller.stages = static_cast<int>(std::max<std::size_t>(1, stage_shapes.size()));
    config_ = s.controller;
    controller_ = edgc::core::make_controller(config_, "");
  }
  py::dict decide(const py::dict& obs) { return decision_dict(controller_->decide(observation_from(obs))); }
  std::string policy() const { return std::string(controller_->policy()); }

 private:
  edgc::core::ControllerConfig config_;
  std::unique_ptr<edgc::core::Controller> controller_;
};

// PowerSGD with error feedback and warm start over a list of tensors, one data-parallel rank.
class PyPowerSgd {
 public:
  PyPowerSgd(std::vector<std::vector<std::int64_t>> shapes, int rank, bool error_feedback, bool warm_start,
             std::uint64_t seed, int threads) {
    edgc::kernels::BackendOptions bo;
    bo.threads = threads;
    backend_ = edgc::kernels::make_backend("cpu", bo);
    edgc::kernels::PowerSgdConfig c;
    c.rank = rank;
    c.error_feedback = error_feedback;
    c.warm_start = warm_start;
    c.seed = seed;
    powersgd_ = std::make_unique<edgc::kernels::PowerSgd>(*backend_, std::move(shapes), c);
  }
  py::dict step(const py::list& grads, py::object all_reduce, int rank, int world_size) {
    PyCommunicator comm(std::move(all_reduce), rank, world_size);
    std::vector<std::span<float>> g = spans_of(grads, "grads");
    edgc::kernels::StepStats st;
    {
      const py::gil_scoped_release nogil;
      st = powersgd_->step(g, comm);
    }
    py::list tensors;
    for (const auto& t : st.tensors)
      tensors.append(py::dict(py::arg("compressed") = t.compressed, py::arg("rank") = t.rank,
                              py::arg("wire_floats") = t.wire_floats, py::arg("relative_error") = t.relative_error,
                              py::arg("error_norm") = t.error_norm));
    return py::dict(py::arg("tensors") = tensors, py::arg("wire_floats") = st.wire_floats,
                    py::arg("dense_floats") = st.dense_floats, py::arg("compressed_tensors") = st.compressed_tensors,
                    py::arg("compute_seconds") = st.compute_seconds,
                    py::arg("communication_seconds") = st.communication_seconds);
  }
  edgc::kernels::PowerSgd& get() { return *powersgd_; }

 private:
  std::unique_ptr<edgc::kernels::Backend> backend_;
  std::unique_ptr<edgc::kernels::PowerSgd> powersgd_;
};

py::array_t<float> to_array(const std::vector<float>& v) {
  return py::array_t<float>(static_cast<py::ssize_t>(v.size()), v.data());
}

// The stage entropy kernels on a list of tensors (one stage, one iteration): all values (beta = 1) or the GDS blocks
// a hooked run or replay would read at `iteration` (tensor ids = list positions).
py::dict entropy(const py::list& arrays, double beta, std::int64_t block_bytes, std::uint64_t seed,
                 std::int64_t iteration, double bins_per_sigma) {
  edgc::core::GdsConfig g;
  g.beta = beta;
  g.block_bytes = block_bytes;
  g.seed = seed;
  edgc::core::validate(g, "");
  const edgc::core::GradientDataSampler gds(g);
  if (!(bins_per_sigma > 0.0)) throw edgc::ConfigError("", "bins_per_sigma", "must be > 0");
  const std::vector<std::span<float>> values = spans_of(arrays, "arrays");
  std::vector<std::vector<edgc::Block>> blocks(values.size());
  std::vector<edgc::kernels::StageTensor> tensors;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (beta < 1.0) blocks[i] = gds.blocks(i, static_cast<std::int64_t>(values[i].size()), iteration);
    tensors.push_back({values[i], blocks[i]});
  }
  const auto backend = edgc::kernels::make_backend("cpu");
  std::optional<edgc::core::HistogramLayout> layout;
  return observation_dict(edgc::kernels::measure_stage_entropy(*backend, tensors, beta >= 1.0, layout, bins_per_sigma));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "edgc_torch's C++ core: the edgc controller, the CPU PowerSGD kernels and the DDP hook's engine";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(std::move(p));
    } catch (const edgc::InputError& e) {
      PyErr_SetString(PyExc_ValueError, edgc::torch_ext::value_error_message(e).c_str());
    } catch (const edgc::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.def(
      "policies",
      [] {
        py::list out;
        for (const auto& p : edgc::core::policy_registry())
          out.append(py::dict(py::arg("name") = std::string(p.name), py::arg("compresses_dp") = p.compresses_dp,
                              py::arg("reads_entropy") = p.reads_entropy,
                              py::arg("compresses_pipeline") = p.compresses_pipeline,
                              py::arg("fixed_rank") = p.fixed_rank));
        return out;
      },
      "Every rank-control policy of edgc's registry, in registry order.");
  m.def("entropy", &entropy, py::arg("arrays"), py::arg("beta") = 1.0, py::arg("block_bytes") = 4096,
        py::arg("seed") = 0, py::arg("iteration") = 0, py::arg("bins_per_sigma") = 8.0,
        "Gaussian and histogram entropy (nats), excess kurtosis and elements read of float32 arrays pooled as one "
        "stage: every value (beta = 1) or GDS blocks covering a share beta of each.");
  m.def(
      "check_settings", [](const py::kwargs& kw) { edgc::torch_ext::settings_from_kwargs(kw); },
      "Validates State keywords without a model (ValueError naming the keyword).");

  py::class_<PyController>(m, "Controller", "edgc's rank controller: one decide() per window")
      .def(py::init<const std::vector<std::pair<std::int64_t, std::int64_t>>&, const py::kwargs&>(),
           py::arg("stage_shapes"))
      .def("decide", &PyController::decide, py::arg("observation"))
      .def_property_readonly("policy", &PyController::policy);

  py::class_<PyPowerSgd>(m, "PowerSGD", "PowerSGD with error feedback and warm start (CPU kernels), one rank")
      .def(py::init<std::vector<std::vector<std::int64_t>>, int, bool, bool, std::uint64_t, int>(), py::arg("shapes"),
           py::arg("rank") = 4, py::arg("error_feedback") = true, py::arg("warm_start") = true, py::arg("seed") = 0,
           py::arg("threads") = 1)
      .def("step", &PyPowerSgd::step, py::arg("grads"), py::arg("all_reduce") = py::none(), py::arg("rank") = 0,
           py::arg("world_size") = 1)
      .def("set_rank", [](PyPowerSgd& p, std::size_t i, int r) { p.get().set_rank(i, r); })
      .def("rank", [](PyPowerSgd& p, std::size_t i) { return p.get().rank(i); })
      .def("will_compress", [](PyPowerSgd& p, std::size_t i) { return p.get().will_compress(i); })
      .def("error", [](PyPowerSgd& p, std::size_t i) { return to_array(p.get().error_copy(i)); })
      .def("warm_start_q",
           [](PyPowerSgd& p, std::size_t i) {
             const auto q = p.get().warm_start_q(i);
             return to_array(std::vector<float>(q.begin(), q.end()));
           })
      .def("reset_error", [](PyPowerSgd& p, std::size_t i) { p.get().reset_error(i); })
      .def_property_readonly("steps", [](PyPowerSgd& p) { return p.get().steps(); });

  py::class_<HookEngine>(m, "Engine", "The DDP hook's per-rank state (edgc_torch.State wraps it)")
      .def(py::init([](const std::vector<std::pair<std::vector<std::int64_t>, int>>& tensors, const py::kwargs& kw) {
             std::vector<edgc::torch_ext::HookTensor> t;
             for (const auto& [shape, stage] : tensors) t.push_back({shape, stage});
             return std::make_unique<HookEngine>(edgc::torch_ext::settings_from_kwargs(kw), std::move(t));
           }),
           py::arg("tensors"))
      .def_property_readonly("iteration", &HookEngine::iteration)
      .def_property_readonly("device_memory", &HookEngine::device_memory)
      .def_property_readonly("backend", [](const HookEngine& e) { return std::string(e.backend_name()); })
      .def_property_readonly("samples_iteration", &HookEngine::samples_iteration)
      .def_property_readonly("window_closes", &HookEngine::window_closes)
      .def("observation",
           [](const HookEngine& e) {
             const std::vector<double> v = e.observation();
             return py::array_t<double>(static_cast<py::ssize_t>(v.size()), v.data());
           })
      .def("close_window",
           [](HookEngine& e, const py::array_t<double, py::array::c_style | py::array::forcecast>& a) {
             return window_dict(e.close_window({a.data(), static_cast<std::size_t>(a.size())}));
           })
      .def("stash",
           [](HookEngine& e, const std::vector<std::size_t>& ids, const py::list& grads) {
             const std::vector<std::span<float>> g = gradients_of(grads, e.device_memory());
             const std::vector<std::span<const float>> c(g.begin(), g.end());
             e.stash(ids, c);
           })
      .def("add_loss", &HookEngine::add_loss)
      .def("compress",
           [](HookEngine& e, const std::vector<std::size_t>& ids, const py::list& grads, py::object all_reduce,
              int rank, int world_size) {
             PyCommunicator comm(std::move(all_reduce), rank, world_size);
             const std::vector<std::span<float>> g = gradients_of(grads, e.device_memory());
             edgc::torch_ext::BucketResult r;
             {
               const py::gil_scoped_release nogil;
               r = e.compress(ids, g, comm);
             }
             return py::dict(py::arg("wire_floats") = r.wire_floats, py::arg("dense_floats") = r.dense_floats,
                             py::arg("compressed_tensors") = r.compressed_tensors,
                             py::arg("compute_seconds") = r.compute_seconds,
                             py::arg("communication_seconds") = r.communication_seconds);
           })
      .def("end_iteration", &HookEngine::end_iteration)
      .def("stage_rank", &HookEngine::stage_rank)
      .def("tensor_rank", &HookEngine::tensor_rank)
      .def("error", [](const HookEngine& e, std::size_t id) { return to_array(e.error(id)); })
      .def_property_readonly("in_force", [](const HookEngine& e) { return decision_dict(e.in_force()); })
      .def_property_readonly("windows",
                             [](const HookEngine& e) {
                               py::list out;
                               for (const auto& w : e.windows()) out.append(window_dict(w));
                               return out;
                             })
      .def_property_readonly("stage_shapes", [](const HookEngine& e) { return e.controller_config().stage_shapes; })
      .def_property_readonly("settings",
                             [](const HookEngine& e) {
                               const auto& c = e.controller_config();
                               const auto& g = e.gds_config();
                               return py::dict(py::arg("policy") = c.policy, py::arg("stages") = c.stages,
                                               py::arg("window") = g.window_iters, py::arg("alpha") = g.alpha,
                                               py::arg("beta") = g.beta, py::arg("r_min") = c.cqm.r_min,
                                               py::arg("r_max") = c.cqm.r_max, py::arg("step") = c.cqm.step,
                                               py::arg("warmup_floor_iters") = c.warmup.floor_iters,
                                               py::arg("warmup_ceiling_iters") = c.warmup.ceiling_iters);
                             })
      .def_property_readonly("wire_floats", &HookEngine::wire_floats)
      .def_property_readonly("dense_floats", &HookEngine::dense_floats)
      .def_property_readonly("bucket_calls", &HookEngine::bucket_calls)
      .def_property_readonly("compressors", &HookEngine::compressors);
}
