"""The DDP communication hook: edgc's controller and CPU PowerSGD on every gradient bucket.

Per bucket the hook compresses each >= 2-D gradient at the rank the controller has in force for its pipeline stage
(P and Q all-reduced over the process group), sends 1-D gradients and matrices the rank does not shrink in one fused
uncompressed all-reduce, and keeps the error feedback per tensor. Per window of `window` iterations it measures the
entropy of GDS-sampled gradient blocks (every round(1/alpha)-th iteration, a share beta of each gradient), adds the
losses given to `State.record_loss`, and lets the controller decide the next window's ranks: the bookkeeping of
`edgc replay`, so a replay of the run's recorded gradients takes the same decisions.

Every rank measures its own gradients; rank 0's window observation is broadcast so that all ranks decide the same
ranks (they must: P and Q are summed across them). Gradients are float32 tensors: on the CPU (backend 'cpu', the
default) or, with State(backend='cuda'), on the GPU, where edgc's CUDA kernels compress them in place and keep the
stashed gradients and error feedback (a module built with EDGC_TORCH_CUDA). P and Q reach the all-reduce through host
memory; the process group may be gloo or NCCL. The hook works synchronously (it waits for the gradients on the
current stream, and its kernels are done when it returns) and returns a completed future.
"""

import math

import torch
import torch.distributed as dist

from . import _core


def _global_rank(group, group_rank):
    if group is None or group is dist.group.WORLD:
        return group_rank
    if hasattr(dist, "get_global_rank"):
        return dist.get_global_rank(group, group_rank)
    return dist.distributed_c10d._get_global_rank(group, group_rank)


