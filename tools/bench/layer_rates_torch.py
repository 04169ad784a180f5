#!/usr/bin/python3
"""Measures, in PyTorch on one GPU, the rates of a modern (Llama-, Qwen- and Mixtral-style) transformer layer.

The kernel model in sim/ needs measured rates for the layers people train in 2026, not a best-shape GEMM maximum:
this script times, at the shapes of published models and of the tensor-parallel splits Megatron-Core runs them
with, every kernel class a layer spends its time in, and writes one JSON document (edgc.layer_rates/1) with the
device, driver, CUDA, cuDNN and PyTorch versions and the clocks read before and after:

  gemm        the layer's GEMMs, bf16 and fp8 (torch._scaled_mm, e4m3 operands with per-tensor scales, bf16
              output, where the GPU and PyTorch have it): QKV with grouped-query attention, the output
              projection, SwiGLU's gate+up (one fused matrix, as Megatron-Core stores it) and down projections,
              and the vocabulary-parallel output layer; each in its three passes as Transformer Engine runs them
              (fprop X·Wᵀ, dgrad dY·W, wgrad dYᵀ·X), for tensor-parallel sizes and micro-batch token counts a
              planner uses. Plus a shape grid (m × n × k over powers of two) for shapes between them.
  attention   torch.nn.functional.scaled_dot_product_attention forward and backward, per backend (flash,
              cuDNN), head dimension 64 and 128, sequence 2k–8k, causal and not, grouped-query (kv heads = heads/4)
              and multi-head. FLOPs are counted as 4·b·h·s²·d forward and 10·b·h·s²·d backward (two and five s×s
              matrix products of 2·s²·d each), halved when causal: the work a causal kernel skips.
  elementwise RMSNorm forward and backward, SwiGLU's silu(a)·b and its gradient, rotary embedding on q and k,
              the residual add and the vocabulary cross-entropy, in eager PyTorch (each op may be several
              kernels, so a time here bounds the fused kernel's from above), with the bytes the fused op must move
              and the achieved share of the copy bandwidth measured in the same run.
  moe         the experts' GEMMs of Mixtral- and Qwen3-MoE-style layers at the tokens per expert of balanced
              routing: one torch.mm per local expert, and torch._grouped_mm where PyTorch has it.

Model shapes (published configs): Llama-3 8B (hidden 4096, 32 heads, 8 kv heads, ffn 14336, vocab 128256),
Llama-3 70B (8192, 64, 8, 28672), Llama-3.1 405B (16384, 128, 8, 53248), Qwen2.5-7B (3584, 28, 4, 18944, vocab
152064), Mixtral-8x7B (experts: 8, top 2, ffn 14336), Qwen3-30B-A3B (hidden 2048, 128 experts, top 8, ffn 768).

Timing: CUDA events around back-to-back calls after untimed warm-up; each case repeats until --budget-ms of timed
work or --max-rounds rounds (at least --min-rounds); the median round is reported with all rounds. Inputs are
random normal (never zeros, which run faster than data). On the CPU (--device cpu) it runs the same code on tiny
shapes as a smoke test of the script, not a measurement of anything.

    /usr/bin/python3 tools/bench/layer_rates_torch.py --device cuda --out rates.json   # a few minutes on an H100
    /usr/bin/python3 tools/bench/layer_rates_torch.py --device cpu --preset smoke --check

--check exits 1 unless every case that ran was timed to a positive, finite figure. Bad arguments exit 2.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time

# name: hidden, heads, kv_heads, ffn_hidden, vocab, tensor-parallel sizes to measure
DENSE_MODELS = {
    "llama3-8b": (4096, 32, 8, 14336, 128256, (1, 2, 4, 8)),
    "llama3-70b": (8192, 64, 8, 28672, 128256, (2, 4, 8)),
    "llama3.1-405b": (16384, 128, 8, 53248, 128256, (8,)),
    "qwen2.5-7b": (3584, 28, 4, 18944, 152064, (1, 2, 4)),
}
# name: hidden, experts, top_k, expert ffn_hidden
MOE_MODELS = {
    "mixtral-8x7b": (4096, 8, 2, 14336),
    "qwen3-30b-a3b": (2048, 128, 8, 768),
}
HEAD_DIM = 128
SMOKE_DENSE = {"smoke": (64, 4, 2, 96, 512, (1, 2))}
SMOKE_MOE = {"smoke-moe": (64, 4, 2, 32)}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda[:N] (a measurement) or cpu (a smoke test)")
    ap.add_argument("--preset", default="full", choices=("full", "smoke"), help="smoke: tiny shapes, for tests")
    ap.add_argument("--only", default="gemm,attention,elementwise,moe",
                    help="comma-separated classes to run (gemm, grid, attention, elementwise, moe)")
    ap.add_argument("--tokens", default="", help="micro-batch tokens per GPU (default 4096,8192; smoke 32)")
    ap.add_argument("--budget-ms", type=float, default=25.0, help="timed work per case before stopping")
    ap.add_argument("--min-rounds", type=int, default=5)
    ap.add_argument("--max-rounds", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls per case")
    ap.add_argument("--max-seconds", type=float, default=420.0,
                    help="stop starting new cases after this long (the document says which classes finished)")
    ap.add_argument("--out", default="", help="write the JSON here")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every case that ran was timed")
    args = ap.parse_args()
    if args.min_rounds < 1 or args.max_rounds < args.min_rounds or args.warmup < 0 or args.budget_ms <= 0:
        fail("--min-rounds >= 1, --max-rounds >= --min-rounds, --warmup >= 0 and --budget-ms > 0 are required")
    classes = [c for c in args.only.split(",") if c]
    unknown = [c for c in classes if c not in ("gemm", "grid", "attention", "elementwise", "moe")]
    if unknown or not classes:
        fail(f"--only: unknown class {unknown[0] if unknown else '(none)'!r}; "
             "expected gemm, grid, attention, elementwise, moe")
    args.classes = classes
    try:
        default = "32" if args.preset == "smoke" else "4096,8192"
        args.token_counts = [int(t) for t in (args.tokens or default).split(",")]
    except ValueError:
        fail(f"--tokens: expected comma-separated integers, got {args.tokens!r}")
    if any(t < 1 for t in args.token_counts):
        fail("--tokens: every count must be >= 1")
    return args


def fail(message):
    print("layer_rates_torch: " + message, file=sys.stderr)
    sys.exit(2)


def nvidia_smi(fields):
    """One nvidia-smi query (a dict of field: value), or {} where nvidia-smi is missing."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in out.splitlines()[0].split(",")] if out.strip() else []
    return dict(zip(fields, values))


