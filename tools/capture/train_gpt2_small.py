#!/usr/bin/python3
"""Train a GPT-2-small-shaped model from scratch on a GPU and capture its gradients as two edgc traces.

The model is GPT-2 small's layout built from a config (12 layers, hidden 768, 12 heads, context 1024, a
byte-level BPE vocabulary of 50,257 tokens, tied embeddings: about 124 M parameters); nothing is downloaded.
The tokenizer is trained on the corpus itself (Hugging Face `tokenizers`, byte-level BPE), and the corpus is the
documentation text that `tools/capture/debian_doc_corpus.sh` builds from two Debian packages, so the whole run
can be repeated offline from the seed and this command line.

Two traces come out, because a trace records the same tensors at every recorded iteration (traces/FORMAT.md):

* `--out`: sampled blocks of every parameter every `--capture-every` steps: the entropy and kurtosis signal
  the controller follows, at every stage, over the whole run;
* `--out-full`: a few whole weight matrices per pipeline stage (`--full-pattern`) every `--full-every` steps:
  real 768-wide gradients on which replay measures PowerSGD's error at the ranks the paper's scenarios use.

    tools/capture/debian_doc_corpus.sh corpus/
    python3 tools/capture/train_gpt2_small.py --corpus corpus --out gpt2s-docs-blocks --out-full gpt2s-docs-full

The defaults are those of the bundled traces (traces/bundled/gpt2s-docs-*), sized to stay within 30 MB together.
"""

import argparse
import hashlib
import json
import math
import os
import platform
import re
import sys
import time

import numpy as np
import torch

from edgc_capture import TraceRecorder
from train_tiny_gpt import TinyGPT, add_training_arguments, command_line, lr_at

EOT = "<|endoftext|>"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", required=True, help="directory written by debian_doc_corpus.sh")
    p.add_argument("--out", required=True, help="trace directory of sampled blocks of every parameter")
    p.add_argument("--out-full", required=True, help="trace directory of the whole matrices")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--capture-every", type=int, default=40, help="record the sampled trace every k-th step")
    p.add_argument("--full-every", type=int, default=1000, help="record the whole matrices every k-th step")
    p.add_argument("--full-pattern", default=r"^blocks\.(1|4|7|10)\.attn\.proj\.weight$",
                   help="regex of the parameters captured whole (default: one per stage of 4)")
    p.add_argument("--fraction", type=float, default=0.0002, help="share of each parameter in sampled blocks")
    p.add_argument("--block-elems", type=int, default=128, help="elements per sampled block")
    add_training_arguments(p, layers=12, d_model=768, heads=12, seq_len=1024, batch_size=16, lr=6e-4, warmup=200)
    p.add_argument("--vocab", type=int, default=50257, help="BPE vocabulary trained on the corpus")
    p.add_argument("--log-every", type=int, default=100, help="print the loss every N steps")
    p.add_argument("--eval-batches", type=int, default=20, help="batches for the train/validation losses")
    p.add_argument("--eval-every", type=int, default=1000, help="validation loss every N steps (0 = only at the end)")
    return p.parse_args(argv)


def load_corpus(directory):
    """The corpus text files named in corpus.json, checked against their recorded sha256."""
    with open(os.path.join(directory, "corpus.json"), encoding="utf-8") as f:
        info = json.load(f)
    texts = []
    for src in info["sources"]:
        with open(os.path.join(directory, src["text"]), "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        if digest != src["text_sha256"]:
            raise SystemExit(f"{src['text']}: sha256 {digest} differs from corpus.json's {src['text_sha256']}")
        texts.append(data.decode("utf-8", errors="replace"))
    return texts, info


def documents(text):
    """Cut a text at blank lines into pieces of about 64 KiB for batched encoding (joined, they are the text; a
    BPE token never spans two pieces, which only matters at the cuts)."""
    piece, size = [], 0
    for line in text.splitlines(keepends=True):
        piece.append(line)
        size += len(line)
        if size >= 1 << 16 and line == "\n":
            yield "".join(piece)
            piece, size = [], 0
    if piece:
        yield "".join(piece)


def tokenize(texts, vocab):
    """Train a byte-level BPE on the texts, then encode each text; returns (tokenizer json, token arrays)."""
    from tokenizers import ByteLevelBPETokenizer

    pieces = [list(documents(t)) for t in texts]
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator((p for ps in pieces for p in ps), vocab_size=vocab, min_frequency=2,
                            special_tokens=[EOT], show_progress=False)
    eot = tok.token_to_id(EOT)
    streams = []
    for ps in pieces:
        ids = [i for enc in tok.encode_batch(ps) for i in enc.ids]
        streams.append(np.array(ids + [eot], dtype=np.int64))
    return tok.to_str(), streams


def split_streams(streams):
    """First 90 % of each source's tokens train, the last 10 % validate."""
    train = [s[: int(0.9 * len(s))] for s in streams]
    val = [s[int(0.9 * len(s)):] for s in streams]
    return torch.from_numpy(np.concatenate(train)), torch.from_numpy(np.concatenate(val))


def sample_batch(data, batch_size, seq_len, generator, device):
    starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,), generator=generator)
    window = data[starts[:, None] + torch.arange(seq_len + 1)].to(device, non_blocking=True)
    return window[:, :-1], window[:, 1:]


