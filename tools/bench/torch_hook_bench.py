#!/usr/bin/python3
"""Step time of edgc_torch's DDP hook against PyTorch's own PowerSGD hook, same model, ranks and rank.

    PYTHONPATH=build/python /usr/bin/python3 tools/bench/torch_hook_bench.py --rank 8 --out hook_bench.json

Two gloo ranks on CPU train the tiny GPT (tools/capture/train_tiny_gpt.py) under, in turn: no hook (DDP's own
all-reduce), torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.powerSGD_hook, and edgc_torch.hook with
the static policy — both PowerSGD hooks at the same rank with error feedback and warm start, compressing from the
second step on, with PyTorch's skip rule (min_compression_rate 2) in both. Each round runs every hook once (fresh
model, same seed and batches): untimed warm-up steps, then timed steps; the mean step time of a round is one
sample. Reported: the median over rounds per hook and the ratio edgc / PyTorch of the medians (< 1: edgc's hook is
faster). Prints a table; writes JSON with every sample and the provenance. A benchmark, not a test: it asserts
only that both PowerSGD hooks sent the same number of floats (the same tensors compressed at the same rank).
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO_ROOT, "tools", "capture"))
from train_tiny_gpt import TinyGPT, load_corpus, sample_batch  # noqa: E402

HOOKS = ("ddp", "torch_powersgd", "edgc")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--rank", type=int, default=8, help="PowerSGD rank of both hooks")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup-steps", type=int, default=5)
    p.add_argument("--steps", type=int, default=20, help="timed steps per round and hook")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--bucket-mb", type=int, default=64, help="DDP bucket size (the default: one bucket)")
    p.add_argument("--corpus", default="/usr/share/common-licenses")
    p.add_argument("--hooks", default=",".join(HOOKS), help="which of " + ", ".join(HOOKS))
    return p.parse_args()


def torch_hook_counting(counter):
    """PyTorch's hook, counting the floats it all-reduces (for the same-work check)."""

    def hook(state, bucket):
        counter[0] += sum(
            (g.shape[0] + g[0].numel()) * min(state.matrix_approximation_rank, g.shape[0], g[0].numel())
            if g.dim() > 1 and _compresses(g, state) else g.numel()
            for g in bucket.gradients()) if state.iter >= state.start_powerSGD_iter else bucket.buffer().numel()
        return psgd.powerSGD_hook(state, bucket)

    return hook


def _compresses(g, state):
    m, n = g.shape[0], g[0].numel()
    r = min(m, n, state.matrix_approximation_rank)
    return (m + n) * r * state.min_compression_rate < m * n


def run(rank, args, store, out):
    import edgc_torch

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
    corpus, _ = load_corpus(args.corpus)
    data = torch.frombuffer(bytearray(corpus), dtype=torch.uint8).long()
    samples = {h: [] for h in HOOKS}
    floats = {}
    for _ in range(args.rounds):
        for name in args.hooks.split(","):
            torch.manual_seed(0)
            model = TinyGPT(args.layers, args.d_model, args.heads, args.seq_len)
            DDP._set_params_and_buffers_to_ignore_for_model(model, [n for n, _ in model.named_buffers()])
            # One bucket for every hook: PyTorch's powerSGD_hook issues each bucket's Q all-reduce from a future
            # callback on gloo's thread, so with several buckets its collectives reach the ranks in different orders
            # (seen here: gloo aborts on mismatched sizes).
            dist._DEFAULT_FIRST_BUCKET_BYTES = args.bucket_mb << 20
            ddp = DDP(model, broadcast_buffers=False, bucket_cap_mb=args.bucket_mb)
            counter = [0]
            state = None
            if name == "torch_powersgd":
                state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=args.rank,
                                           start_powerSGD_iter=2, use_error_feedback=True, warm_start=True,
                                           random_seed=0)
                ddp.register_comm_hook(state, torch_hook_counting(counter))
            elif name == "edgc":
                state = edgc_torch.State(None, model, policy="static", r_min=4, r_max=args.rank, window=1,
                                         warmup_mode="fixed", warmup_fixed_iters=1, alpha=1.0)
                ddp.register_comm_hook(state, edgc_torch.hook)
            opt = torch.optim.SGD(model.parameters(), lr=1e-3)
            g = torch.Generator().manual_seed(rank)
            t0 = None
            for step in range(args.warmup_steps + args.steps):
                if step == args.warmup_steps:
                    dist.barrier()
                    t0 = time.perf_counter()
                    if name == "edgc":
                        start_floats = state.bytes_sent // 4
                    elif name == "torch_powersgd":
                        counter[0] = 0
                x, y = sample_batch(data, args.batch_size, args.seq_len, g)
                loss = ddp(x, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            dist.barrier()
            samples[name].append((time.perf_counter() - t0) / args.steps)
            if name == "edgc":
                floats[name] = state.bytes_sent // 4 - start_floats
            elif name == "torch_powersgd":
                floats[name] = counter[0]
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"samples": samples, "floats": floats}, f)
    dist.destroy_process_group()


