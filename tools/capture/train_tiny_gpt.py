#!/usr/bin/python3
"""Train a tiny byte-level GPT on CPU and capture its gradients as an edgc trace.

Why this exists: edgc needs realistic gradient traces (heavy-tailed, non-stationary, layer-dependent)
without asking for a GPU or a data download.  The corpus is the license texts every Debian machine ships
in /usr/share/common-licenses, so the run is reproducible anywhere from the seed and this command line;
the corpus hash in the provenance tells whether a machine's copy differs.

Parameter names follow the usual GPT layout (`blocks.<i>.attn.qkv.weight`, ...), so the recorder's
default layer regex maps block i to pipeline stage i * num_stages // layers; embeddings go to the first
stage and the final norm and head to the last.
"""

import argparse
import hashlib
import math
import os
import platform
import shlex
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from edgc_capture import TraceRecorder

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = 256


class CausalSelfAttention(nn.Module):
    """`fused` uses PyTorch's scaled_dot_product_attention (flash attention on a GPU); the explicit masked softmax
    is what the bundled tiny trace was recorded with, so it stays the default."""

    def __init__(self, d_model, heads, seq_len, fused=False):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model {d_model} is not divisible by heads {heads}")
        self.heads, self.fused = heads, fused
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("mask", torch.ones(seq_len, seq_len, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.fused:
            return self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    """Pre-LayerNorm transformer block (residual stream stays un-normalized)."""

    def __init__(self, d_model, heads, seq_len, fused=False):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, seq_len, fused)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """GPT-2's layout at any size. `tie_embeddings` shares the token embedding with the output head (GPT-2 does;
    the tiny trace's model does not)."""

    def __init__(self, layers=4, d_model=64, heads=4, seq_len=128, vocab=VOCAB, fused_attention=False,
                 tie_embeddings=False):
        super().__init__()
        self.vocab = vocab
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, seq_len, fused_attention) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        if tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight
        for name, p in self.named_parameters():
            if name.endswith(".bias"):
                nn.init.zeros_(p)
            elif p.dim() >= 2:
                # GPT-2 style: residual projections scaled down so the stream's variance stays O(1).
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.reshape(-1, self.vocab).float(), targets.reshape(-1))


def load_corpus(directory):
    """Concatenate every file of `directory` (sorted names, symlinks followed) as one byte string."""
    files, chunks = [], []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        entry = {"name": name, "bytes": len(data)}
        if os.path.islink(path):
            entry["symlink_to"] = os.readlink(path)
        files.append(entry)
        chunks.append(data)
    corpus = b"".join(chunks)
    if not corpus:
        raise SystemExit(f"corpus directory {directory} holds no readable files")
    return corpus, files


def sample_batch(data, batch_size, seq_len, generator):
    """Random contiguous windows; targets are the inputs shifted by one byte."""
    starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,), generator=generator)
    idx = starts[:, None] + torch.arange(seq_len + 1)
    window = data[idx]
    return window[:, :-1], window[:, 1:]


