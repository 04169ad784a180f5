#!/usr/bin/python3
"""Write small traces plus torch-computed expected values for the C++ reader's cross-language test.

    /usr/bin/python3 tests/python/make_interop_trace.py OUTDIR

Why the expected values come straight from torch (`grad.to(dtype).to(float32)`, sliced by the recorded
blocks) rather than from the files: the C++ reader must agree with PyTorch itself, so a bug shared by
our Python writer and reader cannot hide.  The script still reads every file back with the Python reader
and exits non-zero if anything differs, so a failure points at the writer before the C++ side is blamed.

Traces (3 training steps each, every step recorded, 2 stages):
  f32_full    every parameter whole, float32
  bf16_mixed  bf16; attention projections and biases whole, the rest sampled blocks.  The last step
              also carries edge cases the statistics must handle: NaN and +-inf values in a full and a
              sampled tensor, an all-NaN tensor (no finite values) and a constant one (zero variance).
              The poison is applied for that recorder only and undone before the optimizer step.
  f16_blocks  f16; every 2-D tensor sampled (fraction 0.3, 100-element blocks, so some end short)
  boundary    format 1.1: bf16 weight gradients plus the stage-1 boundary gradient (micro-batch of 2 sequences)

Expected boundary values come from a forward pass written out here that retains the stage-1 input's gradient,
so the recorder's hooks are checked against torch's own autograd, not against themselves.

Expected files: OUTDIR/<trace>/expected/<iteration>/<k>.f32 (boundary b: b<b>.f32) (raw little-endian float32 for manifest
tensor k: flattened row-major, or the concatenated blocks) and <k>.blocks.i64 ((offset, length) pairs).
"""

import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "capture"))
from edgc_capture import TraceRecorder, load  # noqa: E402
from edgc_capture.recorder import DTYPES  # noqa: E402
from train_tiny_gpt import TinyGPT  # noqa: E402

STEPS, SEQ, BATCH = 3, 16, 4
MICRO = 2


def forward_keeping_stage1_input(model, idx, targets):
    """TinyGPT's forward spelled out (2 layers, 2 stages), retaining the gradient of what stage 1 receives."""
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(idx.shape[1]))
    x = model.blocks[0](x)
    x.retain_grad()
    stage1_input = x
    x = model.blocks[1](x)
    logits = model.lm_head(model.ln_f(x))
    return F.cross_entropy(logits.reshape(-1, model.vocab).float(), targets.reshape(-1)), stage1_input


def expected_values(spec, torch_dtype):
    """What a reader must return for one tensor, computed by torch alone."""
    flat = spec.param.grad.detach().to(torch_dtype).to(torch.float32).flatten()
    if spec.blocks is not None:
        flat = torch.cat([flat[int(o):int(o) + int(n)] for o, n in spec.blocks])
    return flat.numpy().astype("<f4")


def write_expected(rec, iteration, expected):
    directory = os.path.join(rec.out_dir, "expected", str(iteration))
    os.makedirs(directory, exist_ok=True)
    torch_dtype = DTYPES[rec.dtype][0]
    for k, spec in enumerate(rec.tensors):
        values = expected_values(spec, torch_dtype)
        expected[(rec.out_dir, iteration, k)] = values
        with open(os.path.join(directory, f"{k}.f32"), "wb") as f:
            f.write(values.tobytes())
        if spec.blocks is not None:
            with open(os.path.join(directory, f"{k}.blocks.i64"), "wb") as f:
                f.write(spec.blocks.astype("<i8").tobytes())


def poison(model):
    """Inject edge-case values into some gradients; returns the originals for `restore`."""
    p = dict(model.named_parameters())
    saved = {n: p[n].grad.clone() for n in
             ("blocks.0.attn.proj.weight", "blocks.1.mlp.fc.weight", "blocks.1.ln2.bias", "blocks.1.ln2.weight")}
    g = p["blocks.0.attn.proj.weight"].grad
    g[0, 0], g[1, 3], g[2, 5] = float("nan"), float("inf"), float("-inf")
    flat = p["blocks.1.mlp.fc.weight"].grad.view(-1)
    flat[:] = torch.where(torch.arange(flat.numel()) % 7 == 0, torch.tensor(float("nan")), flat)
    flat[1::97] = float("inf")
    p["blocks.1.ln2.bias"].grad.fill_(float("nan"))
    p["blocks.1.ln2.weight"].grad.fill_(0.5)
    return saved


def restore(model, saved):
    p = dict(model.named_parameters())
    for n, g in saved.items():
        p[n].grad.copy_(g)


