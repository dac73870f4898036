"""``evaluate_serving(scenario)``: per (accelerator, cloud, pricing) option, the cheapest way to serve a model.

For every accelerator the model tries tensor-parallel degrees (inside the fast domain) and batch sizes,
keeps the configurations that fit in memory and meet the latency targets (time to first token, time per
output token), takes the one with the most output tokens/s per chip, and provisions enough replicas for
the traffic. Efficiencies of the roofline (``model/serving.py``) are calibrated on published batch-1
latency measurements (``data/inference_runs.csv``, role ``calibrate``); the published throughput results
(role ``validate``, MLPerf Inference and vendor docs) are kept out of the fit and used to report the error.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Optional

import polars as pl

from workbook import calibration as calibration_mod
from workbook import catalog as catalog_mod
from workbook.catalog import Catalog
from workbook.errors import InputError
from workbook.model import cost
from workbook.model import serving as sv
from workbook.scenario import ModelSpec, _choice, _number
from workbook.schemas import PRICING_MODELS

TP_CANDIDATES = (1, 2, 4, 8, 16, 32, 64)
BATCH_CANDIDATES = tuple(2**i for i in range(0, 12))  # 1 .. 2048 sequences
HEAD_DIM = 128
RUNTIME_OVERHEAD_BYTES = 2e9  # CUDA/XLA context, activations of one step, allocator slack (assumption)
HBM_USABLE_FRACTION = 0.9
WEIGHT_PRECISIONS = ("bf16", "fp8", "int8", "int4")
# FP8 serving multiplies in FP8 (W8A8, e.g. TensorRT-LLM) where the chip has it; INT8/INT4 weights are the
# usual weight-only quantisation (AWQ/GPTQ, JetStream int8): they halve or quarter the bytes read, but the
# matrix multiplies run at the BF16 rate.
PEAK_FOR = {"bf16": "bf16_flops_per_s", "fp8": "fp8_flops_per_s", "int8": "bf16_flops_per_s", "int4": "bf16_flops_per_s"}
SECONDS_PER_DAY = 86_400


def default_kv_heads(attention_dim: int) -> int:
    """Grouped-query attention with 8 KV heads (Llama 2 70B, Llama 3, Mistral) once there are 32+ heads."""
    heads = max(1, attention_dim // HEAD_DIM)
    return 8 if heads >= 32 else heads


@dataclasses.dataclass(frozen=True)
class ServeScenario:
    """Serve ``model`` at a traffic level within latency targets."""

    model: ModelSpec
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    prompt_tokens: int = 1000
    output_tokens: int = 300
    requests_per_s: Optional[float] = None
    tokens_per_day: Optional[float] = None  # output tokens per day; alternative to requests_per_s
    ttft_ms: Optional[float] = 2000.0
    tpot_ms: Optional[float] = 50.0
    n_kv_heads: Optional[int] = None
    pricing: tuple[str, ...] = ("on-demand",)
    accelerators: tuple[str, ...] = ()
    clouds: tuple[str, ...] = ()
    efficiency_override: Optional[float] = None  # replaces both calibrated efficiencies

    def __post_init__(self):
        _choice("weight_precision", self.weight_precision, WEIGHT_PRECISIONS)
        _choice("kv_precision", self.kv_precision, WEIGHT_PRECISIONS[:3])
        _number("prompt_tokens", self.prompt_tokens, 1, 2_000_000, integer=True)
        _number("output_tokens", self.output_tokens, 1, 200_000, integer=True)
        if self.requests_per_s is not None and self.tokens_per_day is not None:
            raise InputError("requests_per_s", "give either requests_per_s or tokens_per_day, not both")
        if self.requests_per_s is not None:
            _number("requests_per_s", self.requests_per_s, 1e-6, 1e7)
        if self.tokens_per_day is not None:
            _number("tokens_per_day", self.tokens_per_day, 1, 1e16)
        if self.ttft_ms is not None:
            _number("ttft_ms", self.ttft_ms, 1, 600_000)
        if self.tpot_ms is not None:
            _number("tpot_ms", self.tpot_ms, 0.1, 60_000)
        if self.n_kv_heads is not None:
            _number("n_kv_heads", self.n_kv_heads, 1, 1024, integer=True)
        if self.efficiency_override is not None:
            _number("efficiency_override", self.efficiency_override, 0.01, 1.0)
        for model in self.pricing:
            _choice("pricing", model, PRICING_MODELS)

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or default_kv_heads(self.model.attention_dim)

    @property
    def output_tokens_per_s(self) -> float:
        """Required output tokens per second (1 request/s by default)."""
        if self.tokens_per_day is not None:
            return self.tokens_per_day / SECONDS_PER_DAY
        return (self.requests_per_s if self.requests_per_s is not None else 1.0) * self.output_tokens


@dataclasses.dataclass(frozen=True)
class ServingEfficiency:
    """Fraction of the roofline reached: HBM bandwidth in decode, peak FLOPS in prefill and batched decode."""

    bandwidth: float
    compute: float
    moe: float  # mixture-of-experts compute efficiency, shared with training (workbook.calibration)
    points: pl.DataFrame


def _configs(cat: Catalog, s: ServeScenario) -> pl.DataFrame:
    """Accelerators x tensor-parallel degree x batch, with memory fit and latencies."""
    acc = cat.accelerators
    if s.accelerators:
        acc = acc.filter(pl.col("accelerator_id").is_in(list(s.accelerators)))
    grid = pl.DataFrame({"tensor_parallel": TP_CANDIDATES}).join(pl.DataFrame({"batch": BATCH_CANDIDATES}), how="cross")
    return acc.join(grid, how="cross").filter(
        (pl.col("tensor_parallel") <= pl.max_horizontal(pl.col("scaleup_domain_chips"), pl.lit(1)))
        & (pl.col("tensor_parallel") <= pl.col("max_job_chips")))


def _evaluate_configs(frame: pl.DataFrame, s: ServeScenario, eff: ServingEfficiency) -> pl.DataFrame:
    m = s.model
    w_bytes = sv.BYTES_PER_ELEMENT[s.weight_precision]
    kv_token = sv.kv_bytes_per_token(m.n_layers, s.kv_heads, HEAD_DIM, sv.BYTES_PER_ELEMENT[s.kv_precision])
    bw_eff = s.efficiency_override or eff.bandwidth
    flops_eff = (s.efficiency_override or eff.compute) * (eff.moe if m.active_params < m.params else 1.0)
    t = pl.col("tensor_parallel").cast(pl.Float64)
    batch = pl.col("batch").cast(pl.Float64)
    peak = pl.col(PEAK_FOR[s.weight_precision]).fill_null(pl.col("bf16_flops_per_s"))
    kv_live = batch * kv_token * (s.prompt_tokens + s.output_tokens / 2)
    memory_s, compute_s = sv.decode_step_seconds(
        sv.weights_read_bytes(m.params, m.active_params, batch, w_bytes), kv_live, batch, m.active_params, t,
        pl.col("hbm_bytes_per_s"), peak, bw_eff, flops_eff)
    frame = frame.with_columns(
        weights_gb=w_bytes * m.params / t / 1e9,
        kv_cache_gb=batch * kv_token * (s.prompt_tokens + s.output_tokens) / t / 1e9,
        overhead_gb=pl.lit(RUNTIME_OVERHEAD_BYTES / 1e9),
        ttft_ms=sv.prefill_seconds(m.active_params, s.prompt_tokens, t, peak, flops_eff) * 1000,
        tpot_ms=pl.max_horizontal(memory_s, compute_s) * 1000,
        decode_bound=pl.when(memory_s >= compute_s).then(pl.lit("memory bandwidth")).otherwise(pl.lit("compute")),
    ).with_columns(
        memory_per_chip_gb=pl.col("weights_gb") + pl.col("kv_cache_gb") + pl.col("overhead_gb"),
        tokens_per_s_per_replica=sv.output_tokens_per_s(s.output_tokens, pl.col("ttft_ms") / 1000,
                                                        pl.col("tpot_ms") / 1000, batch),
    )
    return frame.with_columns(
        fits_in_memory=pl.col("memory_per_chip_gb") <= pl.col("hbm_bytes") / 1e9 * HBM_USABLE_FRACTION,
        meets_ttft=pl.lit(True) if s.ttft_ms is None else pl.col("ttft_ms") <= s.ttft_ms,
        meets_tpot=pl.lit(True) if s.tpot_ms is None else pl.col("tpot_ms") <= s.tpot_ms,
        tokens_per_s_per_chip=pl.col("tokens_per_s_per_replica") / t,
    )


def _why_not(s: ServeScenario) -> pl.Expr:
    return (pl.when(~pl.col("any_fits")).then(pl.lit("weights and one sequence's KV cache do not fit even across the fast domain"))
            .when(~pl.col("any_ttft")).then(pl.format("prefill of {} tokens takes longer than the {} ms TTFT target",
                                                      pl.lit(s.prompt_tokens), pl.lit(s.ttft_ms)))
            .when(~pl.col("any_tpot")).then(pl.format("even batch 1 is slower than the {} ms per-token target", pl.lit(s.tpot_ms)))
            .otherwise(None))


def best_configs(cat: Catalog, s: ServeScenario, eff: ServingEfficiency) -> pl.DataFrame:
    """Per accelerator: the configuration meeting every target with the fewest chips for the traffic
    (ties: the most output tokens/s per chip, i.e. the most headroom)."""
    frame = _evaluate_configs(_configs(cat, s), s, eff).with_columns(
        replicas=(pl.lit(s.output_tokens_per_s) / pl.col("tokens_per_s_per_replica")).ceil().clip(lower_bound=1).cast(pl.Int64)
    ).with_columns(chips=pl.col("replicas") * pl.col("tensor_parallel"))
    ok = pl.col("fits_in_memory") & pl.col("meets_ttft") & pl.col("meets_tpot")
    summary = frame.group_by("accelerator_id").agg(
        pl.col("fits_in_memory").any().alias("any_fits"),
        (pl.col("fits_in_memory") & pl.col("meets_ttft")).any().alias("any_ttft"),
        ok.any().alias("any_tpot"))
    best = (frame.filter(ok).sort(["chips", "tokens_per_s_per_chip"], descending=[False, True])
            .unique("accelerator_id", keep="first", maintain_order=True))
    fallback = frame.sort("tensor_parallel", "batch").unique("accelerator_id", keep="first", maintain_order=True)
    chosen = pl.concat([best, fallback.join(best.select("accelerator_id"), on="accelerator_id", how="anti")])
    return chosen.join(summary, on="accelerator_id").with_columns(serve_reason=_why_not(s))


@functools.lru_cache(maxsize=4)
def calibrate(cat: Catalog) -> ServingEfficiency:
    """Bandwidth efficiency from batch-1 decode steps; compute efficiency from batch-1 prefills (TTFT)."""
    points = []
    runs = cat.inference_runs.filter(pl.col("role") == "calibrate").join(
        cat.accelerators, on="accelerator_id", how="left")
    for r in runs.iter_rows(named=True):
        t = r["tensor_parallel"]
        w = sv.BYTES_PER_ELEMENT[r["weight_precision"]]
        peak = r[PEAK_FOR[r["weight_precision"]]] or r["bf16_flops_per_s"]
        if r["measure"] == "tpot_ms":
            kv = r["batch"] * sv.kv_bytes_per_token(r["n_layers"], r["n_kv_heads"], r["head_dim"],
                                                    sv.BYTES_PER_ELEMENT[r["kv_precision"]]) * (r["prompt_tokens"] + r["output_tokens"] / 2)
            ideal = (sv.weights_read_bytes(r["params"], r["active_params"], r["batch"], w) + kv) / (t * r["hbm_bytes_per_s"])
            points.append({"run_id": r["run_id"], "kind": "bandwidth", "efficiency": ideal / (r["value"] / 1000)})
        else:
            ideal = sv.prefill_seconds(r["active_params"], r["prompt_tokens"], t, peak, 1.0)
            points.append({"run_id": r["run_id"], "kind": "compute", "efficiency": ideal / (r["value"] / 1000)})
    frame = pl.DataFrame(points)
    median = lambda kind: frame.filter(pl.col("kind") == kind)["efficiency"].median()  # noqa: E731
    return ServingEfficiency(bandwidth=median("bandwidth"), compute=median("compute"),
                             moe=calibration_mod.fit(cat).moe_efficiency, points=frame)


SERVE_COLUMNS = [
    "accelerator_id", "name", "kind", "family", "cloud", "pricing_model", "feasible", "infeasible_reason",
    "tensor_parallel", "batch", "chips_per_replica", "replicas", "chips", "tokens_per_s_per_chip", "tokens_per_s_per_replica",
    "ttft_ms", "tpot_ms", "decode_bound", "memory_per_chip_gb", "weights_gb", "kv_cache_gb", "overhead_gb", "hbm_gb",
    "fits_in_memory", "utilisation", "usd_per_chip_hour", "usd_per_hour", "usd_per_million_tokens",
    "usd_per_million_tokens_low", "usd_per_million_tokens_high", "usd_per_million_tokens_at_full_load",
    "kwh_per_million_tokens",
]


def evaluate_serving(s: ServeScenario, catalog: Catalog | None = None, efficiency: ServingEfficiency | None = None,
                     pue: float = 1.2, host_power_factor: float = 1.5) -> pl.DataFrame:
    """Every (accelerator, cloud, pricing) serving option; feasible ones cheapest first."""
    cat = catalog or catalog_mod.load()
    eff = efficiency or calibrate(cat)
    demand = s.output_tokens_per_s
    frame = best_configs(cat, s, eff).with_columns(
        chips_per_replica=pl.col("tensor_parallel"),
        utilisation=pl.lit(demand) / (pl.col("replicas") * pl.col("tokens_per_s_per_replica")))
    tokens_per_hour = demand * 3600 / 1e6  # millions of output tokens served per hour
    frame = frame.join(cat.price_summary(s.pricing, s.clouds), on="accelerator_id", how="left").with_columns(
        usd_per_hour=pl.col("chips") * pl.col("usd_per_chip_hour"),
        usd_per_million_tokens=pl.col("chips") * pl.col("usd_per_chip_hour") / tokens_per_hour,
        usd_per_million_tokens_low=pl.col("chips") * pl.col("usd_per_chip_hour_low") / tokens_per_hour,
        usd_per_million_tokens_high=pl.col("chips") * pl.col("usd_per_chip_hour_high") / tokens_per_hour,
        usd_per_million_tokens_at_full_load=pl.col("usd_per_chip_hour") / (pl.col("tokens_per_s_per_chip") * 3600 / 1e6),
        kwh_per_million_tokens=cost.energy_kwh(pl.col("chips"), pl.col("watts"), 1.0, host_power_factor, pue) / tokens_per_hour,
        hbm_gb=pl.col("hbm_bytes") / 1e9,
    )
    reason = (pl.when(pl.col("serve_reason").is_not_null()).then(pl.col("serve_reason"))
              .when(pl.col("chips") > pl.col("max_job_chips")).then(pl.format("needs {} chips, more than the largest documented cluster", pl.col("chips")))
              .when(pl.col("usd_per_chip_hour").is_null()).then(pl.format("no {} price in the dataset", pl.lit(" / ".join(s.pricing))))
              .otherwise(None))
    frame = frame.with_columns(infeasible_reason=reason, pricing_model=pl.col("pricing_model").fill_null(s.pricing[0]))
    return (frame.with_columns(feasible=pl.col("infeasible_reason").is_null())
            .select(SERVE_COLUMNS).sort(["feasible", "usd_per_million_tokens"], descending=[True, False], nulls_last=True))


def validate(cat: Catalog, efficiency: ServingEfficiency | None = None) -> pl.DataFrame:
    """Predicted vs published throughput for the ``validate`` rows of ``data/inference_runs.csv``."""
    eff = efficiency or calibrate(cat)
    rows = []
    for r in cat.inference_runs.filter(pl.col("role") == "validate").iter_rows(named=True):
        spec = dataclasses.replace(ModelSpec.from_params(r["params"], r["active_params"]), n_layers=r["n_layers"])
        s = ServeScenario(model=spec, weight_precision=r["weight_precision"], kv_precision=r["kv_precision"],
                          prompt_tokens=r["prompt_tokens"], output_tokens=int(round(r["output_tokens"])),
                          ttft_ms=r["ttft_limit_ms"], tpot_ms=r["tpot_limit_ms"], n_kv_heads=r["n_kv_heads"],
                          accelerators=(r["accelerator_id"],))
        frame = _evaluate_configs(_configs(cat, s), s, eff).filter(
            pl.col("fits_in_memory") & pl.col("meets_ttft") & pl.col("meets_tpot") & (pl.col("tensor_parallel") <= r["chips"]))
        if r["tensor_parallel"]:
            frame = frame.filter(pl.col("tensor_parallel") == r["tensor_parallel"])
        if r["batch"]:
            frame = frame.filter(pl.col("batch") <= r["batch"])
        best = frame.sort("tokens_per_s_per_chip", descending=True).head(1)
        predicted = best["tokens_per_s_per_chip"].item() * r["chips"] if best.height else math.nan
        rows.append({"run_id": r["run_id"], "accelerator_id": r["accelerator_id"], "scenario": r["scenario"],
                     "prompt_basis": r["prompt_basis"], "published_tokens_per_s": r["value"],
                     "predicted_tokens_per_s": predicted})
    return pl.DataFrame(rows).with_columns(error=(pl.col("predicted_tokens_per_s") / pl.col("published_tokens_per_s")).log()
                                           ).with_columns(abs_error=pl.col("error").abs())


def batch_curve(s: ServeScenario, picks: pl.DataFrame, catalog: Catalog | None = None,
                efficiency: ServingEfficiency | None = None) -> pl.DataFrame:
    """Throughput vs time per token as the batch grows, at each pick's chosen tensor-parallel degree."""
    cat = catalog or catalog_mod.load()
    frame = _evaluate_configs(_configs(cat, s), s, efficiency or calibrate(cat))
    return (frame.join(picks.select("accelerator_id", "tensor_parallel"), on=["accelerator_id", "tensor_parallel"])
            .filter(pl.col("fits_in_memory"))
            .select("accelerator_id", "name", "tensor_parallel", "batch", "tpot_ms", "ttft_ms", "tokens_per_s_per_chip"))


