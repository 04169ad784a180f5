// `edgc trace inspect` (engine::inspect_trace, written by edgc/results/trace_inspection.hpp) and `edgc trace synth`.
#include <cstdint>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "edgc/core/checked_int.hpp"
#include "edgc/core/error.hpp"
#include "edgc/engine/trace_inspection.hpp"
#include "edgc/results/trace_inspection.hpp"
#include "edgc/traces/traces.hpp"

namespace edgc::cli {
namespace {

int run_inspect(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string dir;
  std::int64_t rows = 3;
  opts.add_options()("trace", po::value(&dir)->required(), "trace directory (holds trace.json)")(
      "json", "print one JSON document: statistics keyed by iteration and tensor name")(
      "rows", po::value(&rows)->default_value(3), "iterations shown in the per-tensor table (0 = all)");
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse("trace inspect", "DIR [--json] [--rows N]", opts, pos, args, vm)) return 0;
  if (rows < 0) throw UsageError("--rows", "must be >= 0 (0 shows every iteration), got " + std::to_string(rows));
  // Everything is read and checked before anything is printed: bad input gives an error and no partial output.
  const results::TraceInspection inspection = engine::inspect_trace(dir);
  std::ostringstream text;
  if (vm.count("json") != 0U) {
    text << results::to_json(inspection).dump(1) << "\n";
  } else {
    results::print_trace_inspection(text, inspection, static_cast<std::size_t>(rows));
  }
  std::cout << text.str();
  return 0;
}

std::vector<std::int64_t> parse_shape(const std::string& text, const std::string& option = "--shapes") {
  const UsageError too_large(option,
                             "'" + text + "' has more than 2^42 elements: larger than any tensor edgc can hold");
  std::vector<std::int64_t> shape;
  std::stringstream ss(text);
  std::string dim;
  while (std::getline(ss, dim, 'x')) {
    try {  // what a trace may hold: read_manifest refuses more
      shape.push_back(parse_integer<std::int64_t>(dim, 1, traces::kMaxTensorElements));
    } catch (const IntegerError& e) {
      if (e.kind() == IntegerError::Kind::kAbove) throw too_large;
      throw UsageError(option, "'" + text + "' is not a shape like 256x768 (positive dimensions)");
    }
  }
  if (shape.empty()) throw UsageError(option, "empty shape");
  if (!checked_product(shape, traces::kMaxTensorElements)) throw too_large;
  return shape;
}

int run_synth(const std::vector<std::string>& args) {
  traces::SynthOptions o;
  std::string out;
  std::string shapes = "256x768,256x256,1024x256,256x1024,256";
  std::string dtype = "f32";
  std::string mode = "full";
  po::options_description opts;
  opts.add_options()("out", po::value(&out)->required(), "output trace directory (must not exist or be empty)")(
      "shapes", po::value(&shapes)->default_value(shapes), "comma-separated tensor shapes of one layer")(
      "layers", po::value(&o.layers)->default_value(o.layers), "layers (each holds one tensor per shape)")(
      "stages", po::value(&o.stages)->default_value(o.stages), "pipeline stages (contiguous runs of layers)")(
      "iterations", po::value(&o.iterations)->default_value(o.iterations), "captured iterations")(
      "stride", po::value(&o.iteration_stride)->default_value(o.iteration_stride),
      "training steps between captured iterations")("rank", po::value(&o.rank)->default_value(o.rank),
                                                    "rank of each 2-D tensor's signal part")(
      "signal", po::value(&o.signal_std)->default_value(o.signal_std), "element std of the signal part")(
      "noise", po::value(&o.noise_std)->default_value(o.noise_std), "element std of the noise at the first iteration")(
      "entropy-decay", po::value(&o.entropy_decay_nats)->default_value(o.entropy_decay_nats),
      "fall of the noise's Gaussian entropy over the run, in nats (ln sigma falls linearly)")(
      "dtype", po::value(&dtype)->default_value(dtype), "storage type: f32, f16 or bf16")(
      "mode", po::value(&mode)->default_value(mode), "full tensors or sampled blocks: full | blocks")(
      "fraction", po::value(&o.fraction)->default_value(o.fraction), "share of elements captured in blocks mode")(
      "block-elems", po::value(&o.block_elems)->default_value(o.block_elems), "elements per block in blocks mode")(
      "seed", po::value(&o.seed)->default_value(o.seed), "random seed")(
      "boundaries", po::value<std::string>(),
      "also write stage-boundary gradients of this tokens x hidden shape (e.g. 128x64) for stages 1.. (format 1.1)");
  po::variables_map vm;
  if (!parse("trace synth", "--out DIR [options]", opts, {}, args, vm)) return 0;
  o.layer_shapes.clear();
  std::stringstream ss(shapes);
  std::string one;
  while (std::getline(ss, one, ',')) o.layer_shapes.push_back(parse_shape(one));
  const auto d = traces::parse_manifest_dtype(dtype);
  if (!d || *d == traces::Dtype::kI64) throw UsageError("--dtype", "unknown dtype '" + dtype + "' (f32, f16, bf16)");
  o.dtype = *d;
  if (vm.count("boundaries") != 0U) {
    o.boundary_shape = parse_shape(vm["boundaries"].as<std::string>(), "--boundaries");
    if (o.boundary_shape.size() != 2) throw UsageError("--boundaries", "needs tokens x hidden, e.g. 128x64");
  }
  if (mode != "full" && mode != "blocks") throw UsageError("--mode", "must be full or blocks, got '" + mode + "'");
  o.mode = mode == "full" ? traces::CaptureMode::kFull : traces::CaptureMode::kBlocks;
  o.command = "edgc trace synth";
  for (const auto& a : args) o.command += " " + a;
  const traces::Manifest m = traces::synthesize_trace(o, out);
  std::int64_t params = 0;
  for (const auto& t : m.tensors) params += t.numel();
  std::cout << "wrote " << out << ": " << m.iterations.size() << " iterations, " << m.tensors.size() << " tensors, "
            << results::with_commas(params) << " parameters, " << m.num_stages << " stages\n";
  return 0;
}

}  // namespace

void add_trace_commands(std::vector<Command>& commands) {
  commands.push_back({"trace inspect", "tensors, stages, iterations and gradient statistics of a trace", run_inspect});
  commands.push_back({"trace synth", "write a synthetic trace (low-rank signal + decaying noise)", run_synth});
}

}  // namespace edgc::cli
