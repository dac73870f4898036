"""Fit the efficiency and goodput defaults on the published runs in ``data/reference_runs.csv``.

Method (simple on purpose, no per-run knobs; calibration and prediction call the same planner):

1. **Kernel efficiency per (accelerator, BF16)** from throughput benchmarks (short, steady-state runs)
   and from full runs that report a measured MFU: MFU is recomputed from tokens/s per chip with this
   package's FLOPs convention where tokens/s is published, otherwise the reported MFU is used. The
   planner (``workbook.model.parallelism``) lays each run out at its chip count; its pipeline bubble and
   exposed communication are removed by solving for the kernel efficiency at which the planned MFU
   equals the measured one (fixed point), and the framework's efficiency is divided out. Base = median;
   range = min..max of the points (+-15% around a single point).
2. **Accelerators without runs** take a documented proxy (``data/mfu_proxies.csv``): another chip's
   base x a factor with a range and a reason.
3. **FP8 speed-up per chip family** = median over paired runs (same chip, model and chip count in BF16
   and FP8) of the FP8 / BF16 throughput ratio; families without pairs take the median of all pairs; chips
   whose FP8 peak is no higher than their BF16 peak (TPU v5p, v6e: no FP8 matmuls) get no speed-up. The FP8
   efficiency is the BF16 one x speed-up x BF16 peak / FP8 peak. INT8 training has no paired runs: BF16 rate,
   and only on chips with a production INT8 training stack (``INT8_TRAINING_KINDS``); elsewhere no INT8 row.
4. **Mixture of experts**: base efficiency is fitted on dense models only; an MoE run reaches a fraction of
   it (all-to-all imbalance, small expert GEMMs) = median over MoE points of their efficiency / the dense
   base of the same chip. MFU counts active parameters.
5. **Chips with neither runs nor a proxy** (e.g. a chip a user adds) get the median base of all
   calibrated chips, with the min..max of those bases as its range.
6. **Goodput** = accounting x interruptions (``throughput.goodput``). Interruptions come from Llama 3's failure
   statistics at the run's chip count and length (its planned days at the benchmark rate); the accounting
   (end-to-end share of a whole run vs the planned benchmark rate: evaluation, checkpoints, stragglers, less
   tuned production configs) is fitted on full runs only = median of planned chip-hours / (reported chip-hours x
   interruption goodput), separately for each way the chip-hours were counted (``chip_hours_basis``): the job's
   own chip time as the publisher totals it ("job_total": Meta's and DeepSeek's GPU-hour tables) or chips x a
   calendar span ("wall_clock": "512 GPUs for 42 days", access windows). Predictions use the job-total accounting
   (the chip time of the job itself, restarts included), range = its interquartile, widened on the slow side to the
   calendar-span accounting (what a cluster held for the whole span costs). MLPerf rows are benchmark timing
   (``run_start`` to ``run_stop``): accounting 1, their own interruptions only.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from workbook import cache
from workbook.catalog import Catalog
from workbook.catalog.schemas import PRECISIONS
from workbook.model import flops, parallelism, sizing, throughput
from workbook.model.spec import ModelSpec
from workbook.model.units import PEAK_COLUMN, SECONDS_PER_DAY
from workbook.training.scenario import Assumptions, global_batch_columns

SINGLE_POINT_SPREAD = 0.15
UNSTATED_SEQ_LEN = 2048  # a run whose sequence length is not published is counted at GPT-3's 2,048 tokens
# Where a base efficiency comes from: published runs of the chip, a documented proxy chip, the median of all chips,
# or the chip's BF16 base x the family's paired-run FP8 speed-up. Column ``basis_kind`` of ``Calibration.mfu``.
BASIS_KIND = pl.Enum(["measured", "proxy", "fallback", "derived"])
# INT8 *training* has a production stack only on TPUs (AQT: MLPerf Training v3.1-v4.1 GPT-3 on TPU v5e/v5p/v6e,
# mlcommons/training_results_v3.1-v4.1, Google); no GPU, AMD or Trainium INT8 training stack is published, so those
# chips get no INT8 efficiency (the training rule ``no_training_stack`` refuses INT8 there with its reason).
INT8_TRAINING_KINDS = ("tpu",)
EFFICIENCY_ITERATIONS = 6  # fixed point: the layout depends on the efficiency, the efficiency on the layout
_DEFAULTS = Assumptions()
PLAN_SETTINGS = {
    "micro_batch": _DEFAULTS.micro_batch_seqs,
    "hbm_usable_fraction": _DEFAULTS.hbm_usable_fraction,
    "framework_overhead_bytes": _DEFAULTS.framework_overhead_bytes,
    "recompute": None,
    "zero_stage": None,
}


@dataclasses.dataclass(frozen=True, eq=False)
class Calibration:
    """Fitted defaults: ``mfu`` has one row per (accelerator_id, precision): kernel efficiency with low/high
    and basis; ``fp8_speedup`` one row per family."""

    mfu: pl.DataFrame
    moe_efficiency: float
    goodput: float
    goodput_low: float
    goodput_high: float
    goodput_by_basis: pl.DataFrame  # per chip_hours_basis: goodput, goodput_low, goodput_high, runs
    fp8_speedup: pl.DataFrame
    points: pl.DataFrame  # the benchmark points used, for display
    full_runs: pl.DataFrame  # the full runs used for goodput, with their ratios


def shape(row: dict) -> ModelSpec:
    """A published run's model: its published architecture (``model_shape``: layers, hidden, KV heads, experts,
    vocabulary), else its stated layers and attention width over the shape derived from its parameter counts; at its
    stated sequence length, else ``UNSTATED_SEQ_LEN``."""
    seq_len = row["seq_len"] or UNSTATED_SEQ_LEN
    if row.get("model_shape"):
        return ModelSpec.preset(row["model_shape"], seq_len)
    spec = ModelSpec.from_params(row["params"], row["active_params"], seq_len=seq_len)
    if row["n_layers"] and row["attention_dim"]:
        return dataclasses.replace(spec, n_layers=row["n_layers"], attention_dim=row["attention_dim"])
    return spec


def _peak() -> pl.Expr:
    """Dense peak of each run's precision."""
    peak = pl.lit(None, pl.Float64)
    for precision, column in PEAK_COLUMN.items():
        peak = pl.when(pl.col("precision") == precision).then(pl.col(column)).otherwise(peak)
    return peak