def main():
    args = parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        mp.spawn(run, args=(args, os.path.join(tmp, "store"), out), nprocs=2)
        with open(out) as f:
            res = json.load(f)
    samples = {h: v for h, v in res["samples"].items() if v}
    med = {h: statistics.median(v) for h, v in samples.items()}
    ratio = med["edgc"] / med["torch_powersgd"] if {"edgc", "torch_powersgd"} <= med.keys() else None
    same_work = res["floats"].get("edgc") == res["floats"].get("torch_powersgd")
    # Per round (both hooks ran back to back under the same background load): edgc / torch, and its median.
    paired = [e / t for e, t in zip(samples.get("edgc", []), samples.get("torch_powersgd", []))]
    paired_median = statistics.median(paired) if paired else None
    print(f"tiny GPT {args.layers}x{args.d_model}, seq {args.seq_len}, batch {args.batch_size}/rank, 2 gloo ranks, "
          f"rank {args.rank}, {args.rounds} rounds x {args.steps} steps")
    print(f"{'hook':<16}{'median step ms':>16}{'min ms':>10}{'max ms':>10}")
    for h in samples:
        v = samples[h]
        print(f"{h:<16}{1e3 * med[h]:>16.2f}{1e3 * min(v):>10.2f}{1e3 * max(v):>10.2f}")
    print(f"edgc / torch_powersgd step time: {ratio if ratio is None else round(ratio, 3)} (ratio of the medians), "
          f"{paired_median if paired_median is None else round(paired_median, 3)} (median of the per-round ratios); "
          f"floats sent per rank over the timed steps: {res['floats']}")
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO_ROOT)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    doc = {"schema": "edgc.bench.torch_hook/1",
           "description": "mean step time per round (s) of 2-rank gloo DDP training of the tiny GPT per hook; "
                          "median over rounds; ratio = edgc / torch_powersgd (of the medians; also per round)",
           "settings": {k: v for k, v in vars(args).items() if k != "out"},
           "samples_s": samples, "median_step_s": med, "ratio_edgc_over_torch_powersgd": ratio,
           "per_round_ratios": paired, "median_per_round_ratio": paired_median,
           "floats_sent_timed_steps": res["floats"], "same_floats": same_work,
           "provenance": {"command": shlex.join([script] + sys.argv[1:]),
                          "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "cpu": cpu, "cpu_count": os.cpu_count(),
                          # Other work on the machine moves every sample; rounds interleave the hooks so it moves
                          # them alike, and the 1-minute load average around the run says how much there was.
                          "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
                          "versions": {"python": platform.python_version(), "torch": torch.__version__}}}
    with open(args.out + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(args.out + ".tmp", args.out)
    if not same_work:
        raise SystemExit("the two PowerSGD hooks sent different amounts: not the same work, the ratio means nothing")


if __name__ == "__main__":
    main()
