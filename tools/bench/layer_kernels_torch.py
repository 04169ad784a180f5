#!/usr/bin/python3
"""Times, in PyTorch, the kernels edgc's kernel-level compute model predicts for one transformer layer.

edgc_bench_layer_kernels writes the model's kernel list for a scenario (edgc.layer_kernels/1: every GEMM with its
shape, every memory-bound pass with the tensor it streams, the bytes it moves and the predicted seconds). This
script runs each of them on a device and reports the measured time beside the prediction:

    build/tools/edgc_bench_layer_kernels --scenario S.json --json kernels.json
    /usr/bin/python3 tools/bench/layer_kernels_torch.py --kernels kernels.json --device cuda --out measured.json

What each `op` runs (PyTorch eager, one call per kernel):
  gemm                      torch.mm / torch.bmm of (batch ×) m × k and k × n
  layernorm(_backward)      F.layer_norm over rows of `row` elements (backward: autograd of it, dx, dγ and dβ)
  rmsnorm(_backward)        F.rms_norm (or its formula on older PyTorch) over rows; backward by autograd
  swiglu(_backward)         silu(gate)·up over rows of `row` outputs from a 2·row-wide input (eager: several
                            kernels where Megatron-Core runs one fused one); backward by autograd
  rope                      the rotary embedding of rows of `row` channels (eager: several kernels)
  softmax(_backward)        torch.softmax over rows (backward: torch._softmax_backward_data)
  dropout(_backward)        torch.native_dropout, p = 0.1 (backward: native_dropout_backward with its mask)
  bias_dropout_add(_bwd)    dropout(x + bias) + residual: three eager kernels where Megatron runs one fused one
                            (marked fused=false: the measured time bounds the fused kernel's from above);
                            backward: native_dropout_backward, as the fused kernel's gradient is
  bias_gelu / gelu_backward F.gelu(x + bias) (two eager kernels, fused=false) / aten.gelu_backward
  add                       a + b (a residual gradient sum)
  copy                      a transposed view made contiguous (the context layer's permute().contiguous())
  cat                       three tensors joined along their rows (the backward of splitting the QKV output)
  bias_grads                a column sum over the rows

On a GPU every kernel is timed with CUDA events around `--inner` back-to-back calls, after `--warmup` untimed
rounds; the median of `--repeats` rounds is reported. On the CPU the host clock is used (a smoke test of the
kernel list, not a measurement of anything the model predicts).

Prints a table and writes one JSON object (edgc.layer_kernels_measured/1): the device, torch version and dtype,
one row per kernel (name, op, pass, fused, predicted_s, measured_s, measured_all_s, ratio = measured/predicted,
the achieved TFLOP/s or GB/s) and sums per class (GEMMs, memory-bound passes; forward, backward), with the
memory-bound passes' achieved share of the device's HBM bandwidth when --hbm-GBps is given.
`--check` exits 1 unless every kernel was timed to a positive, finite figure.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

UNFUSED = {"bias_dropout_add", "bias_gelu", "swiglu", "swiglu_backward", "rope"}  # one fused kernel in Megatron, several eager ones here
P_DROP = 0.1


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", required=True, help="edgc_bench_layer_kernels' JSON (edgc.layer_kernels/1)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    ap.add_argument("--dtype", default="", help="float16, bfloat16 or float32 (default: the scenario's)")
    ap.add_argument("--repeats", type=int, default=7, help="timed rounds per kernel (median reported)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed rounds per kernel")
    ap.add_argument("--inner", type=int, default=5, help="calls per timed round")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads on the CPU")
    ap.add_argument("--hbm-GBps", type=float, default=0.0, help="the device's HBM bandwidth, for the share")
    ap.add_argument("--out", default="", help="write the JSON here")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every kernel was timed")
    return ap.parse_args()


def fail(message):
    print("layer_kernels_torch: " + message, file=sys.stderr)
    sys.exit(2)


def read_kernels(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: cannot read it as JSON: {e}")
    if doc.get("schema") != "edgc.layer_kernels/1":
        fail(f"{path}: schema: expected edgc.layer_kernels/1 (edgc_bench_layer_kernels --json), got {doc.get('schema')!r}")
    if not isinstance(doc.get("kernels"), list) or not doc["kernels"]:
        fail(f"{path}: kernels: expected a non-empty list")
    return doc


def main():
    args = parse_args()
    if args.repeats < 1 or args.warmup < 0 or args.inner < 1:
        fail("--repeats and --inner must be >= 1, --warmup >= 0")
    doc = read_kernels(args.kernels)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    names = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
    dtype_name = args.dtype or names.get(doc.get("dtype", "fp16"), "float16")
    if dtype_name not in ("float16", "bfloat16", "float32"):
        fail(f"--dtype: expected float16, bfloat16 or float32, got {dtype_name!r}")
    dtype = getattr(torch, dtype_name)

    def sync():
        if on_gpu:
            torch.cuda.synchronize(device)

    def time_calls(fn):
        """Median seconds of one call of fn (and every round's), `inner` calls per round."""
        for _ in range(args.warmup):
            for _ in range(args.inner):
                fn()
        sync()
        rounds = []
        for _ in range(args.repeats):
            if on_gpu:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(args.inner):
                    fn()
                end.record()
                end.synchronize()
                rounds.append(start.elapsed_time(end) / 1e3 / args.inner)
            else:
                t0 = time.perf_counter()
                for _ in range(args.inner):
                    fn()
                rounds.append((time.perf_counter() - t0) / args.inner)
        return statistics.median(rounds), rounds

    def tensor(*shape):
        return torch.randn(*shape, device=device, dtype=dtype)

    def kernel_call(k):
        """A no-argument function that runs kernel k once."""
        op = k["op"]
        if op == "gemm":
            g = k["gemm"]
            batch, m, n, kk = (int(g[x]) for x in ("batch", "m", "n", "k"))
            a, b = tensor(batch, m, kk), tensor(batch, kk, n)
            if batch == 1:
                a2, b2 = a[0], b[0]
                return lambda: torch.mm(a2, b2)
            return lambda: torch.bmm(a, b)
        count, row = k["elements"]["count"], int(k["elements"]["row"])
        rows = max(1, int(round(count / row)))
        x = tensor(rows, row)
        if op in ("rmsnorm", "rmsnorm_backward"):
            w = tensor(row)

            def rms(xx, ww):
                if hasattr(F, "rms_norm"):
                    return F.rms_norm(xx, (row,), ww)
                return xx * torch.rsqrt(xx.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(xx.dtype) * ww
            if op == "rmsnorm":
                return lambda: rms(x, w)
            xr, wr = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
            y = rms(xr, wr)
            g = tensor(rows, row)
            return lambda: torch.autograd.grad(y, (xr, wr), g, retain_graph=True)
        if op in ("swiglu", "swiglu_backward"):
            gate_up = tensor(rows, 2 * row)
            if op == "swiglu":
                return lambda: F.silu(gate_up[:, :row]) * gate_up[:, row:]
            gu = gate_up.clone().requires_grad_(True)
            y = F.silu(gu[:, :row]) * gu[:, row:]
            g = tensor(rows, row)
            return lambda: torch.autograd.grad(y, gu, g, retain_graph=True)
        if op == "rope":
            half = row // 2
            cos, sin = tensor(rows, half), tensor(rows, half)

            def rope():
                a1, a2 = x[:, :half], x[:, half:]
                return torch.cat((a1 * cos - a2 * sin, a2 * cos + a1 * sin), -1)
            return rope
        if op == "layernorm":
            w, b = tensor(row), tensor(row)
            return lambda: F.layer_norm(x, (row,), w, b)
        if op == "layernorm_backward":
            xr = x.clone().requires_grad_(True)
            w, b = tensor(row).requires_grad_(True), tensor(row).requires_grad_(True)
            y = F.layer_norm(xr, (row,), w, b)
            g = tensor(rows, row)
            return lambda: torch.autograd.grad(y, (xr, w, b), g, retain_graph=True)
        if op == "softmax":
            return lambda: torch.softmax(x, -1)
        if op == "softmax_backward":
            y = torch.softmax(x, -1)
            g = tensor(rows, row)
            return lambda: torch._softmax_backward_data(g, y, -1, x.dtype)
        if op == "dropout":
            return lambda: torch.native_dropout(x, P_DROP, True)
        if op in ("dropout_backward", "bias_dropout_add_backward"):
            _, mask = torch.native_dropout(x, P_DROP, True)
            g = tensor(rows, row)
            return lambda: torch.ops.aten.native_dropout_backward(g, mask, 1.0 / (1.0 - P_DROP))
        if op == "bias_dropout_add":
            bias, residual = tensor(row), tensor(rows, row)
            return lambda: F.dropout(x + bias, P_DROP, True) + residual
        if op == "bias_gelu":
            bias = tensor(row)
            return lambda: F.gelu(x + bias)
        if op == "gelu_backward":
            g = tensor(rows, row)
            return lambda: torch.ops.aten.gelu_backward(g, x)
        if op == "add":
            y = tensor(rows, row)
            return lambda: x + y
        if op == "bias_grads":
            return lambda: x.sum(0)
        if op == "copy":
            # A strided view made contiguous, as permute(...).contiguous() does: the transpose of x's layout.
            xt = tensor(row, rows).t()
            return lambda: xt.contiguous()
        if op == "cat":
            third = row // 3
            parts = [tensor(rows, third) for _ in range(3)]
            return lambda: torch.cat(parts, -1)
        return None

    device_name = torch.cuda.get_device_name(device) if on_gpu else "cpu"
    print(f"layer_kernels_torch: {args.kernels} on {device_name}, torch {torch.__version__}, {dtype_name}, "
          f"median of {args.repeats} rounds of {args.inner} calls")
    print(f"  {'kernel':28s} {'op':26s} {'pred_us':>10s} {'meas_us':>10s} {'ratio':>7s} {'rate':>12s}")
    rows = []
    missing = []
    for k in doc["kernels"]:
        fn = kernel_call(k)
        row = {"name": k["name"], "op": k["op"], "pass": k["pass"], "fused": k["op"] not in UNFUSED,
               "bytes": k["bytes"], "flops": k["flops"], "predicted_s": k["predicted_s"]}
        if fn is None:
            missing.append(k["name"])
            row["measured_s"] = None
            rows.append(row)
            print(f"  {k['name']:28s} {k['op']:26s} {k['predicted_s'] * 1e6:10.1f} {'-':>10s}  (no PyTorch kernel)")
            continue
        median, rounds = time_calls(fn)
        row["measured_s"] = median
        row["measured_all_s"] = rounds
        row["ratio"] = median / k["predicted_s"] if k["predicted_s"] > 0 else None
        gemm = k["op"] == "gemm"
        row["achieved"] = (k["flops"] / median / 1e12) if gemm else (k["bytes"] / median / 1e9)
        row["achieved_unit"] = "TFLOP/s" if gemm else "GB/s"
        rows.append(row)
        note = "" if row["fused"] else "  (unfused here)"
        print(f"  {k['name']:28s} {k['op']:26s} {k['predicted_s'] * 1e6:10.1f} {median * 1e6:10.1f} "
              f"{row['ratio']:7.2f} {row['achieved']:7.1f} {row['achieved_unit']}{note}")

    def total(select, key):
        return sum(r[key] for r in rows if r.get("measured_s") is not None and select(r))

    classes = {
        "gemm": lambda r: r["op"] == "gemm",
        "memory_bound_fused": lambda r: r["op"] != "gemm" and r["fused"],
        "forward": lambda r: r["pass"] == "forward",
        "backward": lambda r: r["pass"] == "backward",
        "all": lambda r: True,
    }
    sums = {}
    print()
    for name, select in classes.items():
        predicted, measured = total(select, "predicted_s"), total(select, "measured_s")
        sums[name] = {"predicted_s": predicted, "measured_s": measured,
                      "ratio": measured / predicted if predicted > 0 else None}
        if name == "memory_bound_fused" and measured > 0:
            gbps = total(select, "bytes") / measured / 1e9
            sums[name]["achieved_GBps"] = gbps
            if args.hbm_GBps > 0:
                sums[name]["hbm_share"] = gbps / args.hbm_GBps
        ratio = f"{measured / predicted:.3f}" if predicted > 0 else "-"
        print(f"  {name:20s} predicted {predicted * 1e3:9.3f} ms, measured {measured * 1e3:9.3f} ms, ratio {ratio}")
    if "hbm_share" in sums["memory_bound_fused"]:
        print(f"  memory-bound passes (fused in Megatron) reached {sums['memory_bound_fused']['hbm_share']:.1%} "
              f"of {args.hbm_GBps:g} GB/s")
    out = {"schema": "edgc.layer_kernels_measured/1", "kernels_file": args.kernels, "device": device_name,
           "torch": torch.__version__, "dtype": dtype_name, "repeats": args.repeats, "inner": args.inner,
           "warmup": args.warmup, "rows": rows, "sums": sums, "not_measured": missing}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
    if args.check:
        bad = [r["name"] for r in rows
               if not (isinstance(r.get("measured_s"), float) and math.isfinite(r["measured_s"]) and r["measured_s"] > 0)]
        if bad:
            print("layer_kernels_torch: not timed: " + ", ".join(bad), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
