#!/usr/bin/python3
"""Train the tiny GPT under several compression policies with everything else fixed, and write what each costs.

    PYTHONPATH=build/python /usr/bin/python3 tools/capture/converge.py --out converge.json

Every policy runs the same job: 2 data-parallel ranks (torch.distributed, gloo; on the CPU, or with --device cuda
both on GPU 0 with the hook on edgc's CUDA kernels, State(backend="cuda")), the same initial weights,
the same batches per rank in the same order (rank r draws from its own generator seeded with seed + r), the same
learning-rate schedule (linear warm-up then cosine, as train_tiny_gpt.py), AdamW, gradient clipping. Only the DDP
communication hook's policy differs: edgc_torch's hook with `none` (uncompressed, through the same hook), `static`
(PowerSGD at r_max once warm), `edgc` (rank from the entropy trend) or `edgc-megatron` (the authors' port: rank
from the loss trend). Per policy the JSON holds the loss curve
(rank 0's training loss every step), the final validation loss and perplexity (fixed held-out windows), the rank
in force per window, the bytes each rank sent, and the wall time. Provenance: the command, versions, date, CPU.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import shlex
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_tiny_gpt import TinyGPT, evaluate, load_corpus, lr_at, sample_batch  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORLD = 2


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--policies", default="none,static,edgc,edgc-megatron",
                   help="comma-separated edgc_torch policies")
    p.add_argument("--corpus", default="/usr/share/common-licenses", help="directory of text files")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=16, help="per rank")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=30, help="learning-rate warm-up steps")
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--window", type=int, default=20, help="compression window (iterations)")
    p.add_argument("--alpha", type=float, default=0.25)
    p.add_argument("--beta", type=float, default=0.25)
    p.add_argument("--r-min", type=int, default=4)
    p.add_argument("--r-max", type=int, default=12)
    p.add_argument("--step", type=int, default=4, help="largest rank change per window")
    p.add_argument("--eval-batches", type=int, default=16)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the model trains and the hook's kernels run (cuda: both ranks on GPU 0; needs "
                        "edgc_torch built with EDGC_TORCH_CUDA)")
    return p.parse_args(argv)


def settings(args, policy):
    return dict(policy=policy, r_min=args.r_min, r_max=args.r_max, step=args.step, window=args.window,
                alpha=args.alpha, beta=args.beta, seed=args.seed, iterations=args.steps, backend=args.device)


def make_ddp(args, model):
    """DDP over gloo; the attention mask (a bool buffer gloo cannot broadcast, equal on every rank) is left out."""
    DDP._set_params_and_buffers_to_ignore_for_model(model, [n for n, _ in model.named_buffers()])
    if args.device == "cuda":
        return DDP(model.to("cuda"), device_ids=[0], broadcast_buffers=False)
    return DDP(model, broadcast_buffers=False)


def run_rank(rank, args, policy, store, out_path):
    import edgc_torch

    torch.set_num_threads(args.threads)
    if args.device == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
        torch.cuda.set_device(0)
        torch.use_deterministic_algorithms(True, warn_only=True)  # warns (not fails) on an op without such a kernel
    else:
        torch.use_deterministic_algorithms(True)
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=WORLD)
    torch.manual_seed(args.seed)  # the same initial weights under every policy (and on both ranks)
    model = TinyGPT(args.layers, args.d_model, args.heads, args.seq_len)
    ddp = make_ddp(args, model)
    state = edgc_torch.State(None, model, **settings(args, policy))
    ddp.register_comm_hook(state, edgc_torch.hook)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    corpus, _ = load_corpus(args.corpus)
    data = torch.frombuffer(bytearray(corpus), dtype=torch.uint8).long()
    split = int(0.9 * len(data))
    train, val = data[:split], data[split:]
    g = torch.Generator().manual_seed(args.seed + rank)
    losses = []
    dist.barrier()
    t0 = time.perf_counter()
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        x, y = sample_batch(train, args.batch_size, args.seq_len, g)
        loss = ddp(x.to(args.device), y.to(args.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        state.record_loss(loss)
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        losses.append(loss.item())
    dist.barrier()
    wall = time.perf_counter() - t0
    if rank == 0:
        val_loss = evaluate(model, val, args, args.eval_batches, args.seed + 2)
        train_loss = evaluate(model, train, args, args.eval_batches, args.seed + 1)
        windows = state.windows
        warm = [w["end_iteration"] for w in windows if not w["next"]["warmup"]]
        result = {
            "policy": policy,
            "loss_curve": [round(v, 5) for v in losses],
            "final_val_loss": val_loss,
            "final_val_perplexity": math.exp(val_loss),
            "final_train_loss": train_loss,
            "ranks_per_window": [w["stages"][0]["rank"] for w in windows] + state.ranks,
            "warmup_end_iteration": warm[0] if warm else None,
            "bytes_sent_per_rank": state.bytes_sent,
            "dense_bytes_per_rank": state.dense_bytes,
            "bytes_ratio": state.bytes_sent / state.dense_bytes,
            "wall_time_s": wall,
            "hook_compute_s": state.compute_seconds,
            "hook_communication_s": state.communication_seconds,
            "windows": [{"window": w["window"], "rank": w["stages"][0]["rank"], "mean_loss": w["mean_loss"],
                         "entropy_gaussian": w["stages"][0]["entropy_gaussian"],
                         "step_error": w["stages"][0]["step_error"]} for w in windows],
        }
        with open(out_path, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def gpu_provenance(args):
    """The GPU, CUDA and driver of a --device cuda run (both ranks share GPU 0); nothing for the CPU."""
    if args.device != "cuda":
        return {}
    return {"gpu": torch.cuda.get_device_name(0), "cuda": torch.version.cuda,
            "ranks_per_gpu": WORLD, "hook_backend": "cuda"}


def main(argv=None):
    args = parse_args(argv)
    import edgc_torch

    known = {p["name"] for p in edgc_torch.policies()}
    policies = [p for p in args.policies.split(",") if p]
    for p in policies:
        if p not in known:
            raise SystemExit(f"--policies: unknown policy {p!r} (known: {', '.join(sorted(known))})")
    corpus, _ = load_corpus(args.corpus)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for policy in policies:
            out = os.path.join(tmp, policy + ".json")
            print(f"{policy}: training {args.steps} steps on {WORLD} gloo ranks ({args.device}) ...", flush=True)
            load_before = os.getloadavg()[0]
            mp.spawn(run_rank, args=(args, policy, os.path.join(tmp, policy + ".store"), out), nprocs=WORLD)
            with open(out) as f:
                run = json.load(f)
            if run["policy"] == "none":  # the uncompressed baseline never warms up or compresses
                run["warmup_end_iteration"] = None
            # Wall times compare only on an otherwise idle machine: the 1-minute load average around each run says.
            run["load_average_1min"] = {"before": load_before, "after": os.getloadavg()[0]}
            print(f"{policy}: val loss {run['final_val_loss']:.4f} (ppl {run['final_val_perplexity']:.2f}), "
                  f"bytes {run['bytes_ratio']:.3f} of uncompressed, {run['wall_time_s']:.1f} s; ranks "
                  f"{run['ranks_per_window']}", flush=True)
            runs.append(run)
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO_ROOT)
    doc = {
        "schema": "edgc.converge/1",
        "description": "tiny GPT trained under each policy with the same seed, data order and schedule; 2 gloo "
                       + ("ranks on CPU" if args.device == "cpu" else "ranks sharing GPU 0, the hook on edgc's CUDA "
                          "kernels") + "; edgc_torch's DDP hook (none = uncompressed through the same hook)",
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "provenance": {
            "command": shlex.join([script] + sys.argv[1:]),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "versions": {"python": platform.python_version(), "torch": torch.__version__},
            "corpus_sha256": hashlib.sha256(corpus).hexdigest(),
            "world_size": WORLD,
            "backend": "gloo",
            **gpu_provenance(args),
        },
        "runs": runs,
    }
    tmp_out = args.out + ".tmp"
    with open(tmp_out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp_out, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
