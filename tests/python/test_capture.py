#!/usr/bin/python3
"""Unit tests of the Python capture side alone (no C++ needed): /usr/bin/python3 tests/python/test_capture.py

They pin down the properties the C++ reader and the analyses rely on: files that round-trip bit-exactly,
a reader that refuses malformed files instead of guessing, a block choice that is valid and stable, and a
recorder whose `every` and stage placement behave as documented.
"""

import json
import math
import os
import struct
import sys
import tempfile
import unittest
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "capture"))
from edgc_capture import TraceRecorder, choose_blocks, parse_layer, stage_for  # noqa: E402
from edgc_capture import safetensors_io as st  # noqa: E402

torch.set_num_threads(2)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def raw_file(header, data=b"", pad=True):
    text = json.dumps(header).encode()
    if pad:
        text += b" " * ((-(8 + len(text))) % 8)
    return struct.pack("<Q", len(text)) + text + data


class SafetensorsRoundTrip(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "x.safetensors")

    def tearDown(self):
        self.tmp.cleanup()

    def test_each_dtype(self):
        rng = np.random.default_rng(1)
        f32 = rng.standard_normal((3, 5)).astype(np.float32)
        f16 = rng.standard_normal(7).astype(np.float16)
        i64 = np.array([[0, 3], [10, 2]], dtype=np.int64)
        t = torch.from_numpy(rng.standard_normal((4, 2)).astype(np.float32)).to(torch.bfloat16)
        bf16 = t.view(torch.int16).numpy()
        scalar = np.array(2.5, dtype=np.float32)
        st.save(self.path, {"a": f32, "b": f16, "c": ("BF16", bf16), "d": i64, "s": scalar},
                metadata={"k": "v"})
        entries, meta = st.load(self.path)
        self.assertEqual(meta, {"k": "v"})
        self.assertEqual({n: e.dtype for n, e in entries.items()},
                         {"a": "F32", "b": "F16", "c": "BF16", "d": "I64", "s": "F32"})
        np.testing.assert_array_equal(entries["a"].array, f32)
        np.testing.assert_array_equal(entries["b"].array, f16)
        np.testing.assert_array_equal(entries["d"].array, i64)
        self.assertEqual(entries["s"].shape, [])
        self.assertEqual(float(entries["s"].array), 2.5)
        c = entries["c"].array
        self.assertEqual(c.dtype, np.float32)
        np.testing.assert_array_equal(c, t.to(torch.float32).numpy())  # bf16 widening is exact

    def test_layout(self):
        st.save(self.path, {"h": np.zeros(3, np.float16), "i": np.zeros((1, 2), np.int64)})
        with open(self.path, "rb") as f:
            blob = f.read()
        n = struct.unpack("<Q", blob[:8])[0]
        self.assertEqual((8 + n) % 8, 0)
        header = json.loads(blob[8:8 + n])
        # widest elements first, contiguous, no holes
        self.assertEqual(header["i"]["data_offsets"], [0, 16])
        self.assertEqual(header["h"]["data_offsets"], [16, 22])
        self.assertEqual(len(blob), 8 + n + 22)

    def test_writer_rejects(self):
        with self.assertRaises(st.SafetensorsError):
            st.save(self.path, {"a": np.zeros(2, np.float64)})
        with self.assertRaises(st.SafetensorsError):
            st.save(self.path, {"a": ("BF16", np.zeros(2, np.float32))})
        with self.assertRaises(st.SafetensorsError):
            st.save(self.path, {"a": ("Q8", np.zeros(2, np.int8))})
        self.assertEqual([f for f in os.listdir(self.tmp.name)], [])  # no temp files left behind

    def test_reader_rejects(self):
        good = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
        cases = {
            "short file": b"\x01\x00",
            "header past end": struct.pack("<Q", 1000) + b"{}",
            "not json": struct.pack("<Q", 4) + b"{{{{",
            "not an object": raw_file([1, 2]),
            "bad dtype": raw_file({"a": dict(good, dtype="F64")}, b"\0" * 8),
            "region past end": raw_file({"a": good}, b"\0" * 4),
            "size mismatch": raw_file({"a": dict(good, shape=[3])}, b"\0" * 8),
            "negative shape": raw_file({"a": dict(good, shape=[-2])}, b"\0" * 8),
            "reversed offsets": raw_file({"a": dict(good, data_offsets=[8, 0])}, b"\0" * 8),
            "overlap": raw_file({"a": good, "b": dict(good, data_offsets=[4, 12])}, b"\0" * 12),
            "missing field": raw_file({"a": {"dtype": "F32", "shape": [2]}}, b"\0" * 8),
            "bad metadata": raw_file({"__metadata__": {"k": 1}, "a": good}, b"\0" * 8),
        }
        for what, blob in cases.items():
            with self.subTest(what):
                with self.assertRaises(st.SafetensorsError):
                    st.decode(blob)
        st.decode(raw_file({"a": good}, b"\0" * 8))  # the unmodified entry is fine