def runs_frame(catalog: Catalog, runs: pl.DataFrame) -> pl.DataFrame:
    """Runs with their model shape, global batch (published, else the scenario's default rule), accelerator, peak,
    framework efficiency and planned chip count.

    Where the chip count is not published: the stated assumption (``chips_assumed``), else one scale-up domain,
    or the fewest chips that fit if more.
    """
    shapes = pl.DataFrame(
        [
            {
                "run_id": r["run_id"],
                **{k: v for k, v in shape(r).columns().items() if k not in ("params", "active_params")},
                **global_batch_columns(r["global_batch_tokens"], r["params"]),
            }
            for r in runs.iter_rows(named=True)
        ],
        schema_overrides={
            "global_batch_tokens": pl.Float64,
            "max_global_batch_tokens": pl.Float64,
            "expert_params": pl.Float64,
        },
    )
    native = catalog.frameworks.select("framework", "kind", pl.col("efficiency").alias("framework_efficiency"))
    frame = (
        runs.drop("seq_len", "n_layers", "attention_dim", "global_batch_tokens")
        .join(shapes, on="run_id")
        .join(catalog.accelerators, on="accelerator_id", how="left")
        .join(native, on=["framework", "kind"], how="left")
        .with_columns(
            peak_flops_per_s=_peak(),
            scaleout_bytes_per_s=parallelism.scaleout_bytes_per_s(),
            flops_per_token=flops.flops_per_token(
                pl.col("active_params"), pl.col("n_layers"), pl.col("attention_dim"), pl.col("seq_len")
            ),
            attention_flops_per_token=flops.attention_flops_per_token(
                pl.col("n_layers"), pl.col("attention_dim"), pl.col("seq_len")
            ),
        )
    )
    fit = parallelism.min_chips(frame, PLAN_SETTINGS).with_columns(
        sizing.round_to_allowed(pl.col("min_chips_to_fit"), pl.col("block_chips")).alias("min_chips_to_fit")
    )
    return fit.with_columns(
        chips_planned=pl.coalesce(
            pl.col("chips"),
            pl.col("chips_assumed"),
            pl.max_horizontal(pl.col("scaleup_domain_chips"), pl.col("min_chips_to_fit")),
        )
    )