def verify(rec, expected):
    """Read the trace back with the Python reader; returns a list of problems."""
    problems = []
    with open(os.path.join(rec.out_dir, "trace.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    if [i["iteration"] for i in manifest["iterations"]] != list(range(STEPS)):
        problems.append(f"{rec.out_dir}: iterations {manifest['iterations']}")
    for it in manifest["iterations"]:
        entries, _ = load(os.path.join(rec.out_dir, it["file"]))
        for b, boundary in enumerate(rec.boundaries):
            got = entries[boundary["name"]].array.astype("<f4").reshape(-1)
            want = expected[(rec.out_dir, it["iteration"], f"b{b}")]
            if got.shape != want.shape or not np.array_equal(got.view("<u4"), want.view("<u4")):
                problems.append(f"{rec.out_dir} iteration {it['iteration']} boundary {boundary['name']}: values differ")
        for k, spec in enumerate(rec.tensors):
            got = entries[spec.name].array.astype("<f4").reshape(-1)
            want = expected[(rec.out_dir, it["iteration"], k)]
            if got.shape != want.shape or not np.array_equal(got.view("<u4"), want.view("<u4")):
                problems.append(f"{rec.out_dir} iteration {it['iteration']} tensor {k} {spec.name}: values differ")
            if spec.blocks is not None and not np.array_equal(entries[spec.name + "@blocks"].array, spec.blocks):
                problems.append(f"{rec.out_dir} iteration {it['iteration']} tensor {spec.name}: blocks differ")
    return problems


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = argv[1]
    torch.set_num_threads(2)
    torch.manual_seed(1234)
    model = TinyGPT(layers=2, d_model=32, heads=2, seq_len=SEQ)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    provenance = {"tool": "tests/python/make_interop_trace.py", "seed": 1234}
    common = dict(every=1, num_stages=2, model_name="tiny-gpt-interop", seed=7, provenance=provenance,
                  overwrite=True)
    recs = {
        "f32_full": TraceRecorder(os.path.join(out, "f32_full"), model, dtype="f32", mode="full", **common),
        "bf16_mixed": TraceRecorder(os.path.join(out, "bf16_mixed"), model, dtype="bf16", mode="blocks",
                                    fraction=0.1, block_elems=48, full=r"(attn\.proj\.weight|\.bias)$",
                                    **common),
        "f16_blocks": TraceRecorder(os.path.join(out, "f16_blocks"), model, dtype="f16", mode="blocks",
                                    fraction=0.3, block_elems=100, full=lambda name, p: p.dim() != 2,
                                    **common),
        "boundary": TraceRecorder(os.path.join(out, "boundary"), model, dtype="bf16", mode="full", **common),
    }
    recs["boundary"].record_boundaries(model.blocks, seq_len=SEQ, hidden=32, micro_batch=MICRO)
    data = torch.randint(0, 256, (STEPS, BATCH, SEQ + 1), generator=torch.Generator().manual_seed(99))
    expected = {}
    for step in range(STEPS):
        loss, stage1_input = forward_keeping_stage1_input(model, data[step, :, :-1], data[step, :, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        want = stage1_input.grad[:MICRO].reshape(MICRO * SEQ, 32).to(torch.bfloat16).to(torch.float32)
        want = want.numpy().astype("<f4").reshape(-1)
        expected[(recs["boundary"].out_dir, step, "b0")] = want
        os.makedirs(os.path.join(recs["boundary"].out_dir, "expected", str(step)), exist_ok=True)
        with open(os.path.join(recs["boundary"].out_dir, "expected", str(step), "b0.f32"), "wb") as f:
            f.write(want.tobytes())
        for name, rec in recs.items():
            saved = poison(model) if name == "bf16_mixed" and step == STEPS - 1 else None
            rec.step(step, loss)
            write_expected(rec, step, expected)
            if saved:
                restore(model, saved)
        opt.step()
        print(f"step {step}: loss {loss.item():.4f}")

    problems = []
    for name, rec in recs.items():
        problems += verify(rec, expected)
        modes = [t.mode for t in rec.tensors]
        print(f"{name}: {len(rec.tensors)} tensors ({modes.count('full')} full, {modes.count('blocks')} blocks), "
              f"{rec.captured_elements} elements per iteration")
    f16 = recs["f16_blocks"].tensors
    if not any(t.blocks is not None and (t.blocks[:, 1] < 100).any() for t in f16):
        problems.append("f16_blocks: no short final block; choose another seed")
    if not any(t.mode == "full" for t in recs["bf16_mixed"].tensors) or \
            not any(t.mode == "blocks" for t in recs["bf16_mixed"].tensors):
        problems.append("bf16_mixed: expected both full and blocks tensors")
    for p in problems[:20]:
        print("FAIL:", p, file=sys.stderr)
    print(f"wrote {len(recs)} traces under {out}: {'FAILED' if problems else 'ok'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
