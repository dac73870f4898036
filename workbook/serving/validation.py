"""Predicted vs published serving results, each predicted **without its own system's results**.

For every throughput row and every mean TTFT / TPOT at a published load (``data/inference_runs.csv``), the
stack's compute efficiency is re-fitted leaving out every result of the same system (same stack, accelerator
and round: its offline, server and latency rows), from the other systems of the same round (the same software
generation), else from the stack's newest remaining round; a stack left with no result falls back to the
median of the other stacks (``basis`` says which). The mixture-of-experts factor is re-fitted the same way. Each
result is predicted with the software of its time: each stack's fixed step cost from its batch-1 results published by
then (its earliest where it has none by then: :func:`workbook.serving.calibration.published_by`), and the compute
efficiencies re-fitted with those costs (``layer_overhead_s`` per row). The product uses the newest; a result from
before a stack's newest batch-1 results would otherwise be charged a lighter release's cost than the one it ran (Krai's
vLLM 0.9.2 runs of September 2025: vLLM's 2024 CI, 81 us a layer, not vLLM 0.19's 44 us of April 2026; within MLPerf's
Interactive limits 1.30x, 1.49x with 0.19's). Likewise an FP8 KV cache is read at the cost its stack's software of the
time measured (:data:`workbook.serving.calibration.FP8_KV_READ_SHARE`: vLLM 0.10.2 63% of a BF16 cache's; Red Hat's
one-GPU vLLM 0.10 results of MLPerf v5.1, H100 Offline 1.32x, L40S 1.54x and 1.89x, were 1.39x, 1.65x and 2.03x read
at half). And a result that ran an engine its stack has since retired (``engine``: vLLM's V0, which vLLM 0.8-0.10 fell
back to where V1 lacked a feature, as an FP8 KV cache off Hopper) is predicted from that engine's results: Red Hat's
L40S results, from V1's, 1.54x and 1.89x; from V0's (vLLM 0.5.1 on four L40S, MLPerf v4.1), 0.81x and 0.92x; that
v4.1 result from Red Hat's L40S Offline one, 1.14x (1.42x from V1's).
This is the honest error: a result is never predicted from itself. ``by_round`` shows it per round, so
software drift is visible. Two exceptions, stated: the all-reduce efficiency is fitted on the H100 TP2 / H200 TP1
pairs (MLPerf v4.1, v5.1) and each vendor's FP4 factor on one offline result (NVIDIA: MLPerf v5.0's B200; AMD: MLPerf
v5.1's MI355X, open division), and both are kept for those systems' own rows; NVIDIA's TensorRT-LLM tables (rounds
"TRT-LLM 0.13" to "1.2", in no fit: TP 1/2/4/8 on H100/H200, FP4 on B200) are their held-out test (AMD's FP4 has
none: with NVIDIA's factor its MI355X result would be 0.76x). MLPerf's DeepSeek-R1 results (v5.1 and v6.0, NVIDIA's
TensorRT-LLM on B200 to GB300 NVL72: attention data-parallel, the experts split over eight GPUs) are in no fit: their
rows state the latent attention and the answers' p99, the benchmark's 20,000-token cap (a long answer stays in flight
longer: the steps' mean context is 5,100 tokens, not 2,700; Offline 1.15-1.50x with every answer the mean). v6.0's
Server results 0.92x-1.07x and Offline 0.62x-0.77x; v5.1's Offline 0.97x-1.29x and Server 1.76x-2.14x over: the two
rounds ran the same layouts, and v5.1's release took ~30 ms longer a decode step at the same batch.

Each result is predicted under its engine's capacity policy (``capacity_policy`` in ``data/inference_runs.csv``, read
from its configuration: NVIDIA's MLPerf code runs TensorRT-LLM's max_util and vLLM preempts by recompute, so a full
cache pauses its newest sequences and prefills their prompts again; ``trtllm-bench``, behind NVIDIA's release tables,
reserves each request's prompt and whole answer and never pauses one: :func:`workbook.serving.replica.replicas`).
With it the newest FP8/BF16 results' median went from 0.063 to 0.084 and their worst from 1.64x to 1.53x (three past
1.4x, from four), 24 of the 929 throughput results past 1.4x (33), 194 of the 292 MLPerf latencies within 30% (195).
Each engine's cache is then sized as the submitter set it (``memory_fraction``, the engine's share of memory for it,
where published) from the memory the device reports (``hbm_bytes``: 81,559 MiB on H100 80GB, not 80e9 bytes): the
newest median to 0.070, their worst 1.63x (Cisco's one-card H100 NVL engines, with more room, are further over;
four past 1.4x), 27 of the 929 past 1.4x, median 0.091 to 0.084, 196 of the 292 latencies within 30%.

MLPerf server latencies (TTFT / TPOT, each row's mean or 99th percentile: the round limits the p99; Server and, from
v5.0/v5.1, Interactive benchmarks, each with its own limits: ``ttft_limit_ms``, ``tpot_limit_ms``) are predicted, in
the same statistic, at the model's own highest load within the same p99 limits (``max_load_fraction``, refined
between the 1% load grid's steps: :func:`workbook.serving.replica.refined_limits`;
:func:`workbook.serving.published.predict_detail`); ``server_latency`` lists them per round against the 30% target.
The published load is the most each system sustained within the limits, so the model's own most is its counterpart.
At that edge a queue (for a sequence slot, for the step's token budget) grows as 1 / (1 - load): where one binds,
the p99 TTFT sits at its limit, and 1% less traffic brings it back to a fraction of that. So each is also read at
99% of that load (``predicted_near_max``, ``error_near_max``). And each is read the other way round: the load at
which the model gives the published figure, as a share of its highest (``matching_load_share``): of the 96 misses
of the 292, 49 are the model's own figure within 5% of that load (74 within 10%). Measured on the 144 MLPerf
v4.1-v5.1 rows (Llama 2
70B, Llama 3.1 8B and 405B, Mixtral; Llama 3.1 70B on vLLM 0.9 and TensorRT-LLM 1.0) before the simulation check: 95
within 30% at the edge and 99 at 1% less traffic. Each is also read at the run's **published load**
(``published_load_fraction``: the submitter's tokens/s per replica over the model's capacity of that replica; at
the model's maximum where the published load is above it, ``published_load_above_max``):
``predicted_at_published_load``, shown, not used: near capacity TPOT ~ 1 / (1 - load) turns the model's capacity
error on the system into a several-fold latency error
(H100 v4.1 Llama 2 70B: published load 0.77 of the model's capacity, TPOT 79 ms predicted vs 155 ms published).
Under tight limits the latencies are set by the limits, and the throughput row is the test: the load the model
reaches within them. Measured with the formulas checked against the engine's simulation (:func:`against_simulation`)
and each step's fixed cost charged per layer: 193 of the 292 MLPerf rows within 30% at the edge, 211 at 1% less
traffic, with MLPerf v5.0's runs of server makers and NVIDIA's one GH200 144GB on the chips whose newest Llama 2 70B
result was v4.1's (Fujitsu's eight H100 NVL Interactive 4 of 4, NVIDIA's GH200 144GB 4 of 4, QCT's four H100 PCIe 2
of 4, QCT's GH200 96GB 0 of 4 and Cisco's two H100 NVL 0 of 4, their Server runs stopped at 46-66% of the model's
highest load; 183 of 272 and 197 before them), with MLPerf v5.1's and v6.0's DeepSeek-R1 (19 of 28: the time per
token 10 of 14; the first token 9 of 14,
v6.0's 8 of 8, 0.79x-1.26x, as the engine holds a new prompt until each rank of its data-parallel attention has one or
its published timeout, :func:`workbook.serving.replica.balance_hold_steps`, and its overlap scheduler has made the
next batch before the prompt arrives, ``schedule_ahead``; 0 of 14, 0.08x-0.36x, without the hold, v6.0's 7 of 8
without the step ahead; v5.1's 0.35x-0.83x), AMD's and MiTAC's MI355X runs of v6.0 and v6.1 (vLLM with
``async_scheduling``, one step ahead likewise: their Llama 2 70B p99 first tokens 0.87x-1.01x, 0.71x-0.92x without
the step, their means 1.17x-1.43x, 0.94x-1.08x without; Llama 3.1 8B's 0.29x-0.94x, 0.22x-0.53x without),
Lenovo's eight H100 NVL of v4.1 (0 of 4; its throughput 1.30x Offline and 1.52x Server at the clock its own and
three other makers' compute-bound MLPerf v4.1 results imply, :mod:`workbook.model.sustained`, which leaves its BERT,
SDXL and GPT-J results at 0.79-0.86 of H100 SXM's per unit of peak: the power limit does not explain this miss;
1.47x and 1.73x at its datasheet peak), NVIDIA's one GH200
144GB of v4.1 (4 of 4), ASUSTeK's eight H100 PCIe of v4.1 (3 of 4: no NVLink, its
all-reduces over PCIe), QCT's one GH200 96GB
of v4.1 (0 of 4: its Server run stopped at 80% of the model's highest load; at its published load all 4 within 13%),
Fujitsu's TensorRT-LLM Server result on eight L40S of v4.1 (4 of 4), Red Hat's one-GPU vLLM 0.10 Server results of
v5.1 (6 of 8) and MLPerf v6.1 (September 2026, gathered after the model was built: 16 of its 28 rows); before
scheduling ahead (the ``schedule_ahead`` rows), 181 and 191;
before the hold, 174 and 185; before DeepSeek-R1, 164 of 244 and 173; before those,
148 of 216 and 157; before v6.1, 132 of 188 (v6.0 29 of 44) and 138 (136 before MI325X's sustained clock; 129 and
132 with one fixed cost a step; 130 and 135 before MI355X's v6.0 Server engine admitted prompts every third step, as
AMD's scheduler patch does above 1,216 running requests). MLPerf v6.1's 22 throughput results: median |ln error|
0.064, worst 1.26x.
"""