class BlockChoice(unittest.TestCase):
    def check(self, numel, fraction, block_elems, seed):
        blocks = choose_blocks(numel, fraction, block_elems, np.random.default_rng([seed, 3]))
        want = max(1, math.ceil(fraction * numel / block_elems - 1e-9))
        if want >= math.ceil(numel / block_elems):
            self.assertIsNone(blocks)
            return
        self.assertEqual(blocks.dtype, np.int64)
        self.assertEqual(blocks.shape, (want, 2))
        offsets, lengths = blocks[:, 0], blocks[:, 1]
        self.assertTrue(np.all(offsets >= 0) and np.all(offsets + lengths <= numel))
        self.assertTrue(np.all(lengths >= 1) and np.all(lengths <= block_elems))
        self.assertTrue(np.all(offsets[1:] >= offsets[:-1] + lengths[:-1]), "sorted and non-overlapping")
        total = int(lengths.sum())
        self.assertLessEqual(total, want * block_elems)
        self.assertGreaterEqual(total, fraction * numel - block_elems)
        again = choose_blocks(numel, fraction, block_elems, np.random.default_rng([seed, 3]))
        np.testing.assert_array_equal(blocks, again)

    def test_properties(self):
        for numel in (1, 7, 100, 1000, 4096, 12345, 65536):
            for fraction in (0.01, 0.05, 0.3, 0.99, 1.0):
                for block_elems in (1, 16, 100, 256):
                    self.check(numel, fraction, block_elems, seed=numel)

    def test_exact_counts(self):
        rng = np.random.default_rng(0)
        self.assertEqual(len(choose_blocks(1000, 0.3, 100, rng)), 3)  # not 4 from 0.3*1000/100 rounding
        self.assertIsNone(choose_blocks(100, 0.05, 256, rng))  # one block covers everything
        nine_of_eleven = choose_blocks(1050, 0.9, 100, np.random.default_rng(0))  # ceil(9.45) = 10 < 11
        self.assertEqual(len(nine_of_eleven), 10)
        self.assertIsNone(choose_blocks(1050, 0.99, 100, np.random.default_rng(0)))  # ceil(10.4) = 11 = all
        last = choose_blocks(1050, 0.95, 100, np.random.default_rng(0))
        self.assertEqual(int(last[-1, 0]) + int(last[-1, 1]), 1050)  # seed 0 keeps the short last slot

    def test_seed_matters(self):
        a = choose_blocks(100000, 0.05, 100, np.random.default_rng([1, 0]))
        b = choose_blocks(100000, 0.05, 100, np.random.default_rng([2, 0]))
        self.assertFalse(np.array_equal(a, b))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_emb = torch.nn.Embedding(10, 8)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(4))
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, 10)
        self.unused = torch.nn.Parameter(torch.zeros(3))

    def forward(self, x):
        h = self.tok_emb(x)
        for layer in self.layers:
            h = torch.tanh(layer(h))
        return self.head(self.norm(h)).logsumexp(-1).mean()


