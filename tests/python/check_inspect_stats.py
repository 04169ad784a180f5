#!/usr/bin/python3
"""Check `edgc trace inspect --json` against statistics recomputed independently with numpy.

    /usr/bin/python3 tests/python/check_inspect_stats.py --edgc build/tools/edgc --trace TRACE_DIR

Why: the C++ statistics feed every later analysis (entropy, compression policies), so they are checked
against a second implementation that shares no code with them: the files are read with the Python reader
and the moments are computed two-pass in float64 from the stored float32 values.

Conventions checked (per iteration and tensor): `count` = finite values, `nan`, `inf` exact; `mean`,
population `std` (ddof 0) and `excess_kurtosis` = m4 / m2^2 - 3 over the finite values, within
1e-6 relative plus 1e-12 times a scale (the largest finite magnitude for mean and std, m4 / m2^2 for the
kurtosis); `min` / `max` exact at the data's float32 precision.  With no finite value, mean, std,
kurtosis, min and max must be null; with zero variance the kurtosis must be null.  Also checked: the
iteration keys, `file` and `loss` against trace.json, and the tensor table against the manifest.
Exit status: 0 all match, 1 mismatches, 2 the command or its output is unusable.
"""

import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "capture"))
from edgc_capture import load  # noqa: E402

SCHEMA = "edgc.trace_inspect/1"
RTOL, ATOL_SCALE = 1e-6, 1e-12


def reference_stats(values):
    """Statistics of one captured tensor, from its float32 values, in float64."""
    x = np.asarray(values, dtype=np.float32).astype(np.float64).ravel()
    finite = x[np.isfinite(x)]
    stats = {"count": int(finite.size), "nan": int(np.isnan(x).sum()), "inf": int(np.isinf(x).sum()),
             "mean": None, "std": None, "excess_kurtosis": None, "min": None, "max": None, "_scale": 0.0}
    if finite.size:
        mean = finite.mean()
        d = finite - mean
        m2, m4 = np.mean(d * d), np.mean(d ** 4)
        stats.update(mean=float(mean), std=float(math.sqrt(m2)), min=float(finite.min()),
                     max=float(finite.max()), _scale=float(np.abs(finite).max()))
        if m2 > 0:
            stats["excess_kurtosis"] = float(m4 / (m2 * m2) - 3.0)
    return stats


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compare_stats(got, want):
    """Returns a list of 'field: got X, want Y' strings."""
    diffs = []
    if not isinstance(got, dict):
        return [f"statistics are {got!r}, not an object"]
    for key in ("count", "nan", "inf"):
        if not (isinstance(got.get(key), int) and not isinstance(got.get(key), bool)) or got[key] != want[key]:
            diffs.append(f"{key}: got {got.get(key)!r}, want {want[key]}")
    for key in ("mean", "std", "excess_kurtosis", "min", "max"):
        g, w = got.get(key, "<missing>"), want[key]
        if w is None:
            if g is not None:
                diffs.append(f"{key}: got {g!r}, want null")
            continue
        if not is_number(g) or not math.isfinite(g):
            diffs.append(f"{key}: got {g!r}, want {w!r}")
        elif key in ("min", "max"):
            if np.float32(g) != np.float32(w):
                diffs.append(f"{key}: got {g!r}, want {w!r} (exact)")
        else:
            scale = abs(w) + 3.0 if key == "excess_kurtosis" else want["_scale"]
            if abs(g - w) > RTOL * abs(w) + ATOL_SCALE * scale:
                diffs.append(f"{key}: got {g!r}, want {w!r} (diff {abs(g - w):.3g})")
    return diffs


def compare_tensor_table(got, manifest, captured):
    diffs = []
    if not isinstance(got, list) or len(got) != len(manifest):
        return [f"tensors: got {len(got) if isinstance(got, list) else got!r} entries, want {len(manifest)}"]
    for g, t in zip(got, manifest):
        want = dict(t, numel=int(np.prod(t["shape"], dtype=np.int64)), captured_elems=captured[t["name"]])
        for key, w in want.items():
            if not isinstance(g, dict) or g.get(key) != w:
                diffs.append(f"tensor {t['name']}: {key} got {g.get(key) if isinstance(g, dict) else g!r}, "
                             f"want {w!r}")
    return diffs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edgc", required=True, help="path of the edgc binary")
    ap.add_argument("--trace", required=True, help="trace directory")
    ap.add_argument("--show", type=int, default=10, help="mismatches to print")
    args = ap.parse_args(argv)

    cmd = [args.edgc, "trace", "inspect", args.trace, "--json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"cannot run {' '.join(cmd)}: {e}", file=sys.stderr)
        return 2
    if proc.returncode != 0:
        print(f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stderr[-4000:]}", file=sys.stderr)
        return 2
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        print(f"output is not JSON ({e}): {proc.stdout[:500]!r}", file=sys.stderr)
        return 2

    with open(os.path.join(args.trace, "trace.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    mismatches, checked = [], 0
    if report.get("schema") != SCHEMA:
        mismatches.append(f"schema: got {report.get('schema')!r}, want {SCHEMA!r}")
    if (report.get("model") or {}).get("name") != manifest["model"]["name"]:
        mismatches.append(f"model.name: got {(report.get('model') or {}).get('name')!r}")

    iterations = report.get("iterations")
    if not isinstance(iterations, dict):
        iterations = {}
        mismatches.append("iterations: not an object")
    want_keys = [str(i["iteration"]) for i in manifest["iterations"]]
    if sorted(iterations, key=lambda k: (len(k), k)) != want_keys:
        extra, missing = sorted(set(iterations) - set(want_keys)), sorted(set(want_keys) - set(iterations))
        mismatches.append(f"iteration keys: extra {extra[:5]}, missing {missing[:5]}")

    captured = None
    for it in manifest["iterations"]:
        key = str(it["iteration"])
        entries, _ = load(os.path.join(args.trace, it["file"]))
        if captured is None:
            captured = {t["name"]: int(entries[t["name"]].array.size) for t in manifest["tensors"]}
            mismatches += compare_tensor_table(report.get("tensors"), manifest["tensors"], captured)
        got_it = iterations.get(key)
        if not isinstance(got_it, dict):
            continue
        want_loss, got_loss = it["loss"], got_it.get("loss", "<missing>")
        if (want_loss is None) != (got_loss is None) or (
                want_loss is not None and (not is_number(got_loss) or
                                           abs(got_loss - want_loss) > 1e-12 * max(1.0, abs(want_loss)))):
            mismatches.append(f"iteration {key}: loss got {got_loss!r}, want {want_loss!r}")
        if got_it.get("file") != it["file"]:
            mismatches.append(f"iteration {key}: file got {got_it.get('file')!r}, want {it['file']!r}")
        got_tensors = got_it.get("tensors") or {}
        if set(got_tensors) != {t["name"] for t in manifest["tensors"]}:
            mismatches.append(f"iteration {key}: tensor names differ from the manifest")
        for t in manifest["tensors"]:
            checked += 1
            diffs = compare_stats(got_tensors.get(t["name"]), reference_stats(entries[t["name"]].array))
            mismatches += [f"iteration {key} {t['name']}: {d}" for d in diffs]

    for m in mismatches[:args.show]:
        print("MISMATCH", m)
    print(f"checked {checked} tensor-iterations: {len(mismatches)} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