def benchmark_points(catalog: Catalog) -> pl.DataFrame:
    """Measured MFU points and the kernel efficiency behind them (planner's bubble and traffic removed)."""
    mlperf = pl.col("kind_of_run") == "mlperf"
    runs = catalog.reference_runs.filter(
        pl.col("reported_mfu").is_not_null()
        | pl.col("reported_tokens_per_s_per_chip").is_not_null()
        | (mlperf & pl.col("reported_days").is_not_null() & pl.col("chips").is_not_null())
    )
    # MLPerf time-to-train: tokens / (minutes x chips), end to end (evaluation included, so slightly below steady
    # state), over the share of the run not lost to interruptions (benchmark timing: no accounting overhead)
    days, chips = pl.col("reported_days"), pl.col("chips").cast(pl.Float64)
    benchmark = throughput.goodput(chips, days, throughput.BENCHMARK_ACCOUNTING)
    timed = pl.col("tokens") / (days * benchmark * SECONDS_PER_DAY * chips)
    tokens_per_s = pl.coalesce(pl.col("reported_tokens_per_s_per_chip"), pl.when(mlperf).then(timed))
    frame = runs_frame(catalog, runs).with_columns(
        pl.coalesce(
            tokens_per_s * pl.col("flops_per_token") / pl.col("peak_flops_per_s"), pl.col("reported_mfu")
        ).alias("mfu")
    )
    frame = frame.with_columns(efficiency=pl.col("mfu"))
    for _ in range(EFFICIENCY_ITERATIONS):
        frame = parallelism.plan(frame, "chips_planned", "efficiency", PLAN_SETTINGS).with_columns(
            efficiency=pl.col("efficiency") * (pl.col("mfu") / pl.col("mfu_planned")).fill_null(1.0)
        )
    return frame.with_columns(
        base_mfu=pl.col("efficiency") / pl.col("framework_efficiency"),
        moe=pl.col("active_params") < pl.col("params"),
        layout=parallelism.layout_words(),
    ).select(
        "run_id",
        "accelerator_id",
        "family",
        "precision",
        "chips",
        "framework",
        "params",
        "moe",
        "mfu",
        "layout",
        "recompute",
        "peak_flops_per_s",
        "base_mfu",
    )


def _moe_efficiency(points: pl.DataFrame, dense: pl.DataFrame) -> float:
    dense = dense.select("accelerator_id", "precision", pl.col("mfu").alias("dense_mfu"))
    moe = points.filter(pl.col("moe")).join(dense, on=["accelerator_id", "precision"], how="inner")
    return float(moe.select((pl.col("base_mfu") / pl.col("dense_mfu")).median()).item()) if moe.height else 1.0


def fp8_pairs(points: pl.DataFrame) -> pl.DataFrame:
    """Paired runs (same chip, model, chip count in BF16 and FP8): FP8 / BF16 throughput per chip."""
    key = ["accelerator_id", "family", "params", "chips"]
    rate = (pl.col("mfu") * pl.col("peak_flops_per_s")).median()
    bf16 = points.filter(pl.col("precision") == "bf16").group_by(key).agg(rate.alias("bf16_flops_per_s"))
    fp8 = points.filter(pl.col("precision") == "fp8").group_by(key).agg(rate.alias("fp8_flops_per_s"))
    return bf16.join(fp8, on=key).with_columns(speedup=pl.col("fp8_flops_per_s") / pl.col("bf16_flops_per_s"))