class Recorder(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "trace")
        torch.manual_seed(0)
        self.net = Net()
        self.params = {n: p for n, p in self.net.named_parameters() if n != "unused"}

    def tearDown(self):
        self.tmp.cleanup()

    def backward(self):
        self.net.zero_grad(set_to_none=True)
        loss = self.net(torch.arange(6) % 10)
        loss.backward()
        return loss

    def test_every_and_files(self):
        rec = TraceRecorder(self.out, self.params, every=3, num_stages=2, dtype="f32")
        recorded = [it for it in range(10) if rec.step(it, self.backward())]
        self.assertEqual(recorded, [0, 3, 6, 9])
        manifest = read_json(os.path.join(self.out, "trace.json"))
        self.assertEqual([i["iteration"] for i in manifest["iterations"]], recorded)
        self.assertEqual(sorted(f for f in os.listdir(self.out) if f.endswith(".safetensors")),
                         [f"iter_{i:06d}.safetensors" for i in recorded])
        self.assertNotIn("sampling", manifest)
        entries, meta = st.load(os.path.join(self.out, "iter_000009.safetensors"))
        self.assertEqual(meta["iteration"], "9")
        for name, p in self.params.items():
            np.testing.assert_array_equal(entries[name].array, p.grad.numpy())
        with self.assertRaises(ValueError):
            rec.step(9, 0.0)  # not increasing

    def test_stage_mapping(self):
        rec = TraceRecorder(self.out, self.net, num_stages=2, layer_regex=r"layers\.(\d+)\.")
        got = {t.name: (t.layer, t.stage) for t in rec.tensors}
        self.assertEqual(got["tok_emb.weight"], (-1, 0))
        self.assertEqual(got["layers.0.weight"], (0, 0))
        self.assertEqual(got["layers.1.bias"], (1, 0))
        self.assertEqual(got["layers.2.weight"], (2, 1))
        self.assertEqual(got["layers.3.weight"], (3, 1))
        self.assertEqual(got["head.weight"], (-1, 1))
        self.assertEqual(rec.num_layers, 4)
        custom = TraceRecorder(os.path.join(self.tmp.name, "c"), self.params, num_stages=3,
                               stage_of=lambda name, layer: 2 if layer < 0 else layer % 2)
        self.assertEqual({t.name: t.stage for t in custom.tensors}["layers.3.weight"], 1)
        self.assertEqual({t.name: t.stage for t in custom.tensors}["tok_emb.weight"], 2)
        with self.assertRaises(ValueError):
            TraceRecorder(os.path.join(self.tmp.name, "d"), self.params, num_stages=2, stage_of=lambda n, l: 5)
        self.assertEqual(stage_for(5, 8, 4, False), 2)
        self.assertEqual(parse_layer("blocks.12.attn.qkv.weight"), 12)
        self.assertEqual(parse_layer("lm_head.weight"), -1)

    def test_layerless_parameters_are_placed_with_a_word(self):
        # A learned position table named just "pos" consumes the input: the first stage, like tok_emb.
        params = {"tok_emb.weight": torch.nn.Parameter(torch.zeros(4, 4)), "pos": torch.nn.Parameter(torch.zeros(4, 4)),
                  "layers.0.weight": torch.nn.Parameter(torch.zeros(4, 4)),
                  "layers.1.weight": torch.nn.Parameter(torch.zeros(4, 4)),
                  "ln_f.weight": torch.nn.Parameter(torch.zeros(4)), "head.weight": torch.nn.Parameter(torch.zeros(4, 4))}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec = TraceRecorder(self.out, params, num_stages=2, layer_regex=r"layers\.(\d+)\.")
        self.assertEqual({t.name: t.stage for t in rec.tensors}["pos"], 0)
        self.assertEqual([str(w.message) for w in caught], [])  # every placement is the known one: no word
        # A layer-less name that is neither input nor output goes last, and says so, naming it and the remedies.
        params["rel_bias"] = torch.nn.Parameter(torch.zeros(4))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec = TraceRecorder(os.path.join(self.tmp.name, "b"), params, num_stages=2, layer_regex=r"layers\.(\d+)\.")
        self.assertEqual({t.name: t.stage for t in rec.tensors}["rel_bias"], 1)
        self.assertEqual(len(caught), 1)
        text = str(caught[0].message)
        self.assertIn("'rel_bias'", text)
        self.assertIn("last pipeline stage (1)", text)
        self.assertIn("input_regex=", text)
        self.assertIn("stage_of=", text)
        self.assertNotIn("'head.weight'", text)

    def test_sequential_and_unindexed_models(self):
        # nn.Sequential names its parameters "0.weight", "2.bias", ...: the position is the layer index.
        seq = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.ReLU(),
                                  torch.nn.Linear(8, 8), torch.nn.Linear(8, 4))
        rec = TraceRecorder(self.out, seq, num_stages=2)
        got = {t.name: (t.layer, t.stage) for t in rec.tensors}
        self.assertEqual(rec.num_layers, 6)
        self.assertEqual(got["0.weight"], (0, 0))
        self.assertEqual(got["2.bias"], (2, 0))
        self.assertEqual(got["4.weight"], (4, 1))
        self.assertEqual(got["5.weight"], (5, 1))
        self.assertEqual(parse_layer("0.weight"), 0)
        self.assertEqual(parse_layer("encoder.layers.7.fc.weight"), 7)
        # Names without a layer index leave middle stages empty: refused, naming the options that fix it.
        flat = {n: torch.nn.Parameter(torch.zeros(4, 4)) for n in ("encoder.weight", "mixer.weight", "head.weight")}
        with self.assertRaises(ValueError) as caught:
            TraceRecorder(os.path.join(self.tmp.name, "flat"), flat, num_stages=3, num_layers=1)
        self.assertIn("stage(s) [0, 1] get no recorded parameter", str(caught.exception))
        self.assertIn("stage_of=", str(caught.exception))
        self.assertIn("layer_regex", str(caught.exception))
        placed = TraceRecorder(os.path.join(self.tmp.name, "placed"), flat, num_stages=3,
                               stage_of={"encoder.weight": 0, "mixer.weight": 1, "head.weight": 2})
        self.assertEqual([t.stage for t in placed.tensors], [0, 1, 2])

    def test_blocks_and_dtypes(self):
        big = {"layers.0.weight": torch.nn.Parameter(torch.zeros(40, 50)),
               "layers.1.weight": torch.nn.Parameter(torch.zeros(40, 50))}
        rec = TraceRecorder(self.out, big, mode="blocks", fraction=0.1, block_elems=64, seed=5, dtype="bf16",
                            full={"layers.1.weight"})
        self.assertEqual([t.mode for t in rec.tensors], ["blocks", "full"])
        g = torch.randn(40, 50)
        for p in big.values():
            p.grad = g.clone()
        rec.step(0, float("nan"))
        entries, _ = st.load(os.path.join(self.out, "iter_000000.safetensors"))
        blocks = entries["layers.0.weight@blocks"].array
        np.testing.assert_array_equal(blocks, rec.tensors[0].blocks)
        flat = g.to(torch.bfloat16).to(torch.float32).flatten().numpy()
        want = np.concatenate([flat[o:o + n] for o, n in blocks])
        np.testing.assert_array_equal(entries["layers.0.weight"].array, want)
        np.testing.assert_array_equal(entries["layers.1.weight"].array, flat.reshape(40, 50))
        manifest = read_json(os.path.join(self.out, "trace.json"))
        self.assertIsNone(manifest["iterations"][0]["loss"])
        self.assertEqual(manifest["sampling"], {"block_elems": 64, "fraction": 0.1, "seed": 5})

    def test_missing_grad_and_existing_trace(self):
        rec = TraceRecorder(self.out, self.net, num_stages=1)
        self.backward()
        with self.assertRaisesRegex(RuntimeError, "'unused'"):
            rec.step(0)
        self.assertFalse(os.path.exists(os.path.join(self.out, "trace.json")))
        rec2 = TraceRecorder(self.out, self.params, num_stages=1)
        rec2.step(0, self.backward())
        with self.assertRaises(FileExistsError):
            TraceRecorder(self.out, self.params)
        TraceRecorder(self.out, self.params, overwrite=True)
        self.assertEqual(os.listdir(self.out), [])

    def test_given_gradients_replace_p_grad(self):
        # A DDP hook's local gradients (before averaging) are recorded instead of p.grad; every name must be there.
        rec = TraceRecorder(self.out, self.params, num_stages=1, dtype="f32")
        self.backward()
        given = {n: torch.full_like(p, float(i + 1)) for i, (n, p) in enumerate(self.params.items())}
        rec.step(0, grads=given)
        entries, _ = st.load(os.path.join(self.out, "iter_000000.safetensors"))
        for name, g in given.items():
            np.testing.assert_array_equal(entries[name].array, g.numpy())
        first = next(iter(given))
        with self.assertRaisesRegex(RuntimeError, repr(first)):
            rec.step(1, grads={n: g for n, g in given.items() if n != first})