from __future__ import annotations

import dataclasses
import math

import polars as pl

from workbook.catalog import Catalog
from workbook.model import serving as sv
from workbook.serving import published, replica, simulation
from workbook.serving.calibration import (
    STACK_NAMES,
    ServingEfficiency,
    calibrate,
    compute_points,
    moe_factor,
    newest_round,
    of_its_time,
    overhead_by_stack,
    published_by,
)

MEASURES = ("tokens_per_s", "ttft_ms", "tpot_ms", "request_ms_per_token")
TARGET_THROUGHPUT_MEDIAN = 0.15  # median |ln(pred/published)| on the newest rounds (issue 14)
TARGET_THROUGHPUT_WORST = math.log(1.4)
TARGET_LATENCY = math.log(1.3)  # TTFT/TPOT at MLPerf's server load within 30%


def _system(run: dict) -> str:
    return f"{run['stack']}|{run['accelerator_id']}|{run['round']}"


def _held_out_compute(points: pl.DataFrame, run: dict) -> tuple[float, str]:
    """eta_c for ``run``'s stack without any result of its system: from the results of the engine it ran where the
    stack had several (``engine``: vLLM's V0, 2.4x slower on L40S than the V1 results of its round imply), else of
    the stack's every engine."""
    others = points.filter((pl.col("kind") == "compute") & (pl.col("system") != _system(run)))
    same_stack = others.filter(pl.col("stack") == run["stack"])
    same_engine = same_stack.filter(pl.col("engine").eq_missing(run.get("engine")))
    same_stack = same_engine if same_engine.height else same_stack
    same_round = same_stack.filter(pl.col("round") == run["round"])
    own = newest_round(same_round if same_round.height else same_stack)
    if own.height:
        row = own.row(0, named=True)
        return row["eta_c"], f"{', '.join(row['runs'])} ({row['round']})"
    fallback = newest_round(others)
    return fallback["eta_c"].median(), "no other result of this stack: median of the other stacks' newest rounds"


