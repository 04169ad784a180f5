#!/usr/bin/python3
"""Unit tests of edgc_torch (the DDP hook, its State, the Controller and PowerSGD bindings) in one process.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/test_torch_hook.py

The hook is driven with hand-made buckets (the interface DDP's GradBucket offers the hook) on a gloo group of one
rank, so bucket splits, bucket rebuilds, window boundaries and the gradients themselves are chosen by the test.
"""

import os
import tempfile
import unittest

import numpy as np
import torch
import torch.distributed as dist

import edgc_torch

torch.set_num_threads(1)


class FakeBucket:
    """What DDP hands a comm hook: a flat buffer holding the bucket's gradients back to back."""

    def __init__(self, index, params, grads, last):
        self._index, self._params, self._last = index, list(params), last
        self._buffer = torch.cat([g.reshape(-1) for g in grads]).float()
        self._views, off = [], 0
        for p in self._params:
            self._views.append(self._buffer[off:off + p.numel()].view(p.shape))
            off += p.numel()

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def gradients(self):
        return self._views

    def parameters(self):
        return self._params

    def is_last(self):
        return self._last


class Net(torch.nn.Module):
    """Two matrices of different shape, a bias, a third matrix: enough to split into buckets several ways."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.zeros(48, 40))
        self.bias = torch.nn.Parameter(torch.zeros(40))
        self.b = torch.nn.Parameter(torch.zeros(32, 64))
        self.c = torch.nn.Parameter(torch.zeros(48, 40))


def gradients(model, step, scale=1.0):
    g = torch.Generator().manual_seed(1000 + step)
    # Low-rank structure plus noise, as real gradients have: compression errors well below 1.
    out = []
    for p in model.parameters():
        if p.dim() == 2:
            u = torch.randn(p.shape[0], 3, generator=g)
            v = torch.randn(3, p.shape[1], generator=g)
            out.append(scale * (u @ v + 0.3 * torch.randn(p.shape, generator=g)))
        else:
            out.append(scale * torch.randn(p.shape, generator=g))
    return out


def run_step(state, model, grads, split):
    """One iteration through the hook with the parameters cut into buckets at `split`; returns the averaged
    gradients per parameter index."""
    params = list(model.parameters())
    out = [None] * len(params)
    cuts = [0] + list(split) + [len(params)]
    for b in range(len(cuts) - 1):
        ids = list(range(cuts[b], cuts[b + 1]))
        bucket = FakeBucket(b, [params[i] for i in ids], [grads[i] for i in ids], b == len(cuts) - 2)
        result = edgc_torch.hook(state, bucket).wait()
        off = 0
        for i in ids:
            out[i] = result[off:off + params[i].numel()].view(params[i].shape).clone()
            off += params[i].numel()
    return out


class GlooGroupOfOne(unittest.TestCase):
    """Tests that run the hook on a gloo process group of this one rank (set up once per class)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        dist.init_process_group("gloo", init_method="file://" + os.path.join(cls.tmp.name, "store"), rank=0,
                                world_size=1)

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()
        cls.tmp.cleanup()


