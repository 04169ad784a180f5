#!/usr/bin/python3
"""A hooked DDP run and `edgc replay` of its recorded gradients take the same decisions.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/torch_replay_equivalence.py --edgc build/tools/edgc [--policy loss]

Two gloo ranks train the tiny GPT with edgc_torch's hook (policy edgc, entropy warm-up); rank 0 records its local
gradients before averaging (f32, full) and its losses with the trace recorder. `edgc replay` of that trace with the
same compression settings must give, window by window, the ranks the hook had in force, and the per-step compression
error ‖Ĝ − M‖/‖M‖ the hook measured. Both ranks train on the same batches, so replay's two emulated ranks with
perturbation 0 are exact copies of the run's two ranks: the errors then agree to float rounding (tolerance below).
"""

import argparse
import faulthandler
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "capture"))
from edgc_capture import TraceRecorder  # noqa: E402
from train_tiny_gpt import TinyGPT, load_corpus, sample_batch  # noqa: E402

import edgc_torch  # noqa: E402

STEPS = 80
SETTINGS = dict(policy="edgc", r_min=4, r_max=12, step=4, window=10, alpha=0.5, beta=0.5, seed=3,
                warmup_threshold_nats=0.1, warmup_stable_windows=2)
# Relative agreement of the per-window compression errors: the same float32 kernels on the same values in the same
# order, so only the bucketed vs. whole-model batching of identical per-matrix products may differ.
ERROR_RTOL = 1e-4


def train(rank, store, trace_dir, out_json, policy):
    faulthandler.dump_traceback_later(45, exit=True)  # a hang prints every thread's stack and fails the test
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
    torch.manual_seed(0)
    model = TinyGPT(layers=2, d_model=32, heads=4, seq_len=32)
    # The causal mask is a bool buffer, which gloo cannot broadcast; it is the same on every rank anyway.
    DDP._set_params_and_buffers_to_ignore_for_model(model, [n for n, _ in model.named_buffers()])
    dist._DEFAULT_FIRST_BUCKET_BYTES = 40_000  # several buckets (DDP's documented knob; default 1 MB)
    ddp = DDP(model, broadcast_buffers=False, bucket_cap_mb=0.04)
    settings = dict(SETTINGS, policy=policy)
    state = edgc_torch.State(None, model, iterations=STEPS, keep_local_gradients=(rank == 0), **settings)
    ddp.register_comm_hook(state, edgc_torch.hook)
    recorder = None
    if rank == 0:
        recorder = TraceRecorder(trace_dir, model, every=1, num_stages=1, dtype="f32", mode="full",
                                 model_name="tiny-gpt-ddp", overwrite=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    corpus, _ = load_corpus("/usr/share/common-licenses")  # text: the loss and the gradients move
    data = torch.frombuffer(bytearray(corpus), dtype=torch.uint8).long()
    g = torch.Generator().manual_seed(11)  # the same batches on both ranks
    for step in range(STEPS):
        x, y = sample_batch(data, 8, 32, g)
        loss = ddp(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        state.record_loss(loss)
        if recorder is not None:
            recorder.step(step, loss, grads=state.local_gradients())
        opt.step()
    if rank == 0:
        with open(out_json, "w") as f:
            json.dump({"windows": state.windows, "ranks_now": state.ranks, "buckets": state._engine.compressors}, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--edgc", required=True, help="the edgc binary")
    p.add_argument("--policy", default="edgc", help="edgc (entropy) or loss (the loss trend)")
    p.add_argument("--min-distinct-ranks", type=int, default=3,
                   help="the run must see this many distinct ranks (warm-up's 0 included) to test anything")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace, hooked, out = (os.path.join(tmp, n) for n in ("trace", "hooked.json", "replay"))
        mp.spawn(train, args=(os.path.join(tmp, "store"), trace, hooked, args.policy), nprocs=2)
        sets = {"compression.policy": args.policy, "compression.r_min": 4, "compression.r_max": 12,
                "compression.step": 4, "compression.window": 10, "compression.alpha": 0.5, "compression.beta": 0.5,
                "compression.seed": 3, "compression.warmup.threshold_nats": 0.1,
                "compression.warmup.stable_windows": 2, "replay.seed": 3, "replay.world_size": 2,
                "replay.perturbation": 0, "replay.compare_full": "false"}
        cmd = [args.edgc, "replay", "--trace", trace, "--out", out]
        for k, v in sets.items():
            cmd += ["--set", f"{k}={v}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "replay.json")) as f:
            replay = json.load(f)
        with open(hooked) as f:
            run = json.load(f)

    windows = replay["windows"]
    hooked_ranks = [w["stages"][0]["rank"] for w in run["windows"]] + run["ranks_now"]
    replay_ranks = [w["stages"][0]["rank"] for w in windows]
    print("hook  ranks per window:", hooked_ranks)
    print("replay ranks per window:", replay_ranks)
    failures = []
    if hooked_ranks != replay_ranks:
        failures.append(f"ranks differ: hook {hooked_ranks}, replay {replay_ranks}")
    if len(set(hooked_ranks)) < args.min_distinct_ranks:
        failures.append(f"the run should see at least {args.min_distinct_ranks} distinct ranks, got {hooked_ranks}")
    if run["buckets"] < 2:
        failures.append(f"the model should span several DDP buckets, got {run['buckets']}")
    for hw, rw in zip(run["windows"], windows):
        h, r = hw["stages"][0]["step_error"], rw["stages"][0]["step_error"]
        ok = abs(h - r) <= ERROR_RTOL * max(abs(r), 1e-12) if r else h == 0
        print(f"window {hw['window']}: step error hook {h:.6g} replay {r:.6g}  "
              f"entropy hook {hw['stages'][0]['entropy_gaussian']} replay {rw['stages'][0]['entropy_gaussian']}")
        if not ok:
            failures.append(f"window {hw['window']}: step error hook {h} vs replay {r} (rtol {ERROR_RTOL})")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"OK: {len(replay_ranks)} windows, identical ranks; step errors within rtol {ERROR_RTOL}")


if __name__ == "__main__":
    main()
