#!/usr/bin/env python3
"""Writes the `edgc validate` fixture: measurements.json of a hand-made 'live' run whose times are the closed forms
of the ideal-network cluster in cluster.json, so validate's predictions must agree with them (design.md §8:
ideal-network collectives match the closed form to <= 0.1 %).

Cluster: one host, 4 ranks on one switch: per-rank link bandwidth B, per-hop latency L (cluster.json).
Layout: pp 2 x dp 2, global rank = stage * dp + replica, local index = rank.
Ring all-reduce of S bytes over D ranks: 2(D-1) * (L + S / (D * B)).
Compression compute: the roofline of sim::powersgd_batch_s: per matrix max(8 m n e / HBM, 6 m n r / F) + 2 m r^2 / F,
e = element bytes, F and HBM the achieved rates; plus the pack and unpack of the fused dense buffer, two copies
(read + write each) of its bytes at HBM: 4 S / HBM (validate's model without a measured copy profile). As `edgc live` does, cluster.json holds them divided by the cost
model's default efficiencies (compute.efficiency 0.4, compute.hbm_efficiency 0.85), so the defaults give them back.
Sync of a stage = compute + its all-reduces (all stages start together, nothing shares a link);
iteration = max over stages.

Run from this folder: python3 make_fixture.py (rewrites measurements.json).
"""
import json

L = 20e-6  # s, cluster.json intra_node.latency_us
B = 5e9  # B/s, cluster.json intra_node.bandwidth_GBps
F = 0.25e12 * 0.4  # FLOP/s achieved: cluster.json gpu.peak_tflops x default compute.efficiency
HBM = 10e9 * 0.85  # B/s achieved: cluster.json gpu.hbm_GBps x default compute.hbm_efficiency
E = 4  # fp32
PP, DP = 2, 2


def ring(s, d=DP):
    return 2 * (d - 1) * (L + s / (d * B))


def compute(matrices):
    t = 0.0
    for m, n, r, c in matrices:
        t += c * (max(8.0 * m * n * E / HBM, 6.0 * m * n * r / F) + 2.0 * m * r * r / F)
    return t


# Per stage: (1-D bytes, [(rows, cols)] of its 2-D gradients, two of each).
STAGES = [(4096, [(256, 1024), (1024, 256)]), (8192, [(512, 512)])]


def stage_step(stage, rank):
    dense_only, shapes = STAGES[stage]
    full = dense_only + sum(2 * m * n * E for m, n in shapes)
    if rank == 0:
        colls = [("dense", full)]
        mats = []
    else:
        mats = [(m, n, rank, 2) for m, n in shapes]
        p = sum(c * m * r * E for m, n, r, c in mats)
        q = sum(c * n * r * E for m, n, r, c in mats)
        colls = [("dense", dense_only), ("P", p), ("Q", q)]
    comp = compute(mats) + 4.0 * colls[0][1] / HBM  # colls[0] is the dense all-reduce
    timed = [{"kind": k, "bytes": b, "time_s": ring(b)} for k, b in colls]
    return {
        "rank": rank,
        "sync_s": comp + sum(c["time_s"] for c in timed),
        "compute_s": comp,
        "wire_bytes": sum(b for _, b in colls),
        "dense_bytes": full,
        "collectives": timed,
        "matrices": [{"rows": m, "cols": n, "rank": r, "count": c} for m, n, r, c in mats],
    }


def step(k, ranks):
    stages = [stage_step(s, r) for s, r in enumerate(ranks)]
    return {"step": k, "iteration": 10 * k, "iteration_s": max(s["sync_s"] for s in stages), "stages": stages}


runs = [
    {"policy": "none", "steps": [step(k, [0, 0]) for k in range(2)]},
    {"policy": "edgc", "steps": [step(0, [4, 8]), step(1, [4, 8]), step(2, [8, 8])]},
]
cal_bytes = [1024, 65536, 1048576]
tcom_points = []
for stage, rank in [(0, 4), (0, 8), (0, 16), (1, 8)]:
    s = stage_step(stage, rank)
    tcom_points.append({"stage": stage, "rank": rank, "comm_s": sum(c["time_s"] for c in s["collectives"]),
                        "compute_s": s["compute_s"]})


def fit(points):
    n = len(points)
    xs = [p["rank"] for p in points]
    ys = [p["comm_s"] for p in points]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    eta = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    return eta, my - eta * mx


tcom_fit = []
for stage in range(PP):
    pts = [p for p in tcom_points if p["stage"] == stage]
    eta, c = fit(pts)
    tcom_fit.append({"stage": stage, "eta_s": eta, "c_s": c, "r2": 1.0, "points": len(pts)})

doc = {
    "schema": "edgc.live/1",
    "world_size": PP * DP,
    "pp": PP,
    "dp": DP,
    "comm": "mpi",
    "backend": "cpu",
    "element_bytes": E,
    "cluster_file": "cluster.json",
    "trace": "synthetic",
    "placement": [{"rank": g, "host": "fixture-host", "node": 0, "local": g, "stage": g // DP, "replica": g % DP}
                  for g in range(PP * DP)],
    "calibration": {"ranks": DP, "rows": [{"bytes": b, "time_s": ring(b)} for b in cal_bytes], "latency_s": L,
                    "bandwidth_Bps": B},
    "runs": runs,
    "tcom_points": tcom_points,
    "tcom_fit": tcom_fit,
}
with open("measurements.json", "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