@torch.no_grad()
def evaluate(model, data, args, seed, device):
    model.eval()
    g = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(args.eval_batches):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            losses.append(model(*sample_batch(data, args.batch_size, args.seq_len, g, device)).item())
    model.train()
    return float(np.mean(losses))


def main(argv=None):
    args = parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("train_gpt2_small.py needs a CUDA GPU")
    device = torch.device("cuda")
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    t_start = time.time()
    texts, corpus_info = load_corpus(args.corpus)
    tokenizer_json, streams = tokenize(texts, args.vocab)
    train, val = split_streams(streams)
    print(f"corpus: {sum(len(t) for t in texts)} characters, {sum(len(s) for s in streams)} tokens "
          f"({len(train)} train, {len(val)} validation); tokenizer {time.time() - t_start:.1f}s", flush=True)

    model = TinyGPT(args.layers, args.d_model, args.heads, args.seq_len, vocab=args.vocab, fused_attention=True,
                    tie_embeddings=True).to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), fused=True)

    params = sum(p.numel() for p in model.parameters())
    model_info = {"d_model": args.d_model, "heads": args.heads, "seq_len": args.seq_len, "vocab": args.vocab,
                  "tied_embeddings": True}
    provenance = {
        "tool": "tools/capture/train_gpt2_small.py",
        "command": command_line(),
        "seed": args.seed,
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                     "cuda": torch.version.cuda},
        "device": torch.cuda.get_device_name(device),
        "precision": "bf16 autocast for the forward and backward passes, fp32 weights, gradients and AdamW state; "
                     "TF32 matrix products outside autocast; flash attention (scaled_dot_product_attention)",
        "corpus": corpus_info,
        "tokenizer": {"kind": "byte-level BPE (tokenizers " + __import__("tokenizers").__version__ + ")",
                      "vocab": args.vocab, "special": [EOT],
                      "sha256": hashlib.sha256(tokenizer_json.encode("utf-8")).hexdigest(),
                      "train_tokens": len(train), "validation_tokens": len(val)},
        "data": "random windows of seq_len+1 tokens from the training tokens (first 90 % of each source)",
        "hyperparameters": {k: v for k, v in vars(args).items() if k not in ("out", "out_full", "corpus")},
    }
    named = [(n, p) for n, p in model.named_parameters()]
    blocks = TraceRecorder(args.out, model, every=args.capture_every, num_stages=args.num_stages, dtype="bf16",
                           mode="blocks", fraction=args.fraction, block_elems=args.block_elems, seed=args.seed,
                           model_name="gpt2-small", model_info=model_info, provenance=provenance, overwrite=True)
    full_re = re.compile(args.full_pattern)
    chosen = [(n, p) for n, p in named if full_re.search(n)]
    if not chosen:
        raise SystemExit(f"--full-pattern {args.full_pattern!r} matches no parameter")
    full = TraceRecorder(args.out_full, chosen, every=args.full_every, num_stages=args.num_stages, dtype="bf16",
                         mode="full", num_layers=args.layers, seed=args.seed, model_name="gpt2-small",
                         model_info=dict(model_info, parameters=params), provenance=provenance, overwrite=True)
    print(f"model: {params} parameters; sampled trace {blocks.captured_elements} elements per iteration; "
          f"whole matrices: {[n for n, _ in chosen]}", flush=True)

    g = torch.Generator().manual_seed(args.seed)
    history = []
    t0 = time.time()
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        x, y = sample_batch(train, args.batch_size, args.seq_len, g, device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        blocks.step(step, loss)
        full.step(step, loss)
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        if step % args.log_every == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  lr {lr_at(step, args):.2e}  {time.time() - t0:7.1f}s",
                  flush=True)
        if args.eval_every and step and step % args.eval_every == 0:
            v = evaluate(model, val, args, args.seed + 2, device)
            history.append({"step": step, "val_loss": v})
            print(f"step {step:5d}  validation loss {v:.4f}", flush=True)

    train_loss = evaluate(model, train, args, args.seed + 1, device)
    val_loss = evaluate(model, val, args, args.seed + 2, device)
    wall = time.time() - t0
    print(f"final: train loss {train_loss:.4f}  val loss {val_loss:.4f}  ({len(blocks.iterations)} + "
          f"{len(full.iterations)} iterations captured, {wall:.1f}s, {wall / args.steps * 1e3:.0f} ms/step)",
          flush=True)
    final = {"last_step_loss": loss.item(), "train_loss": train_loss, "val_loss": val_loss,
             "eval_batches": args.eval_batches, "validation_history": history,
             "uniform_loss": math.log(args.vocab)}
    for rec in (blocks, full):
        rec.update_provenance(final=final, wall_time_s=round(wall, 1),
                              ms_per_step=round(wall / args.steps * 1e3, 1))


if __name__ == "__main__":
    sys.exit(main())