class Seq(torch.nn.Module):
    """(batch, sequence, hidden) activations through 4 layers, as a pipeline splits them."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(4))

    def forward(self, x, keep=None):
        for i, layer in enumerate(self.layers):
            if keep is not None and i in keep:
                x.retain_grad()
                keep[i] = x
            x = torch.tanh(layer(x))
        return (x ** 2).mean()


class Boundaries(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "trace")
        torch.manual_seed(3)
        self.net = Seq()

    def tearDown(self):
        self.tmp.cleanup()

    def test_each_later_stage_gets_the_gradient_of_its_input(self):
        rec = TraceRecorder(self.out, self.net, every=2, num_stages=4, dtype="f32", layer_regex=r"layers\.(\d+)\.")
        rec.record_boundaries(self.net.layers, seq_len=5, hidden=8, micro_batch=2)
        self.assertEqual([b["stage"] for b in rec.boundaries], [1, 2, 3])
        for step in range(3):
            keep = {1: None, 2: None, 3: None}
            self.net.zero_grad(set_to_none=True)
            x = torch.randn(3, 5, 8, requires_grad=True)
            loss = self.net(x, keep)
            loss.backward()
            recorded = rec.step(step, loss)
            self.assertEqual(recorded, step % 2 == 0)
            if recorded:
                entries, _ = st.load(os.path.join(self.out, f"iter_{step:06d}.safetensors"))
                for s in (1, 2, 3):
                    want = keep[s].grad[:2].reshape(10, 8).numpy()
                    np.testing.assert_array_equal(entries[f"boundary.{s}"].array, want)
        manifest = read_json(os.path.join(self.out, "trace.json"))
        self.assertEqual(manifest["version"], 1.1)
        self.assertEqual(manifest["boundaries"][0], {"name": "boundary.1", "stage": 1, "shape": [10, 8],
                                                     "dtype": "f32", "micro_batch": 2})

    def test_mistakes_are_refused(self):
        rec = TraceRecorder(self.out, self.net, num_stages=2, dtype="f32", layer_regex=r"layers\.(\d+)\.")
        with self.assertRaisesRegex(ValueError, "3 layer modules for a model of 4"):
            rec.record_boundaries(list(self.net.layers)[:3], seq_len=5, hidden=8)
        with self.assertRaisesRegex(ValueError, "micro_batch"):
            rec.record_boundaries(self.net.layers, seq_len=5, hidden=8, micro_batch=0)
        rec.record_boundaries(self.net.layers, seq_len=6, hidden=8)  # wrong sequence length: caught at backward
        loss = self.net(torch.randn(2, 5, 8, requires_grad=True))
        with self.assertRaisesRegex(RuntimeError, "not \\(batch >= 1, 6, 8\\)"):
            loss.backward()
        rec.remove_boundary_hooks()
        single = TraceRecorder(os.path.join(self.tmp.name, "one"), self.net, num_stages=1,
                               layer_regex=r"layers\.(\d+)\.")
        with self.assertRaisesRegex(ValueError, "single pipeline stage"):
            single.record_boundaries(self.net.layers, seq_len=5, hidden=8)
        late = TraceRecorder(os.path.join(self.tmp.name, "late"), self.net, num_stages=2, dtype="f32",
                             layer_regex=r"layers\.(\d+)\.")
        self.net.zero_grad(set_to_none=True)
        self.net(torch.randn(2, 5, 8)).backward()
        late.step(0)
        with self.assertRaisesRegex(RuntimeError, "before the first recorded"):
            late.record_boundaries(self.net.layers, seq_len=5, hidden=8)
        # A recorded step whose backward never reached the boundary is an error, not stale data.
        nohook = TraceRecorder(os.path.join(self.tmp.name, "nohook"), self.net, num_stages=2, dtype="f32",
                               layer_regex=r"layers\.(\d+)\.")
        nohook.record_boundaries(self.net.layers, seq_len=5, hidden=8)
        with torch.no_grad():
            self.net(torch.randn(2, 5, 8))
        with self.assertRaisesRegex(RuntimeError, "no gradient reached the stage 1 boundary"):
            nohook.step(0)


if __name__ == "__main__":
    unittest.main(verbosity=1)
