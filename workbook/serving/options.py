"""``evaluate_serving(scenario)``: per (accelerator, cloud, pricing) option, the cheapest way to serve a model.

For every accelerator the model tries tensor-parallel degrees (inside the fast domain) and batch sizes,
keeps the configurations that fit in memory and meet the latency targets (time to first token, time per
output token), takes the one with the most output tokens/s per chip, and provisions enough replicas for
the traffic. Efficiencies of the roofline (``model/serving.py``) come from :mod:`workbook.serving.calibration`.
"""

from __future__ import annotations

import polars as pl

from workbook import catalog as catalog_mod
from workbook.catalog import Catalog
from workbook.model import cost
from workbook.model import serving as sv
from workbook.model.units import HEAD_DIM, SECONDS_PER_HOUR
from workbook.serving.calibration import ServingEfficiency, calibrate
from workbook.serving.scenario import PEAK_FOR, ServeScenario

TP_CANDIDATES = (1, 2, 4, 8, 16, 32, 64)
BATCH_CANDIDATES = tuple(2**i for i in range(0, 12))  # 1 .. 2048 sequences


def _configs(cat: Catalog, s: ServeScenario) -> pl.DataFrame:
    """Accelerators x tensor-parallel degree x batch, with memory fit and latencies."""
    acc = cat.accelerators
    if s.accelerators:
        acc = acc.filter(pl.col("accelerator_id").is_in(list(s.accelerators)))
    grid = pl.DataFrame({"tensor_parallel": TP_CANDIDATES}).join(pl.DataFrame({"batch": BATCH_CANDIDATES}), how="cross")
    return acc.join(grid, how="cross").filter(
        (pl.col("tensor_parallel") <= pl.max_horizontal(pl.col("scaleup_domain_chips"), pl.lit(1)))
        & (pl.col("tensor_parallel") <= pl.col("max_job_chips"))
    )


def _evaluate_configs(frame: pl.DataFrame, s: ServeScenario, eff: ServingEfficiency) -> pl.DataFrame:
    m = s.model
    w_bytes = sv.BYTES_PER_ELEMENT[s.weight_precision]
    kv_token = sv.kv_bytes_per_token(m.n_layers, s.kv_heads, HEAD_DIM, sv.BYTES_PER_ELEMENT[s.kv_precision])
    bw_eff = s.efficiency_override or eff.bandwidth
    flops_eff = (s.efficiency_override or eff.compute) * (eff.moe if m.active_params < m.params else 1.0)
    t = pl.col("tensor_parallel").cast(pl.Float64)
    batch = pl.col("batch").cast(pl.Float64)
    peak = pl.col(PEAK_FOR[s.weight_precision]).fill_null(pl.col("bf16_flops_per_s"))
    kv_live = sv.kv_cache_bytes(batch, kv_token, s.prompt_tokens, s.output_tokens, live=True)
    memory_s, compute_s = sv.decode_step_seconds(
        sv.weights_read_bytes(m.params, m.active_params, batch, w_bytes),
        kv_live,
        batch,
        m.active_params,
        t,
        pl.col("hbm_bytes_per_s"),
        peak,
        bw_eff,
        flops_eff,
    )
    frame = frame.with_columns(
        weights_gb=w_bytes * m.params / t / 1e9,
        kv_cache_gb=sv.kv_cache_bytes(batch, kv_token, s.prompt_tokens, s.output_tokens) / t / 1e9,
        overhead_gb=pl.lit(s.assumptions.runtime_overhead_bytes / 1e9),
        ttft_ms=sv.prefill_seconds(m.active_params, s.prompt_tokens, t, peak, flops_eff) * 1000,
        tpot_ms=pl.max_horizontal(memory_s, compute_s) * 1000,
        decode_bound=pl.when(memory_s >= compute_s).then(pl.lit("memory bandwidth")).otherwise(pl.lit("compute")),
    ).with_columns(
        memory_per_chip_gb=pl.col("weights_gb") + pl.col("kv_cache_gb") + pl.col("overhead_gb"),
        tokens_per_s_per_replica=sv.output_tokens_per_s(
            s.output_tokens, pl.col("ttft_ms") / 1000, pl.col("tpot_ms") / 1000, batch
        ),
    )
    return frame.with_columns(
        fits_in_memory=pl.col("memory_per_chip_gb") <= pl.col("hbm_bytes") / 1e9 * s.assumptions.hbm_usable_fraction,
        meets_ttft=pl.lit(True) if s.ttft_ms is None else pl.col("ttft_ms") <= s.ttft_ms,
        meets_tpot=pl.lit(True) if s.tpot_ms is None else pl.col("tpot_ms") <= s.tpot_ms,
        tokens_per_s_per_chip=pl.col("tokens_per_s_per_replica") / t,
    )


def _why_not(s: ServeScenario) -> pl.Expr:
    return (
        pl.when(~pl.col("any_fits"))
        .then(pl.lit("weights and one sequence's KV cache do not fit even across the fast domain"))
        .when(~pl.col("any_ttft"))
        .then(
            pl.format(
                "prefill of {} tokens takes longer than the {} ms TTFT target",
                pl.lit(s.prompt_tokens),
                pl.lit(s.ttft_ms),
            )
        )
        .when(~pl.col("any_tpot"))
        .then(pl.format("even batch 1 is slower than the {} ms per-token target", pl.lit(s.tpot_ms)))
        .otherwise(None)
    )