def train_then_serve(train: pl.DataFrame, serve: pl.DataFrame, months: float) -> pl.DataFrame:
    """Total cost of training on one option and serving on another for ``months``, for the best GPU and TPU
    option of each (the 'train on TPU, serve on GPU' strategy and its alternatives)."""
    hours = months * 730
    def leaders(frame: pl.DataFrame, cost: pl.Expr, label: str) -> pl.DataFrame:
        best = (frame.filter(pl.col("feasible") & pl.col("kind").is_in(["gpu", "tpu"])).sort(cost)
                .unique("kind", keep="first", maintain_order=True))
        return best.select(pl.col("kind").alias(f"{label}_kind"),
                           pl.format("{} ({}, {})", "name", "cloud", "pricing_model").alias(f"{label}_option"),
                           cost.alias(f"{label}_usd"))
    train_best = leaders(train, pl.col("cost_usd"), "train")
    serve_best = leaders(serve, pl.col("usd_per_hour") * hours, "serve")
    return (train_best.join(serve_best, how="cross")
            .with_columns(total_usd=pl.col("train_usd") + pl.col("serve_usd"),
                          strategy=pl.format("train on {}, serve on {}", pl.col("train_kind").str.to_uppercase(),
                                             pl.col("serve_kind").str.to_uppercase()))
            .sort("total_usd"))
