"""Serving efficiencies per software stack, fitted on that stack's published results
(``data/inference_runs.csv``, role ``calibrate``) with the same formulas the prediction uses.

* HBM bandwidth efficiency ``eta_bw``: batch-1 decode steps of the stack (ideal step / published step);
  a stack with none uses the median of every stack's batch-1 rows, and says so.
* Compute efficiency ``eta_c``: the efficiency at which the model reproduces each dense offline throughput
  result (bisection, :func:`workbook.serving.published.fit_compute_efficiency`); the stack's value is the
  median over its **newest round** (software moves fast: TensorRT-LLM gained 28% on the same H100s from
  MLPerf v4.1 to v5.0), so older rounds only show the drift.
* Each vendor has a best published stack and a generic open-source one (``STACKS``); a stack with no published
  result borrows another's efficiencies (``PROXIES``) and the answer names the proxy.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from workbook import cache
from workbook.catalog import Catalog
from workbook.model import serving as sv
from workbook.serving import published
from workbook.serving.scenario import PEAK_FOR

STACKS = {
    ("nvidia", "best"): "trtllm",
    ("nvidia", "generic"): "vllm-cuda",
    ("amd", "best"): "vllm-rocm",
    ("amd", "generic"): "vllm-rocm",
    ("google", "best"): "jetstream",
    ("google", "generic"): "vllm-tpu",
    ("aws", "best"): "neuron",
    ("aws", "generic"): "neuron",
}
STACK_NAMES = {
    "trtllm": "TensorRT-LLM",
    "vllm-cuda": "vLLM on CUDA",
    "vllm-rocm": "vLLM on ROCm",
    "jetstream": "JetStream",
    "vllm-tpu": "vLLM-TPU",
    "neuron": "Neuron NxD Inference",
}
PROXIES = {
    "vllm-tpu": ("jetstream", "no published vLLM-TPU result in the dataset: JetStream's efficiency is used"),
    "neuron": ("vllm-cuda", "no published Trainium serving result in the dataset: vLLM on CUDA's efficiency is used"),
}


@dataclasses.dataclass(frozen=True)
class ServingEfficiency:
    """Per stack: fraction of the HBM roofline (``eta_bw``) and of the dense peak (``eta_c``) reached, with the
    basis of each; ``moe``: mixture-of-experts factor on ``eta_c`` (:func:`moe_factor`); ``points``: every
    calibration row's own fitted efficiency."""

    stacks: pl.DataFrame  # stack, eta_bw, eta_c, bw_basis, compute_basis, round, published
    moe: float
    points: pl.DataFrame

    def for_accelerators(self, accelerators: pl.DataFrame, choice: str) -> pl.DataFrame:
        """``accelerators`` with the chosen stack of each vendor and its efficiencies (proxies resolved)."""
        mapping = pl.DataFrame([{"vendor": v, "stack": s} for (v, c), s in STACKS.items() if c == choice], orient="row")
        resolved = pl.DataFrame(
            [
                {
                    "stack": s,
                    "stack_name": STACK_NAMES[s],
                    "source_stack": PROXIES.get(s, (s, None))[0],
                    "stack_note": PROXIES.get(s, (s, None))[1],
                }
                for s in STACK_NAMES
            ],
            orient="row",
        )
        table = resolved.join(
            self.stacks.rename({"stack": "source_stack"}), on="source_stack", how="left"
        ).with_columns(
            stack_round=pl.col("round"),
            stack_note=pl.coalesce("stack_note", "compute_basis"),
        )
        return accelerators.join(mapping, on="vendor", how="left").join(
            table.select("stack", "stack_name", "stack_round", "stack_note", "eta_bw", "eta_c"), on="stack", how="left"
        )


def _bandwidth_points(runs: pl.DataFrame) -> pl.DataFrame:
    """eta_bw of every batch-1 TPOT row: ideal memory-bound step / published step."""
    points = []
    for r in runs.filter(pl.col("measure") == "tpot_ms").iter_rows(named=True):
        w = sv.BYTES_PER_ELEMENT[r["weight_precision"]]
        peak = r[PEAK_FOR[r["weight_precision"]]] or r["bf16_flops_per_s"]
        kv_token = sv.kv_bytes_per_token(
            r["n_layers"], r["n_kv_heads"], r["head_dim"], sv.BYTES_PER_ELEMENT[r["kv_precision"]]
        )
        kv = sv.kv_cache_bytes(r["batch"], kv_token, r["prompt_tokens"], r["output_tokens"], live=True)
        weights = sv.weights_read_bytes(r["params"], r["active_params"], r["batch"], w)
        ideal, _ = sv.decode_step_seconds(
            weights, kv, r["batch"], r["active_params"], r["tensor_parallel"], r["hbm_bytes_per_s"], peak, 1.0, 1.0
        )
        points.append({**_ids(r), "kind": "bandwidth", "efficiency": ideal / (r["value"] / 1000)})
    return pl.DataFrame(points)


