"""`TraceRecorder`: writes the gradients of a PyTorch training run as an edgc trace (traces/FORMAT.md).

Design choices, and why:

* The recorder only reads `p.grad` after `backward()`; it never touches the model or the optimizer, so
  attaching it cannot change the training run it observes.
* Sampled tensors keep the *same* blocks at every iteration, so that per-tensor statistics (and anything
  derived from them, such as entropy estimates) are comparable across iterations rather than mixing
  sampling noise into the temporal signal.
* Blocks are aligned slots of `block_elems` consecutive flattened elements: non-overlapping by
  construction, cheap to gather, and for row-major matrices whose rows divide `block_elems` they are whole
  rows.
* Stage-boundary gradients (format 1.1) are caught by a forward pre-hook on the first layer module of each
  stage s >= 1, which puts a tensor hook on that module's input: the gradient of the loss with respect to the
  activations stage s receives, which is exactly what stage s would send backward to stage s-1 in pipeline
  training. The first `micro_batch` sequences of the batch are kept (one pipeline message), as a
  (micro_batch * sequence) x hidden matrix. Hooks only read gradients, so the run is unchanged.
* Every iteration file and `trace.json` are replaced atomically, and the manifest is rewritten after each
  recorded iteration, so a capture killed at any moment still leaves a valid (shorter) trace.
"""

import datetime
import json
import math
import os
import re
import warnings

import numpy as np
import torch

from . import safetensors_io

FORMAT = "edgc.trace"
VERSION = 1  # written as 1.1 when the trace holds stage-boundary gradients

# trace dtype -> (torch dtype used for the round trip, safetensors dtype name)
DTYPES = {"f32": (torch.float32, "F32"), "f16": (torch.float16, "F16"), "bf16": (torch.bfloat16, "BF16")}

# A numeric component followed by more of the name: "blocks.3.attn.weight" (3) and, in an nn.Sequential without
# named layers, "0.weight" (0).
DEFAULT_LAYER_REGEX = r"(?:^|\.)(\d+)\."
# Parameters outside the layers that belong to the first stage (they consume the input); a learned position table is
# often named just "pos".
DEFAULT_INPUT_REGEX = r"(^|[._])(embed\w*|embedding\w*|wte|wpe|tok_emb|pos_emb|pos|token\w*|position\w*)([._]|$)"
# Parameters outside the layers that the default placement puts on the last stage knowingly (they produce the output).
# Any other layer-less name lands there too, with a warning: it may belong to the first stage.
OUTPUT_REGEX = r"(^|[._])(head\w*|lm_head|ln_f|final\w*|norm\w*|out\w*|classifier|logits?|decoder|proj\w*|fc\w*)([._]|$)"


def parse_layer(name, layer_regex=DEFAULT_LAYER_REGEX):
    """Layer index from a parameter name (first group of the first match), or -1 outside the layers."""
    m = re.search(layer_regex, name)
    return int(m.group(1)) if m else -1