def _fp8_speedup(pairs: pl.DataFrame, families: list[str]) -> pl.DataFrame:
    """Per family: the median paired speed-up, else the median of all pairs (stated)."""
    own = pairs.group_by("family").agg(
        pl.col("speedup").median(),
        pl.format("median of {} paired run(s) on this family", pl.len()).alias("basis"),
    )
    overall = pairs["speedup"].median()
    rest = pl.DataFrame({"family": sorted(set(families) - set(own["family"]))}, schema={"family": pl.String})
    rest = rest.with_columns(
        speedup=pl.lit(overall, pl.Float64),
        basis=pl.lit(f"no paired runs on this family: median of all {pairs.height} pairs"),
    )
    return pl.concat([own, rest]) if overall is not None else own


def _direct(points: pl.DataFrame, how: str = "") -> pl.DataFrame:
    """Per chip and precision: the median base of its points, min..max as range (``how``: appended to the basis)."""
    return points.group_by("accelerator_id", "precision").agg(
        pl.col("base_mfu").median().alias("mfu"),
        pl.when(pl.len() > 1)
        .then(pl.col("base_mfu").min())
        .otherwise(pl.col("base_mfu").median() * (1 - SINGLE_POINT_SPREAD))
        .alias("mfu_low"),
        pl.when(pl.len() > 1)
        .then(pl.col("base_mfu").max())
        .otherwise(pl.col("base_mfu").median() * (1 + SINGLE_POINT_SPREAD))
        .alias("mfu_high"),
        pl.concat_str(
            pl.lit("median of "),
            pl.len().cast(pl.String),
            pl.lit(" run(s): "),
            pl.col("run_id").str.join(", "),
            pl.lit(how),
        ).alias("basis"),
        pl.lit("measured", BASIS_KIND).alias("basis_kind"),
    )


def _from_fp8(points: pl.DataFrame, measured: pl.DataFrame, accelerators: pl.DataFrame, speedup: pl.DataFrame):
    """BF16 bases of chips measured only in FP8 (e.g. Blackwell in MLPerf): the FP8 rate / the family's FP8
    speed-up, as a share of the BF16 peak; FP8 predictions on those chips then return their own measured rate."""
    peaks = accelerators.select("accelerator_id", "family", "bf16_flops_per_s")
    fp8 = (
        points.filter(pl.col("precision") == "fp8")
        .join(measured.select("accelerator_id"), on="accelerator_id", how="anti")
        .join(peaks, on=["accelerator_id", "family"])
        .join(speedup.select("family", "speedup"), on="family")
    )
    bf16 = fp8.with_columns(
        base_mfu=pl.col("base_mfu") * pl.col("peak_flops_per_s") / pl.col("bf16_flops_per_s") / pl.col("speedup"),
        precision=pl.lit("bf16"),
    )
    parts = [
        _direct(group, f"; FP8 runs at {group['speedup'][0]:.2f}x the BF16 rate (the family's FP8 speed-up)")
        for _, group in bf16.group_by("accelerator_id", maintain_order=True)
    ]
    return pl.concat(parts) if parts else measured.clear()


def _with_proxies(direct: pl.DataFrame, proxies: pl.DataFrame) -> pl.DataFrame:
    table = direct.filter(pl.col("precision") == "bf16")
    pending = proxies.join(table, on="accelerator_id", how="anti")  # measured chips keep their own runs
    while pending.height:  # proxies may chain (gb200 -> b200 -> h100-sxm)
        ready = pending.join(table, left_on="proxy_of", right_on="accelerator_id", how="inner")
        if ready.height == 0:  # proxies of chips with no runs left (a leave-one-out check): generic fallback
            break
        table = pl.concat(
            [
                table,
                ready.select(
                    "accelerator_id",
                    "precision",
                    (pl.col("mfu") * pl.col("factor")).alias("mfu"),
                    (pl.col("mfu_low") * pl.col("factor_low")).alias("mfu_low"),
                    (pl.col("mfu_high") * pl.col("factor_high")).alias("mfu_high"),
                    pl.concat_str(
                        pl.lit("proxy: "),
                        pl.col("proxy_of"),
                        pl.lit(" x "),
                        pl.col("factor").round(2).cast(pl.String),
                        pl.lit(" ("),
                        pl.col("reason"),
                        pl.lit(")"),
                    ).alias("basis"),
                    pl.lit("proxy", BASIS_KIND).alias("basis_kind"),
                ),
            ]
        )
        pending = pending.join(ready.select("accelerator_id"), on="accelerator_id", how="anti")
    return table