class State:
    """Per-rank state of the hook: `model.register_comm_hook(State(...), edgc_torch.hook)`.

    process_group  the DDP process group (None: the default group); torch.distributed must be initialised
    model          the module whose parameters DDP synchronises (the DDP module or the one it wraps). Its
                   named_parameters() order (trainable ones) identifies tensors, as the trace recorder does; None:
                   the order in which the first iteration's buckets bring them (then stages must be 1)
    stage_of       pipeline stage per parameter: dict name -> stage or callable(name) -> stage (needs model);
                   default all in stage 0
    iterations     planned training steps: sets the warm-up floor and ceiling (warmup_floor_fraction,
                   warmup_ceiling_fraction of it) as `edgc replay` does from a trace's length; 0 = no bounds
    keep_local_gradients  keep a copy of this rank's gradients before averaging (local_gradients()), e.g. for
                   the trace recorder
    settings       the scenario's compression keys as keywords, same defaults: policy ('edgc'; edgc_torch.policies()),
                   r_min (32), r_max (128), step (8), quantum (4), exponent (1.0), window (1000), alpha (0.1),
                   beta (0.25), block_bytes (4096), seed (0: GDS blocks and PowerSGD's initial Q), estimator
                   ('gaussian'), static_rank, selective_stages, signal (edgc-megatron: 'loss' | 'entropy'), warmup_mode
                   ('entropy' | 'fixed'), warmup_fixed_iters,
                   warmup_threshold_nats, warmup_stable_windows, warmup_floor_fraction, warmup_ceiling_fraction,
                   bins_per_sigma (8), error_feedback (True), warm_start (True), threads (1), backend ('cpu' |
                   'cuda': the kernels, and where the buckets must be), device (the CUDA device, 0)

    A bad value raises ValueError naming the keyword.
    """

    def __init__(self, process_group=None, model=None, *, stages=1, stage_of=None, keep_local_gradients=False,
                 **settings):
        if not dist.is_available() or not dist.is_initialized():
            raise ValueError("process_group: torch.distributed is not initialised (call init_process_group first)")
        if process_group is not None and not isinstance(process_group, dist.ProcessGroup):
            raise ValueError(f"process_group: expected a torch.distributed ProcessGroup or None, got "
                             f"{type(process_group).__name__}")
        if model is not None and not isinstance(model, torch.nn.Module):
            raise ValueError(f"model: expected a torch.nn.Module or None, got {type(model).__name__}")
        if not isinstance(stages, int) or isinstance(stages, bool) or stages < 1:
            raise ValueError(f"stages: must be an integer >= 1, got {stages!r}")
        if model is None and (stages != 1 or stage_of is not None):
            raise ValueError("model: needed to place parameters in pipeline stages (stages > 1 or stage_of given)")
        self.process_group = process_group
        self.rank = dist.get_rank(process_group)
        self.world_size = dist.get_world_size(process_group)
        self._src = _global_rank(process_group, 0)
        self._settings = dict(settings, stages=stages)
        _core.check_settings(**self._settings)  # ValueError naming the keyword, before any training step
        self._device = int(self._settings.get("device") or 0)
        self._nccl = dist.get_backend(process_group) == "nccl"
        self._keep_local = bool(keep_local_gradients)
        self._local = {}
        self._engine = None
        self._params = []  # tensor id -> parameter
        self._names = []
        self._index = {}  # id(parameter) -> tensor id
        self._first_bucket = True
        self._in_flight, self._done = [], []
        self._layout_checked = set()
        self._pending = []  # model=None, first iteration: (ids, raw copies) to stash once the engine exists
        self._early_floats = 0  # floats sent before the engine existed (model=None, first iteration)
        self.compute_seconds = 0.0
        self.communication_seconds = 0.0
        if model is not None:
            named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
            if not named:
                raise ValueError("model: has no trainable parameters")
            self._names = [n for n, _ in named]
            self._params = [p for _, p in named]
            self._index = {id(p): i for i, p in enumerate(self._params)}
            self._build(self._stages_of(stage_of, stages))

    # ---- setup ----
    def _stages_of(self, stage_of, stages):
        if stage_of is None:
            return [0] * len(self._params)
        out = []
        for n in self._names:
            s = stage_of(n) if callable(stage_of) else stage_of.get(n) if isinstance(stage_of, dict) else None
            if not isinstance(s, int) or not 0 <= s < stages:
                raise ValueError(f"stage_of: parameter {n!r} gets stage {s!r}, outside [0, {stages})")
            out.append(s)
        return out

    def _build(self, stage_list):
        tensors = [(list(p.shape) if p.dim() > 0 else [], s) for p, s in zip(self._params, stage_list)]
        self._engine = _core.Engine(tensors, **self._settings)

    def _collective(self, array, reduce):
        """All-reduces (reduce) or broadcasts from rank 0 a host array in place; through a GPU copy on NCCL."""
        # Tensors handed to gloo stay referenced here until a later bucket: gloo's worker thread then never drops the
        # last reference of a tensor that has a Python object, which needs the GIL (PyTorch 1.13's ProcessGroupGloo
        # destructor joins that thread while holding the GIL: a deadlock at teardown otherwise).
        t = torch.from_numpy(array)
        wire = t.cuda(self._device) if self._nccl else t
        self._in_flight.append(wire)
        if reduce:
            dist.all_reduce(wire, group=self.process_group)
        else:
            dist.broadcast(wire, src=self._src, group=self.process_group)
        if wire is not t:
            t.copy_(wire.cpu())
        return t

    def _all_reduce(self, array):
        self._collective(array, reduce=True)

    def _close_window(self):
        flat = self._engine.observation()
        if self.world_size > 1:
            flat = self._collective(flat, reduce=False).numpy()
        self._engine.close_window(flat)

    # ---- one bucket ----
    def _bucket_views(self, bucket):
        """The bucket's buffer and one flat view per parameter (tensors sharing the buffer's memory)."""
        buf = bucket.buffer()
        want = "cuda" if self._settings.get("backend") == "cuda" else "cpu"
        if buf.device.type != want:
            raise ValueError(f"bucket: the gradients are on {buf.device}; the kernels (backend "
                             f"{self._settings.get('backend') or 'cpu'!r}) need them on the {want.upper()}")
        if buf.dtype != torch.float32:
            raise ValueError(f"bucket: gradients must be float32, got {buf.dtype}")
        if want == "cuda":  # the gradients are written on the current stream; edgc's kernels run on their own
            torch.cuda.current_stream(buf.device).synchronize()
        flat = buf.detach().reshape(-1)
        views, offset = [], 0
        for p in bucket.parameters():
            n = p.numel()
            views.append(flat[offset:offset + n])
            offset += n
        if offset != buf.numel():
            raise RuntimeError(f"bucket {bucket.index()}: {buf.numel()} values for parameters of {offset}")
        key = tuple(id(p) for p in bucket.parameters())
        if key not in self._layout_checked:  # the buffer must hold the gradients back to back, in parameter order
            for g, v in zip(bucket.gradients(), views):
                if not torch.equal(g.detach().reshape(-1), v):
                    raise RuntimeError(f"bucket {bucket.index()}: buffer layout differs from its gradients")
            self._layout_checked.add(key)
        return buf, views

    @staticmethod
    def _pairs(views):
        """(address, numel) of each flat float32 view: how the engine takes gradients in its backend's memory."""
        return [(v.data_ptr(), v.numel()) for v in views]

    def _ids(self, bucket):
        ids = []
        for p in bucket.parameters():
            i = self._index.get(id(p))
            if i is None:
                if self._engine is not None:
                    raise ValueError("model: a bucket holds a parameter that is not among the model's trainable "
                                     "parameters (pass the module DDP wraps)")
                i = len(self._params)
                self._params.append(p)
                self._names.append(f"param.{i}")
                self._index[id(p)] = i
            ids.append(i)
        return ids

    def run_bucket(self, bucket):
        self._done, self._in_flight = self._in_flight, []
        buf, views = self._bucket_views(bucket)
        ids = self._ids(bucket)
        if self._keep_local:
            for i, v in zip(ids, views):
                self._local[self._names[i]] = v.detach().cpu().clone().reshape(self._params[i].shape)
        if self._engine is None:  # model=None, first iteration: plain averaging while the parameters are learnt
            self._pending.append((ids, [v.clone() for v in views]))
            dist.all_reduce(buf, group=self.process_group)
            buf.div_(self.world_size)
            self._early_floats += buf.numel()
            if bucket.is_last():
                self._build([0] * len(self._params))
                for pids, copies in self._pending:
                    self._engine.stash(pids, self._pairs(copies))
                self._pending = []
                self._engine.end_iteration()
        else:
            if self._first_bucket and self._engine.window_closes:
                self._close_window()
            self._first_bucket = False
            pairs = self._pairs(views)
            if self._engine.samples_iteration:
                self._engine.stash(ids, pairs)
            r = self._engine.compress(ids, pairs, self._all_reduce, self.rank, self.world_size)
            self.compute_seconds += r["compute_seconds"]
            self.communication_seconds += r["communication_seconds"]
            if bucket.is_last():
                self._engine.end_iteration()
                self._first_bucket = True
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    # ---- what a training script reads or adds ----
    def record_loss(self, loss):
        """Adds this step's training loss to the current window (the loss policy decides from its mean)."""
        if isinstance(loss, torch.Tensor):
            loss = loss.detach().item()
        loss = float(loss)
        if self._engine is not None and math.isfinite(loss):
            self._engine.add_loss(loss)

    @property
    def iteration(self):
        """Training steps whose buckets have all been through the hook."""
        return self._engine.iteration if self._engine is not None else 0

    @property
    def windows(self):
        """Closed windows: per stage the rank in force, observed entropy, step_error, floats sent; next decision."""
        return self._engine.windows if self._engine is not None else []

    @property
    def ranks(self):
        """Rank in force per stage (0 = uncompressed)."""
        if self._engine is None:
            return [0]
        return [self._engine.stage_rank(s) for s in range(self._settings["stages"])]

    @property
    def bytes_sent(self):
        """Bytes this rank has contributed to all-reduces so far (float32)."""
        return 4 * (self._early_floats + (self._engine.wire_floats if self._engine is not None else 0))

    @property
    def dense_bytes(self):
        """Bytes uncompressed all-reduces of the same gradients would have sent."""
        return 4 * (self._early_floats + (self._engine.dense_floats if self._engine is not None else 0))

    @property
    def stage_shapes(self):
        return self._engine.stage_shapes if self._engine is not None else []

    @property
    def settings(self):
        return self._engine.settings if self._engine is not None else dict(self._settings)

    def error(self, name):
        """Error-feedback buffer of a parameter (by name or tensor id), flat float32; empty until compressed."""
        if self._engine is None:
            raise ValueError("name: no training step has been through the hook yet")
        if isinstance(name, str) and name not in self._names:
            raise ValueError(f"name: {name!r} is not a parameter of the model")
        i = self._names.index(name) if isinstance(name, str) else int(name)
        return self._engine.error(i)

    def local_gradients(self):
        """name -> this rank's gradient before averaging, of the last step (keep_local_gradients=True)."""
        if not self._keep_local:
            raise ValueError("keep_local_gradients: the State was made without it")
        return dict(self._local)


def hook(state, bucket):
    """DDP communication hook: `model.register_comm_hook(state, edgc_torch.hook)`."""
    return state.run_bucket(bucket)