def stage_for(layer, num_layers, num_stages, is_input):
    """Default pipeline placement: layers split evenly in order; the rest at the first or last stage."""
    if layer >= 0:
        return min(layer * num_stages // max(num_layers, 1), num_stages - 1)
    return 0 if is_input else num_stages - 1


def choose_blocks(numel, fraction, block_elems, rng):
    """Pick the sampled blocks of a tensor, or None when they would cover all of it.

    Returns an int64 array [B, 2] of (offset, length), sorted, with B = ceil(fraction * numel / block_elems)
    (at least 1) distinct aligned slots; the last slot is shorter when block_elems does not divide numel.
    The small epsilon keeps e.g. 0.3 * 1000 / 100 from rounding up to 4 blocks.
    """
    if numel < 1 or block_elems < 1 or not 0.0 < fraction <= 1.0:
        raise ValueError(f"choose_blocks: bad numel={numel}, block_elems={block_elems}, fraction={fraction}")
    slots = -(-numel // block_elems)
    want = max(1, math.ceil(fraction * numel / block_elems - 1e-9))
    if want >= slots:
        return None
    chosen = np.sort(rng.choice(slots, size=want, replace=False)).astype(np.int64)
    offsets = chosen * block_elems
    lengths = np.minimum(block_elems, numel - offsets)
    return np.stack([offsets, lengths], axis=1).astype(np.int64)


class TensorSpec:
    """What the recorder captures for one parameter; `blocks` is None in full mode."""

    def __init__(self, index, name, param, layer, stage, blocks):
        self.index, self.name, self.param = index, name, param
        self.shape = [int(d) for d in param.shape]
        self.numel = int(param.numel())
        self.layer, self.stage, self.blocks = layer, stage, blocks
        self.mode = "full" if blocks is None else "blocks"
        self.captured = self.numel if blocks is None else int(blocks[:, 1].sum())
        self._gather = None  # torch index of the sampled elements, on the gradient's device

    def gather_index(self, device):
        if self._gather is None or self._gather.device != device:
            idx = np.concatenate([np.arange(o, o + n, dtype=np.int64) for o, n in self.blocks])
            self._gather = torch.from_numpy(idx).to(device)
        return self._gather

    def manifest(self, dtype):
        return {"name": self.name, "shape": self.shape, "dtype": dtype, "stage": self.stage,
                "layer": self.layer, "mode": self.mode}


def _named_parameters(params):
    if isinstance(params, torch.nn.Module):
        return [(n, p) for n, p in params.named_parameters() if p.requires_grad]
    if isinstance(params, dict):
        return list(params.items())
    pairs = list(params)
    if not all(isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in pairs):
        raise TypeError("params must be an nn.Module, a dict name -> parameter, or a list of (name, parameter)")
    return pairs


def _name_predicate(spec, known):
    """Normalize the `full` selector (None, names, regex, or callable(name, param)) to a predicate."""
    if spec is None:
        return lambda name, p: False
    if callable(spec) and not isinstance(spec, re.Pattern):
        return spec
    if isinstance(spec, (str, re.Pattern)):
        pattern = re.compile(spec)
        return lambda name, p: pattern.search(name) is not None
    names = set(spec)
    unknown = sorted(names - set(known))
    if unknown:
        raise ValueError(f"full-capture names not among the recorded parameters: {unknown}")
    return lambda name, p: name in names


class TraceRecorder:
    """Records selected parameter gradients every `every`-th iteration into `out_dir`.

    params      nn.Module (all trainable parameters), dict name -> parameter, or list of (name, parameter)
    every       record iterations with `iteration % every == 0`
    num_stages  pipeline stages; `stage_of` (callable(name, layer) -> stage, or dict name -> stage)
                overrides the default placement of `stage_for`
    layer_regex first group = layer index; `input_regex` marks layer-less parameters of the first stage
    num_layers  default: 1 + the largest layer index among the model's parameters
    dtype       'f32', 'f16' or 'bf16' storage (f16 flushes small gradients to zero: prefer bf16)
    mode        'full' or 'blocks'; with 'blocks', parameters matched by `full` are still captured whole
    """

    def __init__(self, out_dir, params, *, every=1, num_stages=1, stage_of=None,
                 layer_regex=DEFAULT_LAYER_REGEX, input_regex=DEFAULT_INPUT_REGEX, num_layers=None,
                 dtype="bf16", mode="full", fraction=0.05, block_elems=1024, seed=0, full=None,
                 model_name="model", model_info=None, provenance=None, overwrite=False):
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
        if mode not in ("full", "blocks"):
            raise ValueError(f"mode must be 'full' or 'blocks', got {mode!r}")
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be an integer >= 1, got {every!r}")
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"num_stages must be an integer >= 1, got {num_stages!r}")
        if mode == "blocks" and (not 0.0 < fraction <= 1.0 or int(block_elems) < 1):
            raise ValueError("blocks mode needs 0 < fraction <= 1 and block_elems >= 1")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")

        selected = _named_parameters(params)
        if not selected:
            raise ValueError("no parameters selected for recording")
        names = [n for n, _ in selected]
        if len(set(names)) != len(names):
            raise ValueError("parameter names must be unique")
        for n, p in selected:
            if not n or "@" in n:
                raise ValueError(f"parameter name {n!r} is empty or contains '@' (reserved by the format)")
            if p.numel() == 0:
                raise ValueError(f"parameter {n!r} has no elements")

        # Layer count and parameter total describe the whole model, not just the recorded selection.
        everything = list(params.named_parameters()) if isinstance(params, torch.nn.Module) else selected
        layers = {n: parse_layer(n, layer_regex) for n, _ in everything}
        if num_layers is None:
            num_layers = 1 + max(layers.values())
        input_re = re.compile(input_regex) if input_regex else None
        is_full = _name_predicate(full, names)

        self.out_dir = os.fspath(out_dir)
        self.every, self.num_stages, self.num_layers = every, num_stages, num_layers
        self.dtype, self.mode = dtype, mode
        self.fraction, self.block_elems, self.seed = float(fraction), int(block_elems), seed
        self.tensors = []
        for index, (name, param) in enumerate(selected):
            layer = parse_layer(name, layer_regex)
            if stage_of is None:
                stage = stage_for(layer, num_layers, num_stages, bool(input_re and input_re.search(name)))
            elif callable(stage_of):
                stage = stage_of(name, layer)
            else:
                stage = stage_of[name]
            if not isinstance(stage, int) or not 0 <= stage < num_stages:
                raise ValueError(f"parameter {name!r}: stage {stage!r} outside [0, {num_stages})")
            blocks = None
            if mode == "blocks" and not is_full(name, param):
                rng = np.random.default_rng([seed, index])
                blocks = choose_blocks(int(param.numel()), self.fraction, self.block_elems, rng)
            self.tensors.append(TensorSpec(index, name, param, layer, stage, blocks))

        if stage_of is None and num_stages > 1:
            output_re = re.compile(OUTPUT_REGEX)
            unsure = [t.name for t in self.tensors
                      if t.layer < 0 and t.stage == num_stages - 1 and not output_re.search(t.name)]
            if unsure:
                warnings.warn(
                    f"TraceRecorder: {', '.join(repr(n) for n in unsure)} (outside the layers, not matched by "
                    f"input_regex) placed on the last pipeline stage ({num_stages - 1}) with the output head; if it "
                    f"consumes the input (an embedding, a learned position table), pass input_regex= or stage_of= to "
                    f"place it on the first", stacklevel=2)
            # The default placement needs layer indices in the names; without them every parameter lands in the
            # first or last stage, and the stages between hold nothing to measure: refuse at capture time.
            empty = sorted(set(range(num_stages)) - {t.stage for t in self.tensors})
            if empty:
                found = sorted({t.layer for t in self.tensors if t.layer >= 0})
                raise ValueError(
                    f"num_stages={num_stages}: stage(s) {empty} get no recorded parameter; layer indices found by "
                    f"layer_regex={layer_regex!r}: {found if found else 'none'} (of {num_layers} layers). Pass "
                    f"stage_of= (a dict name -> stage, or a callable(name, layer) -> stage), or a layer_regex whose "
                    f"first group is the layer index in these names (e.g. {names[0]!r})")

        total = sum(int(p.numel()) for _, p in everything)
        self.model = {"name": model_name, "num_layers": num_layers, "num_stages": num_stages,
                      "parameters": total}
        self.model.update(model_info or {})
        self.provenance = dict(provenance or {})
        self.provenance.setdefault(
            "created_utc", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.iterations = []
        self.boundaries = []  # [{"name", "stage", "shape", "dtype", "micro_batch"}], by stage
        self._boundary_grads = {}  # stage -> last caught gradient (CPU, float32)
        self._boundary_handles = []
        self._prepare_dir(overwrite)

    # ----------------------------------------------------------------------------------------------------
    def record_boundaries(self, layers, *, seq_len, hidden, micro_batch=1, batch_first=True):
        """Also record the activation gradient entering every stage s >= 1 (trace format 1.1).

        layers       the model's layer modules in order (e.g. `model.blocks`); the first layer of each stage
                     (by the recorder's layer -> stage placement) is hooked, so it must take the activations
                     as its first positional argument
        seq_len      sequence length of the activations; hidden: their last dimension
        micro_batch  sequences kept per message (the first ones of the batch)
        batch_first  activations are (batch, sequence, hidden) rather than (sequence, batch, hidden)
        Call before the first recorded step.
        """
        if self.iterations:
            raise RuntimeError("record_boundaries must be called before the first recorded iteration")
        if self.boundaries:
            raise RuntimeError("record_boundaries was already called")
        layers = list(layers)
        for name, value in (("seq_len", seq_len), ("hidden", hidden), ("micro_batch", micro_batch)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if len(layers) != self.num_layers:
            raise ValueError(f"got {len(layers)} layer modules for a model of {self.num_layers} layers")
        # A layer's stage is that of its recorded parameters (so a custom `stage_of` is honoured), else the default.
        placed = {t.layer: t.stage for t in self.tensors if t.layer >= 0}
        first = {}
        for index in range(len(layers)):
            stage = placed.get(index, stage_for(index, self.num_layers, self.num_stages, False))
            first.setdefault(stage, index)
        for stage in sorted(s for s in first if s >= 1):
            module = layers[first[stage]]
            self.boundaries.append({"name": f"boundary.{stage}", "stage": stage,
                                    "shape": [micro_batch * seq_len, hidden], "dtype": self.dtype,
                                    "micro_batch": micro_batch})
            self._boundary_handles.append(module.register_forward_pre_hook(
                self._boundary_pre_hook(stage, seq_len, hidden, micro_batch, batch_first)))
        if not self.boundaries:
            raise ValueError("the model has a single pipeline stage: there is no stage boundary to record")

    def _boundary_pre_hook(self, stage, seq_len, hidden, micro_batch, batch_first):
        def catch(grad):
            g = grad.detach()
            if not batch_first:
                g = g.transpose(0, 1)
            if g.dim() != 3 or g.shape[0] < micro_batch or g.shape[1] != seq_len or g.shape[2] != hidden:
                raise RuntimeError(f"stage {stage} boundary: activation gradient of shape {list(grad.shape)} is not "
                                   f"(batch >= {micro_batch}, {seq_len}, {hidden})")
            self._boundary_grads[stage] = g[:micro_batch].reshape(micro_batch * seq_len, hidden).float().cpu()

        def pre_hook(_module, args):
            x = args[0]
            if torch.is_grad_enabled() and isinstance(x, torch.Tensor) and x.requires_grad:
                x.register_hook(catch)

        return pre_hook

    def remove_boundary_hooks(self):
        for h in self._boundary_handles:
            h.remove()
        self._boundary_handles = []

    # ----------------------------------------------------------------------------------------------------
    def _prepare_dir(self, overwrite):
        os.makedirs(self.out_dir, exist_ok=True)
        stale = [f for f in os.listdir(self.out_dir)
                 if f == "trace.json" or (f.startswith("iter_") and f.endswith(".safetensors"))]
        if stale and not overwrite:
            raise FileExistsError(f"{self.out_dir} already holds a trace ({len(stale)} files); "
                                  "pass overwrite=True to replace it")
        for f in stale:
            os.unlink(os.path.join(self.out_dir, f))

    @property
    def captured_elements(self):
        return sum(t.captured for t in self.tensors)

    def manifest(self):
        doc = {"format": FORMAT, "version": 1.1 if self.boundaries else VERSION, "model": self.model}
        if any(t.mode == "blocks" for t in self.tensors):
            doc["sampling"] = {"block_elems": self.block_elems, "fraction": self.fraction, "seed": self.seed}
        doc["tensors"] = [t.manifest(self.dtype) for t in self.tensors]
        if self.boundaries:
            doc["boundaries"] = self.boundaries
        doc["iterations"] = self.iterations
        doc["provenance"] = self.provenance
        return doc

    def _write_manifest(self):
        if not self.iterations:
            return  # a trace needs at least one iteration; write nothing rather than an invalid file
        text = json.dumps(self.manifest(), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        safetensors_io.atomic_write_bytes(os.path.join(self.out_dir, "trace.json"), text.encode("utf-8"))

    def update_provenance(self, **fields):
        """Add fields known only later (final losses, wall time) and rewrite the manifest."""
        self.provenance.update(fields)
        self._write_manifest()

    def _entries(self, iteration, grads=None):
        torch_dtype, st_dtype = DTYPES[self.dtype]
        entries = {}
        with torch.no_grad():
            for t in self.tensors:
                g = t.param.grad if grads is None else grads.get(t.name)
                if g is None and grads is not None:
                    raise RuntimeError(f"parameter {t.name!r} is missing from the gradients given at iteration "
                                       f"{iteration}")
                if g is None:
                    raise RuntimeError(
                        f"parameter {t.name!r} has no gradient (.grad is None) at iteration {iteration}: "
                        "call step() after backward(), and record only parameters that reach the loss")
                if g.is_sparse or list(g.shape) != t.shape:
                    raise RuntimeError(f"parameter {t.name!r}: gradient is sparse or has shape "
                                       f"{list(g.shape)} instead of {t.shape}")
                flat = g.detach().reshape(-1)
                if t.blocks is not None:
                    flat = flat.index_select(0, t.gather_index(flat.device))
                v = flat.to(torch_dtype).cpu().contiguous()
                arr = v.view(torch.int16).numpy() if st_dtype == "BF16" else v.numpy()
                if t.blocks is None:
                    arr = arr.reshape(t.shape)
                entries[t.name] = (st_dtype, arr)
                if t.blocks is not None:
                    entries[t.name + "@blocks"] = ("I64", t.blocks)
            for b in self.boundaries:
                g = self._boundary_grads.pop(b["stage"], None)
                if g is None:
                    raise RuntimeError(f"no gradient reached the stage {b['stage']} boundary at iteration {iteration}: "
                                       "call step() after backward() of a forward pass through the hooked layers")
                v = g.to(torch_dtype).contiguous()
                entries[b["name"]] = (st_dtype, v.view(torch.int16).numpy() if st_dtype == "BF16" else v.numpy())
        return entries

    def step(self, iteration, loss=None, grads=None):
        """Record the current gradients if `iteration % every == 0`; returns whether it recorded.

        Call after `backward()` and before the optimizer zeroes the gradients.  A non-finite loss is
        stored as null (JSON has no NaN).  `grads` (dict name -> tensor) records those instead of `p.grad`:
        under DDP, `p.grad` holds the averaged gradient, and a comm hook's local gradients before averaging
        (edgc_torch.State(keep_local_gradients=True).local_gradients()) are what each rank really had.
        """
        if not isinstance(iteration, int) or iteration < 0:
            raise ValueError(f"iteration must be a non-negative integer, got {iteration!r}")
        if iteration % self.every:
            self._boundary_grads.clear()  # never let a skipped step's boundary gradients reach a recorded one
            return False
        if self.iterations and iteration <= self.iterations[-1]["iteration"]:
            raise ValueError(f"iteration {iteration} is not after the last recorded one "
                             f"({self.iterations[-1]['iteration']})")
        if isinstance(loss, torch.Tensor):
            loss = loss.detach().item()
        loss = float(loss) if loss is not None and math.isfinite(float(loss)) else None

        fname = f"iter_{iteration:06d}.safetensors"
        safetensors_io.save(os.path.join(self.out_dir, fname), self._entries(iteration, grads),
                            metadata={"format": FORMAT, "iteration": str(iteration)})
        self.iterations.append({"iteration": iteration, "file": fname, "loss": loss})
        self._write_manifest()
        return True
