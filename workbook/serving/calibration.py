"""Serving efficiencies: the fraction of the roofline reached, fitted on published batch-1 latencies
(``data/inference_runs.csv``, role ``calibrate``) with the same formulas the prediction uses."""

from __future__ import annotations

import dataclasses
import functools

import polars as pl

from workbook.catalog import Catalog
from workbook.model import serving as sv
from workbook.serving.scenario import PEAK_FOR
from workbook.training import calibration as calibration_mod


@dataclasses.dataclass(frozen=True)
class ServingEfficiency:
    """Fraction of the roofline reached: HBM bandwidth in decode, peak FLOPS in prefill and batched decode."""

    bandwidth: float
    compute: float
    moe: float  # mixture-of-experts compute efficiency, shared with training (workbook.calibration)
    points: pl.DataFrame


@functools.lru_cache(maxsize=4)
def calibrate(cat: Catalog) -> ServingEfficiency:
    """Bandwidth efficiency from batch-1 decode steps; compute efficiency from batch-1 prefills (TTFT)."""
    points = []
    runs = cat.inference_runs.filter(pl.col("role") == "calibrate").join(
        cat.accelerators, on="accelerator_id", how="left"
    )
    for r in runs.iter_rows(named=True):
        t = r["tensor_parallel"]
        w = sv.BYTES_PER_ELEMENT[r["weight_precision"]]
        peak = r[PEAK_FOR[r["weight_precision"]]] or r["bf16_flops_per_s"]
        if r["measure"] == "tpot_ms":
            kv_token = sv.kv_bytes_per_token(
                r["n_layers"], r["n_kv_heads"], r["head_dim"], sv.BYTES_PER_ELEMENT[r["kv_precision"]]
            )
            kv = sv.kv_cache_bytes(r["batch"], kv_token, r["prompt_tokens"], r["output_tokens"], live=True)
            weights = sv.weights_read_bytes(r["params"], r["active_params"], r["batch"], w)
            ideal, _ = sv.decode_step_seconds(
                weights, kv, r["batch"], r["active_params"], t, r["hbm_bytes_per_s"], peak, 1.0, 1.0
            )
            points.append({"run_id": r["run_id"], "kind": "bandwidth", "efficiency": ideal / (r["value"] / 1000)})
        else:
            ideal = sv.prefill_seconds(r["active_params"], r["prompt_tokens"], t, peak, 1.0)
            points.append({"run_id": r["run_id"], "kind": "compute", "efficiency": ideal / (r["value"] / 1000)})
    frame = pl.DataFrame(points)
    median = lambda kind: frame.filter(pl.col("kind") == kind)["efficiency"].median()  # noqa: E731
    return ServingEfficiency(
        bandwidth=median("bandwidth"),
        compute=median("compute"),
        moe=calibration_mod.fit(cat).moe_efficiency,
        points=frame,
    )