CLOCK_FIELDS = ["clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "power.draw", "power.limit",
                "temperature.gpu", "clocks_throttle_reasons.active"]


class Bench:
    def __init__(self, args, torch):
        self.args, self.torch = args, torch
        self.device = torch.device(args.device)
        self.on_gpu = self.device.type == "cuda"
        self.started = time.monotonic()
        self.rows = []
        self.skipped = []

    def out_of_time(self):
        return time.monotonic() - self.started > self.args.max_seconds

    def sync(self):
        if self.on_gpu:
            self.torch.cuda.synchronize(self.device)

    def time_call(self, fn):
        """Median seconds of one call of fn and every round's, with the budget and round limits."""
        a = self.args
        for _ in range(a.warmup):
            fn()
        self.sync()
        rounds, spent = [], 0.0
        while len(rounds) < a.max_rounds and (len(rounds) < a.min_rounds or spent < a.budget_ms / 1e3):
            if self.on_gpu:
                start = self.torch.cuda.Event(enable_timing=True)
                end = self.torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                seconds = start.elapsed_time(end) / 1e3
            else:
                t0 = time.perf_counter()
                fn()
                seconds = time.perf_counter() - t0
            rounds.append(seconds)
            spent += seconds
        return statistics.median(rounds), rounds

    def randn(self, *shape, dtype=None):
        return self.torch.randn(*shape, device=self.device, dtype=dtype or self.dtype)

    def add(self, row, fn, work, unit):
        """Times fn and records row with its median seconds and achieved rate (work per second in unit)."""
        median, rounds = self.time_call(fn)
        row.update({"seconds": median, "seconds_all": rounds, "rate": work / median if median > 0 else None,
                    "rate_unit": unit})
        self.rows.append(row)
        return row