def _with_fallback(table: pl.DataFrame, ids: list[str]) -> pl.DataFrame:
    """Chips with neither runs nor a proxy: the median of all calibrated bases, their min..max as range."""
    missing = sorted(set(ids) - set(table["accelerator_id"]))
    if not missing:
        return table
    measured = table.filter(pl.col("basis_kind") == "measured")
    generic = pl.DataFrame(
        {
            "accelerator_id": missing,
            "precision": "bf16",
            "mfu": measured["mfu"].median(),
            "mfu_low": measured["mfu"].min(),
            "mfu_high": measured["mfu"].max(),
            "basis": "no published runs and no proxy: median of all calibrated chips (add a row to mfu_proxies.csv)",
        }
    ).with_columns(pl.lit("fallback", BASIS_KIND).alias("basis_kind"))
    return pl.concat([table, generic.select(table.columns)])


def _low_precision(bf16: pl.DataFrame, accelerators: pl.DataFrame, speedup: pl.DataFrame) -> pl.DataFrame:
    """FP8 and INT8 efficiency (against their own peaks) from the BF16 base and the family's speed-up."""
    acc = accelerators.select("accelerator_id", "family", "kind", *PEAK_COLUMN.values())
    rows = []
    for precision in PRECISIONS[1:]:
        column = PEAK_COLUMN[precision]
        frame = bf16.join(acc, on="accelerator_id").filter(pl.col(column).is_not_null())
        if precision == "fp8":
            frame = frame.join(speedup, on="family", how="left", suffix="_speedup")
            faster = pl.col(column) > pl.col("bf16_flops_per_s")
            gain = pl.when(faster).then(pl.col("speedup").fill_null(1.0)).otherwise(1.0)
            why = (
                pl.when(~faster)
                .then(pl.lit("no FP8 speed-up (no FP8 matmuls): runs at the BF16 rate"))
                .when(pl.col("speedup").is_null())
                .then(pl.lit("no FP8 speed-up calibrated: BF16 rate"))
                .otherwise(pl.format("FP8 {}x the BF16 rate ({})", pl.col("speedup").round(2), pl.col("basis_speedup")))
            )
        else:
            frame = frame.filter(pl.col("kind").is_in(INT8_TRAINING_KINDS))
            gain = pl.lit(1.0)
            why = pl.lit("no paired INT8 training runs: BF16 rate")
        scale = gain * pl.col("bf16_flops_per_s") / pl.col(column)
        rows.append(
            frame.select(
                "accelerator_id",
                pl.lit(precision).alias("precision"),
                *(pl.col(c) * scale for c in ("mfu", "mfu_low", "mfu_high")),
                pl.concat_str(why, pl.lit("; BF16 base: "), pl.col("basis")).alias("basis"),
                pl.lit("derived", BASIS_KIND).alias("basis_kind"),
            )
        )
    return pl.concat(rows)


def moe_factor(moe_efficiency: float) -> pl.Expr:
    """1 for dense models, the calibrated MoE efficiency when fewer parameters are active than stored."""
    return pl.when(pl.col("active_params") < pl.col("params")).then(moe_efficiency).otherwise(1.0)


def timed_full_run() -> pl.Expr:
    """Full runs with published chip-hours and tokens (what a time backtest can compare)."""
    return (
        (pl.col("kind_of_run") == "full_run")
        & pl.col("reported_chip_hours").is_not_null()
        & pl.col("tokens").is_not_null()
    )