class HookTests(GlooGroupOfOne):

    def state(self, model, **kw):
        settings = dict(policy="static", r_min=4, r_max=8, step=4, window=3, alpha=1.0, beta=1.0,
                        warmup_mode="fixed", warmup_fixed_iters=3)
        settings.update(kw)
        return edgc_torch.State(None, model, **settings)

    def test_buckets_give_what_one_compressor_over_all_matrices_gives(self):
        # Cutting the model into buckets (any way, and re-cut as DDP does after its first iteration) must not change
        # what the hook delivers: one PowerSGD over all matrices in model order, 1-D tensors averaged exactly.
        model = Net()
        state = self.state(model)
        ref = edgc_torch.PowerSGD([[48, 40], [32, 64], [48, 40]], rank=8)
        splits = [(1, 2, 3), (1, 2, 3), (1, 2, 3), (2,), (2,), (3,), (), ()]
        for step, split in enumerate(splits):
            grads = gradients(model, step)
            got = run_step(state, model, grads, split)
            mats = [grads[i].clone().numpy() for i in (0, 2, 3)]
            if step >= 3:  # compression starts after the fixed warm-up (window 0)
                if split != splits[step - 1]:  # a rebuilt bucket re-draws its tensors' Q (same draw as a rank change)
                    for j in range(3):
                        ref.set_rank(j, 4)
                        ref.set_rank(j, 8)
                ref.step(mats)
                for j, i in enumerate((0, 2, 3)):
                    np.testing.assert_array_equal(got[i].numpy(), mats[j], err_msg=f"step {step} tensor {i}")
                np.testing.assert_array_equal(got[1].numpy(), grads[1].numpy())
            else:
                for i in range(4):
                    np.testing.assert_array_equal(got[i].numpy(), grads[i].numpy())
        self.assertEqual([w["stages"][0]["rank"] for w in state.windows], [0, 8])
        self.assertTrue(all(np.linalg.norm(state.error(i)) > 0 for i in (0, 2, 3)))
        # Rebuilt buckets: the superseded compressors are gone, their tensors' error feedback moved over.
        self.assertEqual(state._engine.compressors, 1)
        for i in (0, 2, 3):
            np.testing.assert_array_equal(state.error(i), ref.error([0, 2, 3].index(i)))

    def test_error_feedback_state_per_tensor(self):
        # With world size 1 the delivered gradient plus the new error equals the gradient plus the old error.
        model = Net()
        state = self.state(model, warmup_fixed_iters=0, window=2)
        run_step(state, model, gradients(model, 0), (2,))
        run_step(state, model, gradients(model, 1), (2,))  # window 0 closes at step 2: rank 8 from then on
        for step in range(2, 6):
            previous = {i: state.error(i) if state.error(i).size else np.zeros(p.numel(), np.float32)
                        for i, p in enumerate(model.parameters()) if p.dim() == 2}
            grads = gradients(model, step)
            got = run_step(state, model, grads, (2,))
            for i, e in previous.items():
                m = grads[i].numpy().reshape(-1) + e
                np.testing.assert_allclose(got[i].numpy().reshape(-1) + state.error(i), m, rtol=0, atol=2e-5)
                self.assertGreater(np.linalg.norm(state.error(i)), 0.05 * np.linalg.norm(m))
            self.assertEqual(state.error(1).size, 0)  # 1-D: never compressed, no error buffer
        self.assertLess(state.bytes_sent, state.dense_bytes)

    def test_rank_changes_between_windows(self):
        # Entropy falling by ln 2 per window (gradients halved each window) makes the edgc policy lower the rank by
        # its step each window until r_min; the compressed floats follow the rank in force.
        model = Net()
        state = self.state(model, policy="edgc", r_min=4, r_max=12, step=4, window=2, warmup_fixed_iters=2)
        for step in range(10):
            run_step(state, model, gradients(model, step % 2, scale=0.5 ** (step // 2)), (1, 3))
        ranks = [w["stages"][0]["rank"] for w in state.windows]
        self.assertEqual(ranks, [0, 12, 8, 4])
        h = [w["stages"][0]["entropy_gaussian"] for w in state.windows]
        for a, b in zip(h, h[1:]):
            self.assertAlmostEqual(a - b, np.log(2.0), delta=1e-4)
        for w in state.windows:
            r = w["stages"][0]["rank"]
            # PowerSGD's skip rule: a matrix is sent compressed only when its factors are under half its size.
            compressed = [r > 0 and (m + n) * r * 2 < m * n for m, n in ((48, 40), (32, 64), (48, 40))]
            per_step = 40 + sum((m + n) * r if c else m * n
                                for c, (m, n) in zip(compressed, ((48, 40), (32, 64), (48, 40))))
            self.assertEqual(w["stages"][0]["wire_floats"], 2 * per_step)
            self.assertEqual(w["stages"][0]["step_error"] > 0, any(compressed))
        self.assertEqual(state.ranks, [4])

    def test_loss_reaches_the_loss_policy(self):
        model = Net()
        state = self.state(model, policy="loss", warmup_fixed_iters=0, window=2)
        for step in range(4):
            run_step(state, model, gradients(model, step), ())
            state.record_loss(torch.tensor(2.0 + step))
        self.assertEqual([w["mean_loss"] for w in state.windows], [2.5])

    def test_without_model_parameters_learnt_in_first_iteration(self):
        model = Net()
        state = edgc_torch.State(None, policy="static", r_min=4, r_max=8, window=1, warmup_mode="fixed",
                                 warmup_fixed_iters=1)
        for step in range(3):
            run_step(state, model, gradients(model, step), (2,))
        self.assertEqual(state.stage_shapes, [(32, 64)])  # the largest matrix
        self.assertEqual([w["stages"][0]["rank"] for w in state.windows], [0, 8])

    def test_bad_arguments_raise_value_error_naming_them(self):
        model = Net()
        cases = {
            "r_min": dict(r_min=-4),
            "r_max": dict(r_max=64),  # beyond the 32-row matrix's rank
            "policy": dict(policy="bogus"),
            "window": dict(window=0),
            "alpha": dict(alpha=1.5),
            "beta": dict(beta=0.0),
            "step": dict(step=-1),
            "warmup_mode": dict(warmup_mode="later"),
            "bogus_key": dict(bogus_key=1),
            "threads": dict(threads=0),
            "seed": dict(seed="x"),
            "stages": dict(stages=0),
            "backend": dict(backend="tpu"),
            "device": dict(device=-1),
        }
        if not torch.cuda.is_available():  # this module or machine cannot run the CUDA kernels: refused by name
            cases["backend"] = dict(backend="cuda")
        for name, kw in cases.items():
            with self.subTest(name), self.assertRaises(ValueError) as cm:
                edgc_torch.State(None, model, **kw)
            self.assertTrue(str(cm.exception).startswith(name + ":"), str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            edgc_torch.State("group", model)
        self.assertIn("process_group", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            edgc_torch.State(None, model, stage_of={"a": 0}, stages=2)
        self.assertIn("stage_of", str(cm.exception))
        state = self.state(model)
        with self.assertRaises(ValueError) as cm:  # half precision bucket
            edgc_torch.hook(state, FakeBucket(0, [model.bias], [torch.zeros(40)], True)._half())
        self.assertIn("float32", str(cm.exception))

    def test_engine_takes_gradients_as_address_numel_pairs(self):
        # How the hook hands over a bucket (the CUDA backend's only form): the same step as numpy arrays, and bad
        # pairs refused by the gradient's position.
        grads = gradients(Net(), 0)
        engines = []
        for form in ("numpy", "pairs"):
            e = edgc_torch._core.Engine([([48, 40], 0), ([40], 0)], policy="static", r_min=4, r_max=8, step=4,
                                        window=1, warmup_mode="fixed", warmup_fixed_iters=0)
            e.close_window(e.observation())  # the static rank is in force from the first window on
            g = [grads[0].clone().reshape(-1), grads[1].clone()]
            arg = [t.numpy() for t in g] if form == "numpy" else [(t.data_ptr(), t.numel()) for t in g]
            r = e.compress([0, 1], arg, None, 0, 1)
            self.assertEqual(r["compressed_tensors"], 1)
            engines.append(g)
        for a, b in zip(*engines):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        self.assertFalse(np.array_equal(engines[0][0].numpy(), grads[0].reshape(-1).numpy()))  # it compressed
        e = edgc_torch._core.Engine([([48, 40], 0)], r_min=4, r_max=8)
        t = torch.zeros(48 * 40)
        for bad in [(t.data_ptr(), -1), (t.data_ptr() + 2, 4), (0, 4), (t.data_ptr(),), ("x", 4)]:
            with self.subTest(bad), self.assertRaises(ValueError) as cm:
                e.compress([0], [bad], None, 0, 1)
            self.assertTrue(str(cm.exception).startswith("grads[0]:"), str(cm.exception))

    def test_every_policy_builds_and_decides(self):
        names = [p["name"] for p in edgc_torch.policies()]
        self.assertEqual(names[:2], ["none", "static"])
        self.assertIn("edgc", names)
        obs = {"stages": [{"entropy_gaussian": -5.0, "entropy_histogram": -5.0, "elements": 100}], "mean_loss": 3.0}
        for name in names:
            with self.subTest(name):
                c = edgc_torch.Controller([(64, 64)], policy=name, r_min=4, r_max=16, warmup_mode="fixed",
                                          warmup_fixed_iters=0)
                d = c.decide(dict(obs, window=0, first_iteration=0, end_iteration=1000))
                self.assertEqual(c.policy, name)
                self.assertEqual(d["stages"][0]["rank"], 0 if name == "none" else 16)

    def test_powersgd_warm_start_and_rank_change(self):
        p = edgc_torch.PowerSGD([[40, 30]], rank=4)
        g = np.random.default_rng(0).standard_normal((40, 30)).astype(np.float32)
        p.step([g.copy()])
        q1 = p.warm_start_q(0)
        p.step([g.copy()])
        self.assertEqual(q1.size, 30 * 4)
        self.assertFalse(np.array_equal(q1, p.warm_start_q(0)))  # warm start: Q carried and refined
        e = p.error(0)
        p.set_rank(0, 8)
        self.assertEqual(p.warm_start_q(0).size, 0)  # a rank change re-draws Q ...
        np.testing.assert_array_equal(p.error(0), e)  # ... and keeps E
        with self.assertRaises(ValueError) as cm:
            p.set_rank(0, 31)
        self.assertIn("rank", str(cm.exception))

    def test_entropy_kernels_on_gaussian_values(self):
        # N(0, s^2): Gaussian entropy ln s + ln(2 pi e)/2, the histogram estimate close to it, kurtosis near 0; GDS
        # blocks at beta = 0.25 read about a quarter of the values and estimate the same.
        rng = np.random.default_rng(3)
        arrays = [(0.01 * rng.standard_normal(n)).astype(np.float32) for n in (200_000, 50_000)]
        exact = np.log(0.01) + 0.5 * np.log(2 * np.pi * np.e)
        full = edgc_torch.entropy(arrays)
        self.assertEqual(full["elements"], 250_000)
        self.assertAlmostEqual(full["entropy_gaussian"], exact, delta=0.01)
        self.assertAlmostEqual(full["entropy_histogram"], exact, delta=0.02)
        self.assertAlmostEqual(full["excess_kurtosis"], 0.0, delta=0.05)
        sampled = edgc_torch.entropy(arrays, beta=0.25, seed=1)
        self.assertLess(abs(sampled["elements"] - 62_500), 2_000)
        self.assertAlmostEqual(sampled["entropy_gaussian"], exact, delta=0.02)
        with self.assertRaises(ValueError) as cm:
            edgc_torch.entropy(arrays, beta=1.5)
        self.assertTrue(str(cm.exception).startswith("beta:"), str(cm.exception))


def _half(self):
    self._buffer = self._buffer.half()
    return self


FakeBucket._half = _half

if __name__ == "__main__":
    unittest.main()
