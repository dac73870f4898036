"""A published serving result (one row of ``data/inference_runs.csv``) as the model sees it: its scenario and
what the model predicts for it, given a stack's efficiencies. Calibration and validation both use these."""

from __future__ import annotations

import math

import polars as pl

from workbook.model.spec import ModelSpec
from workbook.serving import replica
from workbook.serving.scenario import ServeScenario


def scenario(run: dict) -> ServeScenario:
    """The published run's model, precisions, request shape and latency limits."""
    model = ModelSpec(
        params=run["params"],
        active_params=run["active_params"],
        n_layers=run["n_layers"],
        hidden_dim=run["hidden_dim"],
        attention_dim=run["hidden_dim"],
    )
    return ServeScenario(
        model=model,
        weight_precision=run["weight_precision"],
        kv_precision=run["kv_precision"],
        prompt_tokens=run["prompt_tokens"],
        output_tokens=max(1, int(round(run["output_tokens"]))),
        ttft_ms=run["ttft_limit_ms"],
        tpot_ms=run["tpot_limit_ms"],
        n_kv_heads=run["n_kv_heads"],
        accelerators=(run["accelerator_id"],),
        max_batch=run["batch"],
        prompt_tokens_p99=run["prompt_tokens_p99"],
    )


def predicted_column(run: dict) -> str:
    """The load-curve column holding ``run``'s statistic: p99 latencies are ``tpot_ms`` / ``ttft_ms`` (the
    statistic targets set), means (and single-request figures whose statistic is unstated) ``*_mean_ms``."""
    if run["measure"] == "tokens_per_s" or run["latency_statistic"] == "p99":
        return run["measure"]
    return run["measure"].replace("_ms", "_mean_ms")


def _replicas(accelerators: pl.DataFrame, run: dict, eta_bw: float, eta_c: float, moe: float) -> pl.DataFrame:
    acc = accelerators.filter(pl.col("accelerator_id") == run["accelerator_id"]).with_columns(
        eta_bw=pl.lit(eta_bw), eta_c=pl.lit(eta_c)
    )
    frame = replica.configs(acc).filter(
        (pl.col("tensor_parallel") <= run["chips"]) & (run["chips"] % pl.col("tensor_parallel") == 0)
    )
    if run["tensor_parallel"]:
        frame = frame.filter(pl.col("tensor_parallel") == run["tensor_parallel"])
    return replica.replicas(frame, scenario(run), moe)


def predict(accelerators: pl.DataFrame, run: dict, eta_bw: float, eta_c: float, moe: float) -> float:
    """The model's figure for ``run``'s measure on the configuration with the most throughput: system tokens/s at
    the highest load within the limits (offline: memory only); TTFT / TPOT (ms), in the row's statistic (mean or
    p99), of a lone request (latency scenario) or, for a server result, at that same highest load within the
    server's p99 limits. A server result's
    load is, by MLPerf's rules, the most its system sustained within the limits: its counterpart is the model's own
    most, not the same requests/s (near saturation TPOT ~ 1 / (1 - load), so a 10% capacity error read at the
    published requests/s would swing the latency several-fold; the throughput rows carry that error)."""
    s = scenario(run)
    reps = _replicas(accelerators, run, eta_bw, eta_c, moe)
    if reps.height == 0:
        return math.nan
    best = (
        reps.join(replica.limits(replica.load_curve(reps, s)), on=["accelerator_id", "tensor_parallel"])
        .filter(pl.col("max_load_fraction").is_not_null())
        .with_columns(
            tokens_per_s=pl.col("max_load_fraction")
            * pl.col("capacity_rps")
            * s.output_tokens
            * run["chips"]
            / pl.col("tensor_parallel")
        )
        .sort("tokens_per_s", descending=True)
        .head(1)
    )
    if best.height == 0:
        return math.nan
    if run["measure"] == "tokens_per_s":
        return best["tokens_per_s"].item()
    rho = pl.col("max_load_fraction") if run["scenario"] == "server" else pl.lit(0.0)
    return replica.at_load(best, s, rho)[predicted_column(run)].item()


def fit_compute_efficiency(
    accelerators: pl.DataFrame, run: dict, eta_bw: float, moe: float, low: float = 0.02, high: float = 1.0
) -> float:
    """The compute efficiency at which the model reproduces ``run``'s published throughput (bisection; the
    prediction rises with the efficiency). NaN when even 100% of the peak falls short."""
    if not predict(accelerators, run, eta_bw, high, moe) >= run["value"]:
        return math.nan
    for _ in range(20):  # 1e-6 of the bracket
        mid = (low + high) / 2
        if predict(accelerators, run, eta_bw, mid, moe) >= run["value"]:
            high = mid
        else:
            low = mid
    return high