def _goodput(catalog: Catalog, mfu: pl.DataFrame, moe_efficiency: float) -> pl.DataFrame:
    runs = catalog.reference_runs.filter(timed_full_run() & pl.col("backtest_exclusion").is_null())
    frame = (
        runs_frame(catalog, runs)
        .join(mfu.select("accelerator_id", "precision", "mfu"), on=["accelerator_id", "precision"], how="inner")
        .with_columns(efficiency=pl.col("mfu") * pl.col("framework_efficiency") * moe_factor(moe_efficiency))
    )
    planned = parallelism.plan(frame, "chips_planned", "efficiency", PLAN_SETTINGS)
    rate = pl.col("mfu_planned") * pl.col("peak_flops_per_s")
    chips = pl.col("chips_planned").cast(pl.Float64)
    total = pl.col("flops_per_token") * pl.col("tokens")
    return (
        planned.with_columns(
            (total / rate / 3600).alias("predicted_chip_hours_at_benchmark_rate"),
            throughput.interruption_goodput(chips, throughput.work_days(total, chips, rate)).alias(
                "interruption_goodput"
            ),
        )
        .with_columns(
            (
                pl.col("predicted_chip_hours_at_benchmark_rate")
                / pl.col("reported_chip_hours")
                / pl.col("interruption_goodput")
            ).alias("goodput")
        )
        .filter(pl.col("goodput").is_not_null())
        .select(
            "run_id",
            "accelerator_id",
            "params",
            "tokens",
            "chips",
            "chips_planned",
            "chip_hours_basis",
            "reported_chip_hours",
            "predicted_chip_hours_at_benchmark_rate",
            "interruption_goodput",
            "goodput",
        )
    )


def goodput_by_basis(runs: pl.DataFrame) -> pl.DataFrame:
    """Accounting goodput per way of counting chip-hours (``chip_hours_basis``): median and interquartile range of
    the full runs counted that way. A job's own chip time ("job_total") and chips x a calendar span ("wall_clock":
    setup, pauses between stages and idle spares included) measure different things, so each has its own."""
    quantile = lambda q: pl.col("goodput").quantile(q, "linear")  # noqa: E731
    return (
        runs.group_by("chip_hours_basis")
        .agg(goodput=quantile(0.5), goodput_low=quantile(0.25), goodput_high=quantile(0.75), runs=pl.len())
        .sort("chip_hours_basis")
    )


@cache.per_catalog("training-calibration", Calibration)  # fitted once per table content and code version
def fit(catalog: Catalog) -> Calibration:
    """Fit every default from ``catalog.reference_runs``; see the module docstring for the method."""
    points = benchmark_points(catalog)
    dense = points.filter(~pl.col("moe"))
    direct = _direct(dense.filter(pl.col("precision") == "bf16"))
    speedup = _fp8_speedup(fp8_pairs(dense), catalog.accelerators["family"].unique().to_list())
    direct = pl.concat([direct, _from_fp8(dense, direct, catalog.accelerators, speedup)])
    moe = _moe_efficiency(points, direct)
    bf16 = _with_fallback(_with_proxies(direct, catalog.mfu_proxies), catalog.accelerator_ids)
    mfu = pl.concat([bf16, _low_precision(bf16, catalog.accelerators, speedup)]).sort("accelerator_id", "precision")
    runs = _goodput(catalog, mfu, moe)
    by_basis = goodput_by_basis(runs)
    own = by_basis.filter(pl.col("chip_hours_basis") == "job_total")  # none in a reduced catalog: the other basis
    job = (own if own.height else by_basis).row(0, named=True)
    calendar = by_basis.filter(pl.col("chip_hours_basis") == "wall_clock")["goodput"]
    return Calibration(
        mfu=mfu,
        moe_efficiency=moe,
        goodput=job["goodput"],
        goodput_low=min(job["goodput_low"], *calendar),
        goodput_high=job["goodput_high"],
        goodput_by_basis=by_basis,
        fp8_speedup=speedup,
        points=points,
        full_runs=runs,
    )