def _generation(cat: Catalog, eff: ServingEfficiency, eta_bw: dict, run: dict, fitted: dict):
    """(factors, calibration points) for ``run``, with the software of its date: its stack's step overhead from the
    batch-1 results published by then (:func:`workbook.serving.calibration.published_by`) and, where that differs
    from the newest, every offline result's compute efficiency re-fitted with it (``fitted`` caches them per stack and
    overhead). Only the run's own stack's overhead enters its prediction and that stack's fitted efficiencies."""
    overheads = eff.points.filter(pl.col("kind") == "step-overhead")
    overall, then, _ = overhead_by_stack(published_by(overheads, run["published"]))
    newest = dict(eff.layer_overhead_by_stack)
    stack = run["stack"]
    own, current = then.get(stack, overall), newest.get(stack, eff.layer_overhead_s)
    base = of_its_time(eff.factors(), run["published"])  # its FP8 KV-cache reads
    if own == current:
        return base, eff.points
    factors = dataclasses.replace(
        base,
        layer_overhead_s=eff.layer_overhead_s if stack in newest else own,
        layer_overhead_by_stack=tuple({**newest, stack: own}.items()) if stack in newest else tuple(newest.items()),
    )
    if (stack, own) not in fitted:  # that stack's offline results re-fitted; the others' efficiencies stay
        others = eff.points.filter(pl.col("kind").str.starts_with("compute") & (pl.col("stack") != stack))
        refit = compute_points(cat, eta_bw, factors, {stack})
        fitted[stack, own] = pl.concat([overheads, others, refit], how="diagonal")
    return factors, fitted[stack, own]


