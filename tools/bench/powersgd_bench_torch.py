#!/usr/bin/python3
"""PyTorch side of edgc_bench_powersgd: one single-rank PowerSGD step, the math of PyTorch's powerSGD hook.

Run with Debian's interpreter (it carries python3-torch):

    /usr/bin/python3 tools/bench/powersgd_bench_torch.py --threads 1 --shapes 1920x7680 --ranks 4,16

On a GPU (`--device cuda`) every tensor lives on the device, the step is timed with CUDA events around it, and
matrix products stay in exact fp32 (TF32 off, PyTorch's default), as in edgc's CUDA backend.

Prints one JSON object on stdout: {"schema": "edgc.bench.powersgd_torch/1", "threads": T, "rows": [...]},
each row {"m", "n", "r", "ms_median", "ms_all", "ms_hook_median", "ms_hook_all"}.

Why two timings per shape: the hook (torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py) also
re-orthogonalises the warm-started Q before P = M·Q; edgc follows the PowerSGD paper code and does not.
`ms_median` is the step without that extra QR (the same math as edgc, the stricter comparison);
`ms_hook_median` adds it, as the hook runs. Both use the hook's choices: torch.matmul with out=, Gram–Schmidt
for r <= 2 and torch.linalg.qr otherwise, error feedback as add / clone / subtract.
"""

import argparse
import json
import os
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads for torch and its BLAS")
    ap.add_argument("--shapes", default="1920x5760,1920x7680,7680x1920", help="comma-separated MxN")
    ap.add_argument("--ranks", default="4,16,64,128", help="comma-separated ranks")
    ap.add_argument("--repeats", type=int, default=5, help="timed steps per case (median reported)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps per case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    return ap.parse_args()


def main():
    args = parse_args()
    # The BLAS reads its thread count when the library loads, so set it before importing torch.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    if on_gpu:
        torch.backends.cuda.matmul.allow_tf32 = False

    def clock():
        """A point in time: a recorded CUDA event on the GPU, the host clock on the CPU."""
        if not on_gpu:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def elapsed_s(start, stop):
        if not on_gpu:
            return stop - start
        stop.synchronize()
        return start.elapsed_time(stop) * 1e-3

    def gram_schmidt(p, eps=0.0):
        # Column by column: normalise, then remove its component from the columns to its right.
        for i in range(p.shape[1]):
            col = p[:, i : i + 1]
            col.div_(torch.linalg.norm(col) + eps)
            if i + 1 < p.shape[1]:
                rest = p[:, i + 1 :]
                rest.sub_(col @ (col.t() @ rest))

    def orthogonalize(p, r_scratch):
        if p.shape[1] <= 2:
            gram_schmidt(p)
        else:
            torch.linalg.qr(p, out=(p, r_scratch))

    def run_case(m, n, r, hook_qr):
        g = torch.randn(m, n, device=device)
        grad = g.clone()
        error = torch.zeros(m, n, device=device)
        q = torch.randn(n, r, device=device)
        p = torch.empty(m, r, device=device)
        rp = torch.empty(r, r, device=device)
        rq = torch.empty(r, r, device=device)
        times = []
        for step in range(args.warmup + args.repeats):
            grad.copy_(g)  # a fresh gradient each step, outside the timed region
            t0 = clock()
            grad.add_(error)  # M = G + E
            grad_copy = torch.clone(grad)  # the hook keeps M to form the new error
            if hook_qr:
                orthogonalize(q, rq)  # the hook re-orthogonalises the warm-started Q
            torch.matmul(grad, q, out=p)
            orthogonalize(p, rp)  # (all-reduce of P would come before this)
            torch.matmul(grad.t(), p, out=q)  # (all-reduce of Q and Q /= world size after this)
            torch.matmul(p, q.t(), out=grad)  # Ĝ replaces the gradient
            error = grad_copy - grad  # E = M − Ĝ
            elapsed = elapsed_s(t0, clock())
            if step >= args.warmup:
                times.append(elapsed * 1e3)
        if not torch.isfinite(grad).all():
            raise RuntimeError(f"non-finite output for {m}x{n} r={r}")
        times.sort()
        return times[len(times) // 2], times

    rows = []
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",") if s]
    ranks = [int(v) for v in args.ranks.split(",") if v]
    for m, n in shapes:
        for r in ranks:
            med, all_ms = run_case(m, n, r, hook_qr=False)
            hook_med, hook_all = run_case(m, n, r, hook_qr=True)
            rows.append({"m": m, "n": n, "r": r, "ms_median": med, "ms_all": all_ms,
                         "ms_hook_median": hook_med, "ms_hook_all": hook_all})
            print(f"{m}x{n} r={r}: {med:.2f} ms (hook with Q re-orthogonalisation {hook_med:.2f} ms)",
                  file=sys.stderr)
    json.dump({"schema": "edgc.bench.powersgd_torch/1", "threads": args.threads, "torch": torch.__version__,
               "device": torch.cuda.get_device_name(device) if on_gpu else "cpu", "rows": rows}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