def gemm_cases(hidden, heads, kv, ffn, vocab, tp):
    """(matrix, n, k) of the layer's weights on one tensor-parallel rank: W is n × k, Y = X·Wᵀ."""
    d = hidden // heads
    return [("qkv", (heads + 2 * kv) * d // tp, hidden), ("proj", hidden, heads * d // tp),
            ("fc1", 2 * ffn // tp, hidden), ("fc2", hidden, ffn // tp), ("output", vocab // tp, hidden)]


def fp8_available(b):
    t = b.torch
    if not b.on_gpu or not hasattr(t, "_scaled_mm") or not hasattr(t, "float8_e4m3fn"):
        return "torch._scaled_mm or float8_e4m3fn missing" if b.on_gpu else "fp8 GEMMs run only on a GPU"
    major, minor = t.cuda.get_device_capability(b.device)
    if (major, minor) < (8, 9):
        return f"compute capability {major}.{minor} has no fp8 matrix units"
    return ""


def gemm_fns(b, m, n, k, dtype_name, layout):
    """A no-argument function computing one m × n × k product in the layout Transformer Engine uses."""
    t = b.torch
    if dtype_name != "fp8":
        if layout == "nt":       # fprop: X (m×k) · Wᵀ, W stored n × k
            x, w = b.randn(m, k), b.randn(n, k)
            return lambda: t.mm(x, w.t())
        if layout == "nn":       # dgrad: dY (m×k') · W (k'×n), both stored row-major
            x, w = b.randn(m, k), b.randn(k, n)
            return lambda: t.mm(x, w)
        x, w = b.randn(k, m), b.randn(k, n)  # wgrad: dYᵀ · X, both stored tokens-major
        return lambda: t.mm(x.t(), w)
    # fp8: _scaled_mm needs A row-major and B column-major; TE keeps fp8 copies in whichever layout a pass needs.
    e4m3 = t.float8_e4m3fn
    a = (b.randn(m, k, dtype=t.float32) * 0.5).to(e4m3)
    bt = (b.randn(n, k, dtype=t.float32) * 0.5).to(e4m3)
    one = t.ones((), device=b.device, dtype=t.float32)
    return lambda: t._scaled_mm(a, bt.t(), scale_a=one, scale_b=one, out_dtype=t.bfloat16)


def run_gemms(b, models, fp8_reason):
    dtypes = [b.dtype_name] + ([] if fp8_reason else ["fp8"])
    passes = (("fprop", "nt"), ("dgrad", "nn"), ("wgrad", "tn"))
    for name, (hidden, heads, kv, ffn, vocab, tps) in models.items():
        for tp in tps:
            if kv % tp and tp % kv:
                continue
            for tokens in b.args.token_counts:
                for matrix, n, k in gemm_cases(hidden, heads, kv, ffn, vocab, tp):
                    for pass_name, layout in passes:
                        # fprop: tokens × n over k; dgrad: tokens × k over n; wgrad: n × k over tokens.
                        mm, nn_, kk = {"fprop": (tokens, n, k), "dgrad": (tokens, k, n),
                                       "wgrad": (n, k, tokens)}[pass_name]
                        for dt in dtypes:
                            if b.out_of_time():
                                return False
                            fn = gemm_fns(b, mm, nn_, kk, dt, layout)
                            b.add({"class": "gemm", "model": name, "matrix": matrix, "pass": pass_name, "tp": tp,
                                   "tokens": tokens, "m": mm, "n": nn_, "k": kk, "dtype": dt},
                                  fn, 2.0 * mm * nn_ * kk / 1e12, "TFLOP/s")
    return True


def run_grid(b, fp8_reason, smoke):
    dtypes = [b.dtype_name] + ([] if fp8_reason else ["fp8"])
    ms = (16, 32) if smoke else (2048, 4096, 8192, 16384)
    ns = (16, 64) if smoke else (1024, 2048, 4096, 8192, 16384, 32768)
    ks = (16, 64) if smoke else (1024, 2048, 4096, 8192, 16384)
    for m in ms:
        for n in ns:
            for k in ks:
                for dt in dtypes:
                    if b.out_of_time():
                        return False
                    b.add({"class": "grid", "m": m, "n": n, "k": k, "dtype": dt}, gemm_fns(b, m, n, k, dt, "nt"),
                          2.0 * m * n * k / 1e12, "TFLOP/s")
    return True


def sdpa_backends(b):
    """(name, context manager factory) of the attention backends to time, or a reference on old PyTorch."""
    t = b.torch
    fn = getattr(t.nn.functional, "scaled_dot_product_attention", None)
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        SDPBackend = sdpa_kernel = None
    if fn is None or sdpa_kernel is None:
        return [("reference", None)]
    if not b.on_gpu:
        return [("math", lambda: sdpa_kernel(SDPBackend.MATH))]
    out = [("flash", lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION))]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        out.append(("cudnn", lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)))
    return out


def attention_call(b, q, k, v, causal, gqa):
    t = b.torch
    sdpa = getattr(t.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is None:  # PyTorch < 2.0: the materialised reference (scores, softmax, product)
        rep = q.shape[1] // k.shape[1]
        kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = q @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            mask = t.ones(s.shape[-2:], dtype=t.bool, device=q.device).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        return t.softmax(s.float(), -1).to(q.dtype) @ vv
    if gqa:
        return sdpa(q, k, v, is_causal=causal, enable_gqa=True)
    return sdpa(q, k, v, is_causal=causal)


def run_attention(b, smoke):
    t = b.torch
    seqs = (32, 64) if smoke else (2048, 4096, 8192)
    head_dims = (16,) if smoke else (64, 128)
    head_counts = (4,) if smoke else (8, 32)
    for backend, ctx in sdpa_backends(b):
        for d in head_dims:
            for s in seqs:
                for heads in head_counts:
                    for gqa in (True, False):
                        kv = heads // 4 if gqa else heads
                        for causal in (True, False):
                            if b.out_of_time():
                                return False
                            row = {"class": "attention", "backend": backend, "head_dim": d, "seq": s,
                                   "heads": heads, "kv_heads": kv, "causal": causal, "batch": 1}
                            q = b.randn(1, heads, s, d).requires_grad_(True)
                            k = b.randn(1, kv, s, d).requires_grad_(True)
                            v = b.randn(1, kv, s, d).requires_grad_(True)
                            grad = b.randn(1, heads, s, d)
                            scale = 0.5 if causal else 1.0
                            fwd_tflop = 4.0 * heads * s * s * d * scale / 1e12

                            def forward():
                                if ctx is None:
                                    return attention_call(b, q, k, v, causal, gqa)
                                with ctx():
                                    return attention_call(b, q, k, v, causal, gqa)

                            try:
                                with t.no_grad():
                                    fwd_s, fwd_all = b.time_call(forward)
                                out = forward()
                                bwd_s, bwd_all = b.time_call(
                                    lambda: t.autograd.grad(out, (q, k, v), grad, retain_graph=True))
                            except (RuntimeError, TypeError) as e:  # a backend refusing a shape (GQA, head dim)
                                b.skipped.append(dict(row, reason=str(e).splitlines()[0][:200]))
                                continue
                            del out
                            # Backward: five s×s products to the forward's two.
                            for phase, sec, rounds, tflop in (("forward", fwd_s, fwd_all, fwd_tflop),
                                                              ("backward", bwd_s, bwd_all, 2.5 * fwd_tflop)):
                                b.rows.append(dict(row, phase=phase, seconds=sec, seconds_all=rounds,
                                                   rate=tflop / sec if sec > 0 else None, rate_unit="TFLOP/s"))
    return True


def run_elementwise(b, models, smoke, copy_gbps):
    t = b.torch
    F = t.nn.functional
    tokens = b.args.token_counts[-1]
    seen = set()
    for name, (hidden, heads, kv, ffn, vocab, tps) in models.items():
        if b.out_of_time():
            return False
        if hidden in seen:
            continue
        seen.add(hidden)
        x, w = b.randn(tokens, hidden), b.randn(hidden)
        es = x.element_size()
        ops = []

        def rmsnorm(xx, ww):
            if hasattr(F, "rms_norm"):
                return F.rms_norm(xx, (xx.shape[-1],), ww)
            return xx * t.rsqrt(xx.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(xx.dtype) * ww

        ops.append(("rmsnorm", "forward", lambda: rmsnorm(x, w), 2 * tokens * hidden * es))
        xr, wr = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
        y = rmsnorm(xr, wr)
        gy = b.randn(tokens, hidden)
        ops.append(("rmsnorm", "backward", lambda: t.autograd.grad(y, (xr, wr), gy, retain_graph=True),
                    3 * tokens * hidden * es))
        f = ffn // tps[-1] if not smoke else ffn
        gate_up = b.randn(tokens, 2 * f)
        ops.append(("swiglu", "forward", lambda: F.silu(gate_up[:, :f]) * gate_up[:, f:], 3 * tokens * f * es))
        gu = gate_up.clone().requires_grad_(True)
        sw = F.silu(gu[:, :f]) * gu[:, f:]
        gsw = b.randn(tokens, f)
        ops.append(("swiglu", "backward", lambda: t.autograd.grad(sw, gu, gsw, retain_graph=True),
                    5 * tokens * f * es))
        d = hidden // heads
        qk = b.randn(tokens, heads + kv, d)
        cos, sin = b.randn(tokens, 1, d // 2), b.randn(tokens, 1, d // 2)

        def rope():
            a1, a2 = qk[..., : d // 2], qk[..., d // 2:]
            return t.cat((a1 * cos - a2 * sin, a2 * cos + a1 * sin), -1)

        ops.append(("rope", "forward", rope, 2 * tokens * (heads + kv) * d * es))
        r = b.randn(tokens, hidden)
        ops.append(("residual_add", "forward", lambda: x + r, 3 * tokens * hidden * es))
        v = vocab // tps[-1] if not smoke else vocab
        logits = b.randn(tokens, v)
        target = t.randint(0, v, (tokens,), device=b.device)
        ops.append(("cross_entropy", "forward", lambda: F.cross_entropy(logits.float(), target),
                    tokens * v * es))
        lr = logits.clone().requires_grad_(True)
        loss = F.cross_entropy(lr.float(), target)
        ops.append(("cross_entropy", "backward", lambda: t.autograd.grad(loss, lr, retain_graph=True),
                    2 * tokens * v * es))
        for op, phase, fn, nbytes in ops:
            columns = {"swiglu": f, "cross_entropy": v, "rope": (heads + kv) * d}.get(op, hidden)
            row = b.add({"class": "elementwise", "op": op, "phase": phase, "model": name, "tokens": tokens,
                         "hidden": hidden, "columns": columns, "bytes": nbytes, "eager": True},
                        fn, nbytes / 1e9, "GB/s")
            if copy_gbps and row["rate"]:
                row["copy_share"] = row["rate"] / copy_gbps
    return True


def run_moe(b, models, smoke):
    t = b.torch
    grouped = getattr(t, "_grouped_mm", None) if b.on_gpu else None
    tokens = b.args.token_counts[-1]
    for name, (hidden, experts, top_k, ffn) in models.items():
        for ep in ((1, 2) if smoke else (1, 8)):
            if experts % ep:
                continue
            local = experts // ep
            # Balanced routing: each GPU's tokens go top_k ways; ep ranks each send theirs to these experts.
            per_expert = max(1, tokens * top_k * ep // experts)
            for matrix, n, k in (("fc1", 2 * ffn, hidden), ("fc2", hidden, ffn)):
                if b.out_of_time():
                    return False
                xs = [b.randn(per_expert, k) for _ in range(local)]
                ws = [b.randn(n, k) for _ in range(local)]
                work = 2.0 * local * per_expert * n * k / 1e12
                base = {"class": "moe", "model": name, "matrix": matrix, "ep": ep, "local_experts": local,
                        "tokens_per_expert": per_expert, "n": n, "k": k, "pass": "fprop"}
                b.add(dict(base, method="loop"), lambda: [t.mm(x, w.t()) for x, w in zip(xs, ws)], work,
                      "TFLOP/s")
                if grouped is None:
                    continue
                x_all = t.cat(xs)
                w_all = t.stack(ws)
                offs = t.arange(1, local + 1, device=b.device, dtype=t.int32) * per_expert
                try:
                    b.add(dict(base, method="grouped_mm"),
                          lambda: grouped(x_all, w_all.transpose(-2, -1), offs=offs), work, "TFLOP/s")
                except RuntimeError as e:
                    b.skipped.append(dict(base, method="grouped_mm", reason=str(e).splitlines()[0][:200]))
    return True


def copy_rate(b):
    """Device-to-device copy bandwidth (bytes read plus written per second), or None on the CPU."""
    if not b.on_gpu:
        return None
    src = b.torch.empty(2 ** 28, device=b.device, dtype=b.torch.float32).normal_()
    dst = b.torch.empty_like(src)
    median, rounds = b.time_call(lambda: dst.copy_(src))
    nbytes = 2 * src.numel() * 4
    b.rows.append({"class": "ceiling", "op": "copy", "bytes": nbytes, "seconds": median, "seconds_all": rounds,
                   "rate": nbytes / median / 1e9, "rate_unit": "GB/s"})
    return nbytes / median / 1e9


def provenance(b):
    t = b.torch
    doc = {"torch": t.__version__, "device": str(b.device),
           "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if b.on_gpu:
        p = t.cuda.get_device_properties(b.device)
        doc.update({"gpu": p.name, "multiprocessors": p.multi_processor_count,
                    "memory_GiB": round(p.total_memory / 2 ** 30, 1),
                    "compute_capability": "%d.%d" % t.cuda.get_device_capability(b.device),
                    "cuda_runtime": t.version.cuda, "cudnn": t.backends.cudnn.version(),
                    "driver": nvidia_smi(["driver_version"]).get("driver_version", "unknown")})
        l2 = getattr(p, "L2_cache_size", None)
        if l2:
            doc["l2_MB"] = round(l2 / 1e6, 1)
    return doc


def print_summary(b, copy_gbps):
    rows = b.rows
    print()
    print("layer_rates_torch summary (medians)")
    if copy_gbps:
        print(f"  copy {copy_gbps:8.0f} GB/s (read + write)")
    for dt in ("bf16", "fp8", "fp32"):
        g = [r for r in rows if r["class"] == "grid" and r["dtype"] == dt and r.get("rate")]
        if g:
            best = max(g, key=lambda r: r["rate"])
            print(f"  grid {dt:4s} best {best['rate']:6.0f} TFLOP/s at {best['m']}x{best['n']}x{best['k']}")
    for name in sorted({r["model"] for r in rows if r["class"] == "gemm"}):
        for dt in ("bf16", "fp8", "fp32"):
            for tp in sorted({r["tp"] for r in rows if r["class"] == "gemm" and r["model"] == name}):
                sel = [r for r in rows if r["class"] == "gemm" and r["model"] == name and r["dtype"] == dt
                       and r["tp"] == tp and r["tokens"] == b.args.token_counts[-1] and r["matrix"] != "output"]
                if not sel:
                    continue
                secs = sum(r["seconds"] for r in sel)
                tflop = sum(2.0 * r["m"] * r["n"] * r["k"] for r in sel) / 1e12
                print(f"  {name:14s} tp {tp} {dt:4s} layer GEMMs fwd+bwd {secs * 1e3:8.3f} ms "
                      f"({tflop / secs:5.0f} TFLOP/s) at {b.args.token_counts[-1]} tokens")
    for r in rows:
        if r["class"] == "attention" and r["phase"] in ("forward", "backward") and r["head_dim"] == 128 \
                and r["heads"] == 32 and r["kv_heads"] == 8 and r["causal"] and r.get("rate"):
            print(f"  attention {r['backend']:6s} s {r['seq']:5d} d 128 32/8 heads causal {r['phase']:8s} "
                  f"{r['seconds'] * 1e3:7.3f} ms {r['rate']:5.0f} TFLOP/s")
    for r in rows:
        if r["class"] == "elementwise" and r.get("rate"):
            share = f" {r['copy_share']:4.0%} of copy" if "copy_share" in r else ""
            print(f"  {r['op']:14s} {r['phase']:8s} hidden {r['hidden']:5d} {r['seconds'] * 1e6:8.1f} us "
                  f"{r['rate']:6.0f} GB/s{share}")
    print(f"  {len(rows)} cases timed, {len(b.skipped)} refused by a backend")


def main():
    args = parse_args()
    import torch

    torch.manual_seed(0)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        fail(f"--device {args.device}: no CUDA device is visible to PyTorch")
    b = Bench(args, torch)
    smoke = args.preset == "smoke"
    b.dtype = torch.bfloat16 if b.on_gpu else torch.float32  # CPUs lack fast bf16: a smoke test only
    b.dtype_name = "bf16" if b.on_gpu else "fp32"
    if b.on_gpu:
        torch.backends.cuda.matmul.allow_tf32 = False
    dense = SMOKE_DENSE if smoke else DENSE_MODELS
    moe = SMOKE_MOE if smoke else MOE_MODELS
    prov = provenance(b)
    clocks_before = nvidia_smi(CLOCK_FIELDS) if b.on_gpu else {}
    print(f"layer_rates_torch: {prov.get('gpu', 'cpu')}, torch {torch.__version__}, classes {','.join(args.classes)}",
          flush=True)
    copy_gbps = copy_rate(b)
    fp8_reason = fp8_available(b)
    finished = {}
    # Most needed first: a run stopped by --max-seconds keeps the classes the simulator cannot do without.
    steps = [("attention", lambda: run_attention(b, smoke)), ("gemm", lambda: run_gemms(b, dense, fp8_reason)),
             ("elementwise", lambda: run_elementwise(b, dense, smoke, copy_gbps)),
             ("moe", lambda: run_moe(b, moe, smoke)), ("grid", lambda: run_grid(b, fp8_reason, smoke))]
    for name, step in steps:
        if name in args.classes:
            t0 = time.monotonic()
            finished[name] = bool(step())
            print(f"  {name}: {'done' if finished[name] else 'stopped at --max-seconds'} in "
                  f"{time.monotonic() - t0:.1f} s, {len(b.rows)} rows so far", flush=True)
    b.sync()
    doc = {"schema": "edgc.layer_rates/1", "provenance": prov, "clocks_before": clocks_before,
           "clocks_after": nvidia_smi(CLOCK_FIELDS) if b.on_gpu else {},
           "fp8": "measured" if not fp8_reason else "not measured: " + fp8_reason,
           "method": {"timer": "CUDA events" if b.on_gpu else "host clock", "warmup_calls": args.warmup,
                      "budget_ms": args.budget_ms, "min_rounds": args.min_rounds, "max_rounds": args.max_rounds,
                      "statistic": "median of rounds", "tf32": False, "inputs": "random normal"},
           "finished": finished, "rows": b.rows, "refused": b.skipped}
    print_summary(b, copy_gbps)
    if args.out:
        tmp = args.out + ".part"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, args.out)
    if args.check:
        bad = [r for r in b.rows if not (isinstance(r.get("seconds"), float) and math.isfinite(r["seconds"])
                                         and r["seconds"] > 0)]
        if bad or not b.rows:
            print(f"layer_rates_torch: {len(bad)} of {len(b.rows)} cases not timed", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