def best_configs(cat: Catalog, s: ServeScenario, eff: ServingEfficiency) -> pl.DataFrame:
    """Per accelerator: the configuration meeting every target with the fewest chips for the traffic
    (ties: the most output tokens/s per chip, i.e. the most headroom)."""
    frame = (
        _evaluate_configs(_configs(cat, s), s, eff)
        .with_columns(
            replicas=(pl.lit(s.output_tokens_per_s) / pl.col("tokens_per_s_per_replica"))
            .ceil()
            .clip(lower_bound=1)
            .cast(pl.Int64)
        )
        .with_columns(chips=pl.col("replicas") * pl.col("tensor_parallel"))
    )
    ok = pl.col("fits_in_memory") & pl.col("meets_ttft") & pl.col("meets_tpot")
    summary = frame.group_by("accelerator_id").agg(
        pl.col("fits_in_memory").any().alias("any_fits"),
        (pl.col("fits_in_memory") & pl.col("meets_ttft")).any().alias("any_ttft"),
        ok.any().alias("any_tpot"),
    )
    best = (
        frame.filter(ok)
        .sort(["chips", "tokens_per_s_per_chip"], descending=[False, True])
        .unique("accelerator_id", keep="first", maintain_order=True)
    )
    fallback = frame.sort("tensor_parallel", "batch").unique("accelerator_id", keep="first", maintain_order=True)
    chosen = pl.concat([best, fallback.join(best.select("accelerator_id"), on="accelerator_id", how="anti")])
    return chosen.join(summary, on="accelerator_id").with_columns(serve_reason=_why_not(s))


SERVE_COLUMNS = [
    "accelerator_id",
    "name",
    "kind",
    "family",
    "cloud",
    "pricing_model",
    "feasible",
    "infeasible_reason",
    "tensor_parallel",
    "batch",
    "chips_per_replica",
    "replicas",
    "chips",
    "tokens_per_s_per_chip",
    "tokens_per_s_per_replica",
    "ttft_ms",
    "tpot_ms",
    "decode_bound",
    "memory_per_chip_gb",
    "weights_gb",
    "kv_cache_gb",
    "overhead_gb",
    "hbm_gb",
    "fits_in_memory",
    "utilisation",
    "usd_per_chip_hour",
    "usd_per_hour",
    "usd_per_million_tokens",
    "usd_per_million_tokens_low",
    "usd_per_million_tokens_high",
    "usd_per_million_tokens_at_full_load",
    "kwh_per_million_tokens",
]


def evaluate_serving(
    s: ServeScenario, catalog: Catalog | None = None, efficiency: ServingEfficiency | None = None
) -> pl.DataFrame:
    """Every (accelerator, cloud, pricing) serving option; feasible ones cheapest first."""
    cat = catalog or catalog_mod.load()
    eff = efficiency or calibrate(cat)
    demand = s.output_tokens_per_s
    frame = best_configs(cat, s, eff).with_columns(
        chips_per_replica=pl.col("tensor_parallel"),
        utilisation=pl.lit(demand) / (pl.col("replicas") * pl.col("tokens_per_s_per_replica")),
    )
    tokens_per_hour = demand * SECONDS_PER_HOUR / 1e6  # millions of output tokens served per hour
    frame = frame.join(cat.price_summary(s.pricing, s.clouds), on="accelerator_id", how="left").with_columns(
        usd_per_hour=pl.col("chips") * pl.col("usd_per_chip_hour"),
        usd_per_million_tokens=pl.col("chips") * pl.col("usd_per_chip_hour") / tokens_per_hour,
        usd_per_million_tokens_low=pl.col("chips") * pl.col("usd_per_chip_hour_low") / tokens_per_hour,
        usd_per_million_tokens_high=pl.col("chips") * pl.col("usd_per_chip_hour_high") / tokens_per_hour,
        usd_per_million_tokens_at_full_load=pl.col("usd_per_chip_hour")
        / (pl.col("tokens_per_s_per_chip") * SECONDS_PER_HOUR / 1e6),
        kwh_per_million_tokens=cost.energy_kwh(
            pl.col("chips"), pl.col("watts"), 1.0, s.assumptions.host_power_factor, s.assumptions.pue
        )
        / tokens_per_hour,
        hbm_gb=pl.col("hbm_bytes") / 1e9,
    )
    reason = (
        pl.when(pl.col("serve_reason").is_not_null())
        .then(pl.col("serve_reason"))
        .when(pl.col("chips") > pl.col("max_job_chips"))
        .then(pl.format("needs {} chips, more than the largest documented cluster", pl.col("chips")))
        .when(pl.col("usd_per_chip_hour").is_null())
        .then(pl.format("no {} price in the dataset", pl.lit(" / ".join(s.pricing))))
        .otherwise(None)
    )
    frame = frame.with_columns(infeasible_reason=reason, pricing_model=pl.col("pricing_model").fill_null(s.pricing[0]))
    return (
        frame.with_columns(feasible=pl.col("infeasible_reason").is_null())
        .select(SERVE_COLUMNS)
        .sort(["feasible", "usd_per_million_tokens"], descending=[True, False], nulls_last=True)
    )


def batch_curve(
    s: ServeScenario, picks: pl.DataFrame, catalog: Catalog | None = None, efficiency: ServingEfficiency | None = None
) -> pl.DataFrame:
    """Throughput vs time per token as the batch grows, at each pick's chosen tensor-parallel degree."""
    cat = catalog or catalog_mod.load()
    frame = _evaluate_configs(_configs(cat, s), s, efficiency or calibrate(cat))
    return (
        frame.join(picks.select("accelerator_id", "tensor_parallel"), on=["accelerator_id", "tensor_parallel"])
        .filter(pl.col("fits_in_memory"))
        .select("accelerator_id", "name", "tensor_parallel", "batch", "tpot_ms", "ttft_ms", "tokens_per_s_per_chip")
    )