@torch.no_grad()
def evaluate(model, data, args, batches, seed):
    """Mean loss over a fixed set of windows (own generator: does not disturb the training stream)."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    losses = [model(*(t.to(device) for t in sample_batch(data, args.batch_size, args.seq_len, g))).item()
              for _ in range(batches)]
    model.train()
    return float(np.mean(losses))


def lr_at(step, args):
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))))


def command_line():
    """The invocation as run from the repository root (script path made relative to it)."""
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO_ROOT)
    return shlex.join([script] + sys.argv[1:])


def add_training_arguments(p, *, layers, d_model, heads, seq_len, batch_size, lr, warmup):
    """The model-shape, optimiser and pipeline options of both capture scripts, with each script's defaults."""
    p.add_argument("--layers", type=int, default=layers)
    p.add_argument("--d-model", type=int, default=d_model)
    p.add_argument("--heads", type=int, default=heads)
    p.add_argument("--seq-len", type=int, default=seq_len)
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--lr", type=float, default=lr, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=warmup, help="linear warm-up steps")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW decay on matrices only")
    p.add_argument("--clip", type=float, default=1.0, help="gradient-norm clip (applied after capture); 0 = off")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-stages", type=int, default=4)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", required=True, help="trace directory to write")
    p.add_argument("--corpus", default="/usr/share/common-licenses", help="directory of text files")
    p.add_argument("--steps", type=int, default=500, help="training steps")
    p.add_argument("--capture-every", type=int, default=2, help="record every k-th step")
    add_training_arguments(p, layers=4, d_model=64, heads=4, seq_len=128, batch_size=32, lr=3e-3, warmup=30)
    p.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="bf16", help="trace storage type")
    p.add_argument("--fraction", type=float, default=0.04, help="share of sampled tensors captured; 1 = all full")
    p.add_argument("--block-elems", type=int, default=256, help="elements per sampled block")
    p.add_argument("--full-pattern", default=r"attn\.proj\.weight$", help="regex of parameters captured full")
    p.add_argument("--boundary-micro-batch", type=int, default=0,
                   help="also record the activation gradient entering each stage >= 1 for the first N sequences of "
                        "the batch (one pipeline message; trace format 1.1); 0 = off")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--log-every", type=int, default=25, help="print the loss every N steps")
    p.add_argument("--eval-batches", type=int, default=16, help="batches for the final train/val loss")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)

    corpus, files = load_corpus(args.corpus)
    data = torch.frombuffer(bytearray(corpus), dtype=torch.uint8).long()
    split = int(0.9 * len(data))
    train, val = data[:split], data[split:]
    corpus_info = {"directory": args.corpus, "files": files, "bytes": len(corpus),
                   "sha256": hashlib.sha256(corpus).hexdigest(),
                   "description": "concatenation of the files (sorted by name, symlinks followed); "
                                  "first 90% of the bytes train, last 10% validation"}

    model = TinyGPT(args.layers, args.d_model, args.heads, args.seq_len)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))

    provenance = {
        "tool": "tools/capture/train_tiny_gpt.py",
        "command": command_line(),
        "seed": args.seed,
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__},
        "torch_num_threads": torch.get_num_threads(),
        "corpus": corpus_info,
        "hyperparameters": {k: v for k, v in vars(args).items() if k not in ("out",)},
    }
    rec = TraceRecorder(args.out, model, every=args.capture_every, num_stages=args.num_stages,
                        dtype=args.dtype, mode="blocks" if args.fraction < 1 else "full",
                        fraction=args.fraction, block_elems=args.block_elems,
                        seed=args.seed, full=args.full_pattern or None, model_name="tiny-gpt",
                        model_info={"d_model": args.d_model, "heads": args.heads, "seq_len": args.seq_len,
                                    "vocab": VOCAB},
                        provenance=provenance, overwrite=True)
    if args.boundary_micro_batch > 0:
        rec.record_boundaries(model.blocks, seq_len=args.seq_len, hidden=args.d_model,
                              micro_batch=args.boundary_micro_batch)
    print(f"model: {rec.model['parameters']} parameters; capturing {len(rec.tensors)} tensors, "
          f"{rec.captured_elements} elements per iteration "
          f"({sum(t.mode == 'full' for t in rec.tensors)} full)", flush=True)

    g = torch.Generator().manual_seed(args.seed)
    t0 = time.time()
    loss = None
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        x, y = sample_batch(train, args.batch_size, args.seq_len, g)
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        rec.step(step, loss)
        if args.clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        if step % args.log_every == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  lr {lr_at(step, args):.2e}  "
                  f"{time.time() - t0:7.1f}s", flush=True)

    train_loss = evaluate(model, train, args, args.eval_batches, args.seed + 1)
    val_loss = evaluate(model, val, args, args.eval_batches, args.seed + 2)
    wall = time.time() - t0
    print(f"final: train loss {train_loss:.4f}  val loss {val_loss:.4f}  "
          f"({len(rec.iterations)} iterations captured, {wall:.1f}s)", flush=True)
    rec.update_provenance(final={"last_step_loss": loss.item(), "train_loss": train_loss, "val_loss": val_loss,
                                 "eval_batches": args.eval_batches},
                          wall_time_s=round(wall, 1))


if __name__ == "__main__":
    main()
