#!/usr/bin/python3
"""edgc_torch's hook on the CUDA backend against the CPU backend, on the same buckets (needs a GPU and a module built
with EDGC_TORCH_CUDA; skips otherwise).

    PYTHONPATH=build/python python3 tests/python/test_torch_hook_cuda.py

Over windows that sample entropy (policy edgc) and compress (after a fixed warm-up): the same rank decisions, the
averaged gradients and the error feedback within float rounding of each other, the buckets left on the GPU.
"""

import os
import sys
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_torch_hook import FakeBucket, GlooGroupOfOne, Net, gradients  # noqa: E402

import edgc_torch  # noqa: E402


def cuda_reason():
    if not torch.cuda.is_available():
        return "no CUDA device"
    try:
        edgc_torch._core.check_settings(backend="cuda")
    except ValueError as e:
        return str(e)
    return ""


@unittest.skipIf(cuda_reason(), f"skipped: {cuda_reason()}")
class CudaHookTests(GlooGroupOfOne):
    def test_cuda_backend_matches_the_cpu_backend(self):
        model = Net()
        settings = dict(policy="edgc", r_min=4, r_max=16, step=4, window=3, alpha=1.0, beta=0.5, warmup_mode="fixed",
                        warmup_fixed_iters=3)
        states = {b: edgc_torch.State(None, model, backend=b, **settings) for b in ("cpu", "cuda")}
        params = list(model.parameters())
        for step in range(12):
            grads = gradients(model, step, scale=1.0 + 0.1 * step)
            out = {}
            for backend, state in states.items():
                device = "cuda" if backend == "cuda" else "cpu"
                got = []
                for b, ids in enumerate(([0, 1], [2, 3])):
                    bucket = FakeBucket(b, [params[i] for i in ids], [grads[i].to(device) for i in ids], b == 1)
                    result = edgc_torch.hook(state, bucket).wait()
                    self.assertEqual(result.device.type, device)
                    got.append(result.cpu().numpy())
                out[backend] = np.concatenate(got)
            scale = np.abs(out["cpu"]).max()
            np.testing.assert_allclose(out["cuda"], out["cpu"], rtol=0, atol=1e-4 * scale, err_msg=f"step {step}")
            self.assertEqual(states["cuda"].ranks, states["cpu"].ranks, f"step {step}")
        self.assertGreater(max(w["stages"][0]["rank"] for w in states["cpu"].windows), 0)  # it compressed
        for name in ("a", "b", "c"):
            e_cpu, e_gpu = states["cpu"].error(name), states["cuda"].error(name)
            np.testing.assert_allclose(e_gpu, e_cpu, rtol=0, atol=1e-4 * np.abs(e_cpu).max() + 1e-12)
        self.assertEqual(len(states["cuda"].windows), len(states["cpu"].windows))
        for wc, wg in zip(states["cpu"].windows, states["cuda"].windows):
            for sc, sg in zip(wc["stages"], wg["stages"]):
                if sc["entropy_gaussian"] is not None:
                    self.assertAlmostEqual(sg["entropy_gaussian"], sc["entropy_gaussian"], places=6)


if __name__ == "__main__":
    unittest.main()