def _ids(r: dict) -> dict:
    ids = {k: r[k] for k in ("run_id", "stack", "round", "published", "accelerator_id")}
    return {**ids, "system": f"{r['stack']}|{r['accelerator_id']}|{r['round']}"}


def compute_points(cat: Catalog, eta_bw: dict[str, float]) -> pl.DataFrame:
    """eta_c of every offline throughput row, each fitted on its own (kind ``compute``: dense models;
    ``compute-moe``: mixtures of experts, whose ratio to the dense value is the MoE factor)."""
    runs = cat.inference_runs.filter((pl.col("role") == "calibrate") & (pl.col("measure") == "tokens_per_s"))
    rows = [
        {
            **_ids(r),
            "kind": "compute" if r["params"] == r["active_params"] else "compute-moe",
            "efficiency": published.fit_compute_efficiency(cat.accelerators, r, eta_bw[r["stack"]], 1.0),
        }
        for r in runs.iter_rows(named=True)
    ]
    return pl.DataFrame(rows).filter(pl.col("efficiency").is_not_nan())


def moe_factor(points: pl.DataFrame) -> float:
    """Serving efficiency of mixture-of-experts layers relative to dense ones: the median, over MoE results, of
    their fitted efficiency / the dense efficiency of the same stack and round (smaller expert GEMMs and
    routing reach less of the peak). 1.0 when no pair exists."""
    dense = (
        points.filter(pl.col("kind") == "compute")
        .group_by("stack", "round")
        .agg(pl.col("efficiency").median().alias("dense"))
    )
    pairs = points.filter(pl.col("kind") == "compute-moe").join(dense, on=["stack", "round"])
    return (pairs["efficiency"] / pairs["dense"]).median() if pairs.height else 1.0


def bandwidth_by_stack(points: pl.DataFrame, stacks) -> tuple[dict[str, float], dict[str, str]]:
    """Median eta_bw per stack; the median of all batch-1 rows for a stack with none (named in its basis)."""
    overall = points["efficiency"].median()
    values, basis = {}, {}
    for stack in stacks:
        own = points.filter(pl.col("stack") == stack)["efficiency"]
        values[stack] = own.median() if own.len() else overall
        basis[stack] = (
            f"median of {own.len()} batch-1 latency result(s)"
            if own.len()
            else f"no batch-1 latency of this stack: median of all {points.height} batch-1 results"
        )
    return values, basis


def newest_round(points: pl.DataFrame) -> pl.DataFrame:
    """Per stack: median eta_c over the rows of its newest round."""
    newest = points.filter(pl.col("published") == pl.col("published").max().over("stack"))
    return newest.group_by("stack").agg(
        pl.col("efficiency").median().alias("eta_c"),
        pl.col("round").first(),
        pl.col("published").first(),
        pl.col("run_id").alias("runs"),
    )


def _stack_table(compute: pl.DataFrame, eta_bw: dict, bw_basis: dict) -> pl.DataFrame:
    fitted = newest_round(compute)
    return fitted.with_columns(
        eta_bw=pl.col("stack").replace_strict(eta_bw, return_dtype=pl.Float64),
        bw_basis=pl.col("stack").replace_strict(bw_basis, return_dtype=pl.String),
        compute_basis=pl.format("calibrated on {} ({})", pl.col("runs").list.join(", "), pl.col("round")),
    ).drop("runs")


@cache.per_catalog("serving-calibration", ServingEfficiency)  # fitted once per table content and code version
def calibrate(cat: Catalog) -> ServingEfficiency:
    """Efficiencies of every stack with published results."""
    runs = cat.inference_runs.filter(pl.col("role") == "calibrate").join(
        cat.accelerators, on="accelerator_id", how="left"
    )
    bandwidth = _bandwidth_points(runs)
    stacks = sorted(set(cat.inference_runs["stack"]))
    eta_bw, bw_basis = bandwidth_by_stack(bandwidth, stacks)
    compute = compute_points(cat, eta_bw)
    return ServingEfficiency(
        stacks=_stack_table(compute.filter(pl.col("kind") == "compute"), eta_bw, bw_basis),
        moe=moe_factor(compute),
        points=pl.concat([bandwidth, compute]),
    )