def validate(
    cat: Catalog, efficiency: ServingEfficiency | None = None, runs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """One row per published result (``runs``, default all of ``cat``'s): predicted vs published, |ln error|, and the
    basis of the prediction."""
    eff = efficiency or calibrate(cat)
    eta_bw = dict(zip(eff.stacks["stack"], eff.stacks["eta_bw"], strict=True))
    runs = (cat.inference_runs if runs is None else runs).filter(
        pl.col("measure").is_in(MEASURES) & ~((pl.col("scenario") == "latency") & (pl.col("role") == "calibrate"))
    )
    rows, fitted = [], {}
    for run in runs.iter_rows(named=True):
        generation, points = _generation(cat, eff, eta_bw, run, fitted)
        eta_c, basis = _held_out_compute(points, run)
        factors = dataclasses.replace(generation, moe=moe_factor(points.filter(pl.col("system") != _system(run))))
        bw = eta_bw.get(run["stack"], sv.HBM_STREAM_DEFAULT)
        detail = published.predict_detail(cat.accelerators, run, bw, eta_c, factors)
        rows.append(
            {
                "run_id": run["run_id"],
                "stack": run["stack"],
                "round": run["round"],
                "published": run["published"],
                "accelerator_id": run["accelerator_id"],
                "model": run["model"],
                "weight_precision": run["weight_precision"],
                "scenario": run["scenario"],
                "ttft_limit_ms": run["ttft_limit_ms"],
                "tpot_limit_ms": run["tpot_limit_ms"],
                "measure": run["measure"],
                "statistic": run["latency_statistic"],
                "prompt_basis": run["prompt_basis"],
                "published_value": run["value"],
                "predicted_value": detail["value"],
                "eta_c": eta_c,
                "basis": basis,
                "layer_overhead_s": dict(factors.layer_overhead_by_stack).get(run["stack"], factors.layer_overhead_s),
                "max_load_fraction": detail["max_load_fraction"],
                "published_load_fraction": detail["published_load_fraction"],
                "published_load_above_max": detail.get("published_load_above_max"),
                "predicted_at_published_load": detail.get("value_at_published_load"),
                "predicted_near_max": detail.get("value_near_max"),
                "matching_load_share": detail.get("matching_load_share"),
            }
        )
    readings = ("predicted_value", "max_load_fraction", "published_load_fraction", "predicted_at_published_load")
    return (
        pl.DataFrame(
            rows, schema_overrides=dict.fromkeys((*readings, "predicted_near_max", "matching_load_share"), pl.Float64)
        )
        .with_columns(pl.col("predicted_value").fill_nan(None))  # NaN: the published load overloads the model
        .with_columns(
            error=(pl.col("predicted_value") / pl.col("published_value")).log(),
            error_at_published_load=(pl.col("predicted_at_published_load") / pl.col("published_value")).log(),
            error_near_max=(pl.col("predicted_near_max") / pl.col("published_value")).log(),
        )
        .with_columns(abs_error=pl.col("error").abs())
    )


def suite(round_name: pl.Expr) -> pl.Expr:
    """The benchmark series a round belongs to: the first word of its name ("MLPerf v5.0" -> MLPerf, "TRT-LLM 1.2
    perf overview" -> TRT-LLM). Each series measures its own way (MLPerf's OpenOrca mix under its rules, a
    vendor's fixed-length sweeps), so the newest round is taken per series."""
    return round_name.str.split(" ").list.first()


def is_newest(*keys) -> pl.Expr:
    """True on the rows published last within each group of ``keys`` (columns or expressions)."""
    return pl.col("published") == pl.col("published").max().over(*keys)


def newest(frame: pl.DataFrame, measure: str = "tokens_per_s", precisions=("fp8", "bf16")) -> pl.DataFrame:
    """Results of ``measure`` from the newest round of each stack a buyer can pick today (the software they would
    run; superseded stacks such as TensorRT-LLM's static batching are left out), per benchmark series
    (:func:`suite`: NVIDIA's newest MLPerf round and its newest TensorRT-LLM release tables both count), **for each
    chip and model**: a round that did not run a chip or model leaves the one before as its newest (MLPerf v6.1 ran
    no eight-GPU Hopper system and no Llama 3.1 405B: v5.1's H200 results stay the newest of theirs)."""
    rows = frame.filter(
        (pl.col("measure") == measure)
        & pl.col("weight_precision").is_in(list(precisions))
        & pl.col("stack").is_in(list(STACK_NAMES))
    )
    return rows.filter(is_newest("stack", suite(pl.col("round")), "accelerator_id", "model"))


def by_round(frame: pl.DataFrame) -> pl.DataFrame:
    """Median and worst |ln(pred/published)| per round, stack and measure."""
    return (
        frame.group_by("round", "stack", "measure")
        .agg(
            pl.len().alias("results"),
            pl.col("abs_error").median().alias("median_abs_ln_error"),
            pl.col("abs_error").max().alias("worst_abs_ln_error"),
            pl.col("error").median().alias("median_signed_ln_error"),
            pl.col("published").first(),
        )
        .sort("published", "stack", "measure")
    )


def server_latency(frame: pl.DataFrame) -> pl.DataFrame:
    """MLPerf server TTFT / TPOT results, per round and statistic (mean, p99): published and predicted (ms), and
    whether the prediction is within 30% (``within_target``; a missing prediction is not); the load the prediction
    is read at, the share of it at which the model gives the published figure (``matching_load_share``:
    :func:`workbook.serving.published.matching_load_share`), and the reading at the published load beside it (shown,
    not used: see the module docstring)."""
    return (
        frame.filter((pl.col("scenario") == "server") & pl.col("measure").is_in(["ttft_ms", "tpot_ms"]))
        .with_columns(within_target=(pl.col("abs_error") <= TARGET_LATENCY).fill_null(False))
        .sort("published", "run_id")
        .select(
            "round",
            "run_id",
            "accelerator_id",
            "stack",
            "ttft_limit_ms",
            "tpot_limit_ms",
            "measure",
            "statistic",
            "published_value",
            "predicted_value",
            "error",
            "within_target",
            "max_load_fraction",
            "predicted_near_max",
            "error_near_max",
            "matching_load_share",
            "published_load_fraction",
            "published_load_above_max",
            "predicted_at_published_load",
            "error_at_published_load",
        )
    )


def concurrency_latency(frame: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Latencies at a known load: closed-loop client sweeps (scenario ``concurrency``: ``clients`` requests always
    in flight), per row the published and predicted figure, and whether it is within 30%. Unlike an MLPerf server
    result, the load is set by the benchmark, not chosen by the submitter, so the rows test the latency-vs-load
    curve itself; ``saturated``: the published throughput is within 2% of the sweep's highest (the replica is
    full and the extra clients queue)."""
    sweep = runs.filter(pl.col("scenario") == "concurrency").select(
        "run_id", pl.col("batch").alias("clients"), "load_tokens_per_s"
    )
    return (
        frame.join(sweep, on="run_id")
        .with_columns(
            within_target=(pl.col("abs_error") <= TARGET_LATENCY).fill_null(False),
            saturated=pl.col("load_tokens_per_s") >= 0.98 * pl.col("load_tokens_per_s").max().over("round", "model"),
        )
        .sort("round", "measure", "clients")
        .select(
            "round",
            "accelerator_id",
            "model",
            "measure",
            "clients",
            "load_tokens_per_s",
            "saturated",
            "published_value",
            "predicted_value",
            "error",
            "within_target",
        )
    )


def by_degree(frame: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """NVIDIA's TensorRT-LLM release tables (rounds named "... perf overview") per release, GPU, model and
    tensor-parallel degree: results, median ln error (signed) and worst |ln error|, so a trend with the degree shows."""
    layout = runs.select("run_id", "tensor_parallel")
    return (
        frame.filter(pl.col("round").str.ends_with("perf overview") & (pl.col("measure") == "tokens_per_s"))
        .join(layout, on="run_id")
        .group_by("round", "accelerator_id", "model", "tensor_parallel")
        .agg(
            pl.len().alias("results"),
            pl.col("error").median().alias("median_ln_error"),
            pl.col("abs_error").max().alias("worst_abs_ln_error"),
            pl.col("published").first(),
        )
        .sort("published", "model", "accelerator_id", "tensor_parallel")
        .drop("published")
    )


SIMULATED_REQUESTS = 6000  # requests each simulated load runs (after its warm-up): enough for a stable 99th percentile
LATENCY_COLUMNS = ("tpot_mean_ms", "tpot_ms", "ttft_mean_ms", "ttft_ms")


def against_simulation(cat: Catalog, run_ids, loads=(0.9,), efficiency: ServingEfficiency | None = None):
    """The load curve's formulas against the engine's simulation (:mod:`workbook.serving.simulation`) on the same
    replica: per published server run (its engine settings, held-out efficiency) and per load (a fraction of the
    model's highest load within the run's limits), TTFT and TPOT (mean and 99th percentile, ms) from the formulas
    (``formula_*``) and from the simulation (``simulated_*``). Dense models only (the simulation's steps have a
    fixed weights read)."""
    eff = efficiency or calibrate(cat)
    eta_bw = dict(zip(eff.stacks["stack"], eff.stacks["eta_bw"], strict=True))
    runs = cat.inference_runs.filter(pl.col("run_id").is_in(list(run_ids)))
    rows = []
    for run in runs.iter_rows(named=True):
        eta_c, _ = _held_out_compute(eff.points, run)
        s, sched = published.scenario(run), published.scheduler(run)
        reps = published._replicas(cat.accelerators, run, eta_bw[run["stack"]], eta_c, eff.factors())
        top = replica.refined_limits(reps, s, sched, replica.limits(replica.load_curve(reps, s, sched)))
        highest = top["max_load_fraction"].item()
        for load in loads:
            rho = highest * load
            row = replica.at_load(reps, s, pl.lit(rho), sched).row(0, named=True)
            sim = simulation.of_replica(row, s, sched, SIMULATED_REQUESTS)
            simulated = (sim.tpot_mean_s, sim.tpot_p99_s, sim.ttft_mean_s, sim.ttft_p99_s)
            rows.append(
                {
                    "run_id": run["run_id"],
                    "load_fraction": rho,
                    **{f"formula_{c}": row[c] for c in LATENCY_COLUMNS},
                    **{f"simulated_{c}": v * 1000 for c, v in zip(LATENCY_COLUMNS, simulated, strict=True)},
                }
            )
    return pl.DataFrame(rows)
