"""``evaluate(scenario)``: one row per (accelerator, cloud, pricing model) with every output and its band.

Pipeline (each step a few polars expressions over the accelerator table):
framework path -> peak and MFU -> memory plan -> chips and days -> prices -> cost, energy -> feasibility.
Low/high bands: time from the MFU and goodput ranges, cost from those and the price spread
(min..max over the regions and instances of one cloud).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import polars as pl

from workbook import cache
from workbook import catalog as catalog_mod
from workbook.model import cost, flops, memory, parallelism, sizing, throughput
from workbook.model.spec import ModelSpec
from workbook.model.units import PEAK_COLUMN, SECONDS_PER_DAY
from workbook.training import calibration as calibration_mod
from workbook.training import rules
from workbook.training.scenario import PLATFORMS, Scenario, global_batch_columns

SWITCH_SUPPORT = ("limited", "unsupported")  # below "supported" the team moves to the native stack
SCALE_ITERATIONS = 8  # most plans per row while sizing: chips depend on the layout, the layout on chips
BOUND_TOLERANCE = 1e-9  # in ln(chips): a count this close to a bound of the search sits on it
CONVERGED = 1e-3  # relative gap between the chips needed and the chips planned below which a row has settled
BAND = ("", "_low", "_high")
MIN_TRAIN_WINDOW_DAYS = 1.0  # sizing floor when porting eats the whole window (the deadline rule then says so)
MAX_SIZED_CHIPS = 1e9  # far beyond any documented job (the largest in data/accelerators.csv is 500,000)


@functools.lru_cache(maxsize=4)
def _default_catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


@functools.lru_cache(maxsize=4)
def _default_calibration(cat: catalog_mod.Catalog) -> calibration_mod.Calibration:
    return calibration_mod.fit(cat)


def _framework_paths(cat: catalog_mod.Catalog, framework: str, lock_in: bool) -> pl.DataFrame:
    """Per accelerator kind: the framework the run uses, its efficiency and the engineer-weeks to get there."""
    fw = cat.frameworks
    rows = []
    for kind, native in cat.kinds.select("kind", "native_framework").iter_rows():
        stay = fw.filter((pl.col("framework") == framework) & (pl.col("kind") == kind)).row(0, named=True)
        switch = stay["support"] in SWITCH_SUPPORT and framework != native and not lock_in
        run_fw = native if switch else framework
        target = fw.filter((pl.col("framework") == run_fw) & (pl.col("kind") == kind)).row(0, named=True)
        weeks = [target["port_weeks"], target["port_weeks_low"], target["port_weeks_high"]]
        if switch:
            move = cat.framework_switches.filter(
                (pl.col("from_framework") == framework) & (pl.col("to_framework") == native)
            ).row(0, named=True)
            weeks = [w + move[c] for w, c in zip(weeks, ("weeks", "weeks_low", "weeks_high"), strict=True)]
        rows.append(
            {
                "kind": kind,
                "run_framework": run_fw,
                "framework_switch": switch,
                "support": target["support"],
                "team_framework_support": stay["support"],
                "framework_efficiency": target["efficiency"],
                "framework_efficiency_low": target["efficiency_low"],
                "framework_efficiency_high": target["efficiency_high"],
                "migration_weeks": weeks[0],
                "migration_weeks_low": weeks[1],
                "migration_weeks_high": weeks[2],
            }
        )
    return pl.DataFrame(rows)


def _plan_settings(s: Scenario) -> dict:
    a = s.assumptions
    return {
        "micro_batch": a.micro_batch_seqs,
        "hbm_usable_fraction": a.hbm_usable_fraction,
        "framework_overhead_bytes": a.framework_overhead_bytes,
        "recompute": None if a.recompute == "auto" else a.recompute,
        "zero_stage": a.zero_stage,
    }


def _efficiency(s: Scenario, cal: calibration_mod.Calibration, suffix: str) -> pl.Expr:
    """Kernel efficiency for one band (suffix '', '_low', '_high'): calibrated base x framework x MoE."""
    return (
        pl.col(f"mfu_base{suffix}")
        * pl.col(f"framework_efficiency{suffix}")
        * calibration_mod.moe_factor(cal.moe_efficiency)
    )


def _goodput(s: Scenario, cal: calibration_mod.Calibration, suffix: str, chips: pl.Expr, rate: pl.Expr) -> pl.Expr:
    """Share of wall-clock time that trains: calibrated accounting x interruptions at this chip count over this
    many days of training (``rate``: achieved FLOPs/s per chip)."""
    if s.assumptions.goodput_override is not None:
        return pl.lit(s.assumptions.goodput_override)
    base = {"": cal.goodput, "_low": cal.goodput_low, "_high": cal.goodput_high}[suffix]
    return throughput.goodput(chips, throughput.work_days(pl.col("train_flops"), chips, rate), base)


def _throughput(s: Scenario, suffix: str) -> pl.Expr:
    """Achieved model FLOPs/s per chip for one band of the planned layout (same layout, band efficiency).

    The compute and the pipeline bubble scale with 1/efficiency; communication does not.
    """
    if s.assumptions.mfu_override is not None:
        return throughput.achieved_flops_per_s(pl.col("peak_flops_per_s"), s.assumptions.mfu_override)
    scale = pl.col("efficiency") / pl.col(f"efficiency{suffix}")
    step = (pl.col("compute_s") + pl.col("bubble_s")) * scale + pl.col("tp_comm_s") + pl.col("exposed_comm_s")
    chips = pl.col("chips").cast(pl.Float64)
    return pl.col("flops_per_token") * pl.col("planned_batch_tokens") / (chips * step)


def jobs(s: Scenario, **vary) -> pl.DataFrame:
    """The scenario's job as a one-row frame; ``vary`` (params=[...] or days=[...]) makes one row per value.

    Varying ``params`` keeps the scenario's tokens per parameter and its model's default shape. Varied
    jobs are open-ended: no deadline or budget, so a chart can show what lies beyond them.
    """
    m, c = s.model, s.constraints
    specs = (
        [m]
        if "params" not in vary
        else [
            ModelSpec.from_params(p, min(p, p * m.active_params / m.params), seq_len=m.seq_len) for p in vary["params"]
        ]
    )
    days = vary.get("days", [None if s.chips is not None else s.target_days])
    rows = [
        {
            "sweep": next(iter(vary), "main"),
            **spec.columns(),
            **global_batch_columns(s.assumptions.global_batch_tokens, spec.params),
            "tokens": s.tokens * spec.params / m.params,
            "target_days": d,
            "chips_given": None if "days" in vary else s.chips,
            "deadline_days": None if vary else c.deadline_days,
            "budget_usd": None if vary else c.budget_usd,
        }
        for spec in specs
        for d in days
    ]
    return pl.DataFrame(rows, schema_overrides=JOB_SCHEMA)


JOB_SCHEMA = {
    "target_days": pl.Float64,
    "chips_given": pl.Int64,
    "deadline_days": pl.Float64,
    "budget_usd": pl.Float64,
    "global_batch_tokens": pl.Float64,
    "max_global_batch_tokens": pl.Float64,
}


def job_frame(s: Scenario, **sweeps) -> pl.DataFrame:
    """The main job plus one job per swept value (``days=[...]``, ``params=[...]``), numbered."""
    parts = [jobs(s)] + [jobs(s, **{name: values}) for name, values in sweeps.items()]
    return pl.concat(parts).with_row_index("job")


@functools.lru_cache(maxsize=64)
def _accelerator_inputs(
    cat: catalog_mod.Catalog,
    cal: calibration_mod.Calibration,
    accelerators: tuple[str, ...],
    framework: str,
    lock_in: bool,
    precision: str,
    platform: str = "nvidia",
) -> pl.DataFrame:
    """Per accelerator: specs, framework path and effort, calibrated MFU, peak for the precision.

    The porting effort counts from the team's current ``platform``: on its own platform a team ports nothing
    (only a framework rewrite, if one is needed, remains); elsewhere it pays the framework port to that
    accelerator kind plus the vendor port (CUDA -> ROCm) where one applies.
    Depends only on these choices, not on the job, so a slider move reuses it.
    """
    acc = cat.accelerators
    if accelerators:
        acc = acc.filter(pl.col("accelerator_id").is_in(list(accelerators)))
    peak = PEAK_COLUMN[precision]
    mfu = cal.mfu.filter(pl.col("precision") == precision).select(
        "accelerator_id",
        pl.col("mfu").alias("mfu_base"),
        pl.col("mfu_low").alias("mfu_base_low"),
        pl.col("mfu_high").alias("mfu_base_high"),
        pl.col("basis").alias("mfu_basis"),
    )
    ports = cat.platform_ports.select("vendor", "kind", *(pl.col(f"weeks{b}").alias(f"_port{b}") for b in BAND))
    vendor, kind = PLATFORMS[platform]
    at_home = (pl.col("vendor") == vendor) & (pl.col("kind") == kind)
    return (
        acc.join(_framework_paths(cat, framework, lock_in), on="kind", how="left")
        .join(ports, on=["vendor", "kind"], how="left")
        .with_columns(
            **{
                f"migration_weeks{b}": pl.when(at_home & ~pl.col("framework_switch"))
                .then(0.0)
                .otherwise(pl.col(f"migration_weeks{b}") + pl.col(f"_port{b}").fill_null(0))
                for b in BAND
            }
        )
        .drop(*(f"_port{b}" for b in BAND))
        .join(mfu, on="accelerator_id", how="left")
        .join(cat.kinds.select("kind", pl.col("label").alias("kind_label")), on="kind", how="left")
        .with_columns(
            pl.col(peak).alias("peak_flops_per_s"),
            parallelism.scaleout_bytes_per_s().alias("scaleout_bytes_per_s"),
        )
    )


def _accelerator_frame(
    s: Scenario, cat: catalog_mod.Catalog, cal: calibration_mod.Calibration, jobs_frame: pl.DataFrame
) -> pl.DataFrame:
    inputs = _accelerator_inputs(
        cat, cal, s.accelerators, s.framework, s.constraints.framework_lock_in, s.precision, s.current_platform
    )
    frame = (
        inputs.join(jobs_frame, how="cross")
        .with_columns(
            flops_per_token=flops.flops_per_token(
                pl.col("active_params"), pl.col("n_layers"), pl.col("attention_dim"), pl.col("seq_len")
            ),
            attention_flops_per_token=flops.attention_flops_per_token(
                pl.col("n_layers"), pl.col("attention_dim"), pl.col("seq_len")
            ),
            **{f"efficiency{b}": _efficiency(s, cal, b) for b in BAND},
        )
        .with_columns(train_flops=pl.col("flops_per_token") * pl.col("tokens"))
    )
    return parallelism.min_chips(frame, _plan_settings(s)).with_columns(
        min_chips_to_fit=sizing.round_to_allowed(pl.col("min_chips_to_fit"), pl.col("block_chips")),
        max_chips_for_batch=pl.col("max_chips_for_batch").cast(pl.Int64),
    )


def _training_target_days(s: Scenario) -> pl.Expr:
    """Days of training a sized option aims at: spot runs lose time to preemptions, so a shorter uninterrupted time."""
    overhead = s.assumptions.spot_preemption_overhead
    return pl.col("target_days") / cost.wall_hours_with_preemption(pl.lit(1.0), pl.col("pricing_model"), overhead)


def _solve_chips(frame: pl.DataFrame, s: Scenario, cal: calibration_mod.Calibration) -> pl.Series:
    """Chips per row: ``chips_given``, or the count that finishes the job in its target days.

    The count solves need(n) = n, where need(n) is the chips that finish in the target at the rate (and goodput)
    of the layout planned at n chips: a root of g(x) = ln need(e^x) - x, found by the secant method kept inside a
    bracket (bisection when a step leaves it). The bracket is the first doubling of the fewest chips that fit
    (up to the most the global batch allows) that finishes in time, and the count before it
    (:func:`_first_bracket`): g is not monotonic, since past the count at which the batch leaves one sequence per
    data-parallel rank a larger, slower layout is needed, so the fewest chips are looked for from below.
    A plain fixed point n <- need(n) converges slowly, or not at all, where communication makes the
    per-chip rate fall almost as fast as chips are added. A row stops once need and n agree within ``CONVERGED``
    or it sits at a bound (then it is sized at that bound), after at most ``SCALE_ITERATIONS`` plans, with the
    smallest count seen to finish in time where it has not converged; then it is rounded up to whole nodes/slices
    that the last planned layout also divides (degrees are powers of two), or down if that passes the batch.
    """
    target = _training_target_days(s)
    settings = _plan_settings(s)
    floor = pl.col("min_chips_to_fit").fill_null(1).cast(pl.Float64)
    batch = pl.col("max_chips_for_batch").cast(pl.Float64)
    cap = pl.max_horizontal(floor, pl.min_horizontal(batch, pl.col("chips_limit"), pl.lit(MAX_SIZED_CHIPS)))
    needs = [*parallelism.INPUT_COLUMNS, *(f"efficiency{b}" for b in BAND), "train_flops", "target_days"]
    rows = frame.with_row_index("_i")
    work = (
        rows.filter(pl.col("chips_given").is_null())
        .select("_i", *needs, "pricing_model", "min_chips_to_fit", "max_chips_for_batch", "chips_limit", "block_chips")
        .with_columns(_lo=floor, _hi=cap)
    )
    if work.height == 0:
        return frame["chips_given"]
    x, lo, hi = pl.col("chips").log(), pl.col("_lo").log(), pl.col("_hi").log()
    g = pl.col("_g")
    rate = _throughput(s, "").fill_null(pl.col("peak_flops_per_s") * pl.col("efficiency"))
    need = sizing.chips_for_days(pl.col("train_flops"), target, rate, _goodput(s, cal, "", pl.col("chips"), rate))
    gap = need.log() - x

    def planned_gap(points: pl.DataFrame) -> pl.DataFrame:
        return parallelism.plan(points, "chips", "efficiency", settings, exact=False).with_columns(_g=gap)

    work = _first_bracket(work, planned_gap)
    settled = []
    for i in range(SCALE_ITERATIONS):
        planned = planned_gap(work)
        converged = g.abs() < math.log1p(CONVERGED)
        at_top = (g > 0) & (x >= hi - BOUND_TOLERANCE)  # needs more than the most allowed: the limits say so
        at_floor = (g < 0) & (x <= lo + BOUND_TOLERANCE)  # the fewest chips that fit already finish in time
        enough = pl.when(g <= 0).then(pl.min_horizontal("chips", "_enough")).otherwise(pl.col("_enough"))
        planned = planned.with_columns(_enough=enough)
        # the layout changes between two counts a hair apart: the smaller finishes in time, the other does not
        tight = pl.col("_enough").is_not_null() & (pl.col("_enough").log() - lo < math.log1p(CONVERGED))
        done = converged | at_top | at_floor | tight | pl.lit(i == SCALE_ITERATIONS - 1)
        answer = (
            pl.when(g <= 0)
            .then(pl.col("chips"))
            .when(converged | at_top | pl.col("_enough").is_null())
            .then((x + g).exp())
            .otherwise(pl.col("_enough"))
        )
        settled.append(planned.filter(done).with_columns(_next=answer))
        secant = x - g * (x - pl.col("_x_prev")) / (g - pl.col("_g_prev"))
        step = pl.coalesce(pl.when(g != pl.col("_g_prev")).then(secant), x + g)
        bracketed = (
            planned.filter(~done)
            .with_columns(
                _lo=pl.when(g > 0).then(pl.col("chips")).otherwise(pl.col("_lo")),
                _hi=pl.when(g < 0).then(pl.col("chips")).otherwise(pl.col("_hi")),
            )
            .with_columns(_step=step)
        )
        inside = (pl.col("_step") > lo) & (pl.col("_step") < hi)
        # Past the top of the bracket while nothing has yet been seen to finish in time: try the top itself.
        to_top = (pl.col("_step") >= hi) & pl.col("_enough").is_null()
        step = pl.when(inside).then(pl.col("_step")).when(to_top).then(hi).otherwise((lo + hi) / 2)
        work = bracketed.with_columns(_x_prev=x, _g_prev=g, chips=step.exp()).select(work.columns)
        if work.height == 0:
            break
    # whole layouts: data x context ranks a multiple of the expert-parallel degree (its groups tile them)
    ranks = pl.max_horizontal("context_parallel", "expert_parallel")  # both powers of two in practice
    model_parallel = pl.col("tensor_parallel") * pl.col("pipeline_parallel") * ranks
    block = pl.max_horizontal(pl.col("block_chips"), model_parallel.fill_null(1))
    up = sizing.round_to_allowed(pl.col("_next"), block)
    down = sizing.round_down_to_allowed(pl.col("max_chips_for_batch").cast(pl.Float64), block)
    past_batch = up > pl.col("max_chips_for_batch")
    sized = pl.concat(settled).select("_i", chips=pl.when(past_batch & (down > 0)).then(down).otherwise(up))
    return (
        rows.join(sized, on="_i", how="left", maintain_order="left")
        .select(pl.coalesce(pl.col("chips_given"), pl.col("chips")))
        .to_series()
    )


def _first_bracket(work: pl.DataFrame, planned_gap) -> pl.DataFrame:
    """Where each row's search starts: the gap g (``planned_gap``: the plan and g of each row's ``chips``) at the
    fewest chips that fit (``_lo``) and at each doubling of it up to the most allowed (``_hi``), in one plan; the
    first count that finishes in time (g <= 0; the most allowed where none does) becomes the search's first count
    and top, the count before it its bottom and previous secant point."""
    doublings = pl.DataFrame({"_k": range(math.ceil(math.log2(MAX_SIZED_CHIPS)) + 1)})
    points = (
        work.join(doublings, how="cross")
        .filter((pl.col("_k") == 0) | (pl.col("_lo") * 2.0 ** (pl.col("_k") - 1) < pl.col("_hi")))
        .with_columns(chips=pl.min_horizontal(pl.col("_lo") * 2.0 ** pl.col("_k"), pl.col("_hi")))
    )
    scanned = planned_gap(points).sort("_i", "_k")
    in_time = pl.col("_g") <= 0
    first = pl.coalesce(pl.when(in_time).then(pl.col("_k")).min(), pl.col("_k").max()).over("_i")
    before = scanned.filter(pl.col("_k") == first - 1).select(
        "_i", _lo=pl.col("chips"), _x_prev=pl.col("chips").log(), _g_prev=pl.col("_g")
    )
    start = scanned.filter(pl.col("_k") == first).select(
        "_i", "chips", _hi=pl.col("chips"), _enough=pl.when(in_time).then(pl.col("chips"))
    )
    return (
        work.drop("_hi")
        .join(start, on="_i", maintain_order="left")
        .join(before, on="_i", how="left", maintain_order="left")
        .with_columns(pl.coalesce("_lo_right", "_lo").alias("_lo"))
        .select(*work.columns, "chips", "_enough", "_x_prev", "_g_prev")
    )


def _size(frame: pl.DataFrame, s: Scenario, cal: calibration_mod.Calibration) -> pl.DataFrame:
    """The layout at each row's ``chips`` and the days, with bands."""
    frame = parallelism.plan(frame, "chips", "efficiency", _plan_settings(s))
    chips = pl.col("chips").cast(pl.Float64)
    columns = {}
    for band, rate_band, goodput_band in (("", "", ""), ("_low", "_high", "_high"), ("_high", "_low", "_low")):
        rate = _throughput(s, rate_band)
        seconds = throughput.train_seconds(
            pl.col("train_flops"), chips, rate, _goodput(s, cal, goodput_band, chips, rate)
        )
        columns[f"train_days{band}"] = seconds / SECONDS_PER_DAY
    frame = frame.with_columns(
        **columns,
        mfu=_throughput(s, "") / pl.col("peak_flops_per_s"),
        goodput=_goodput(s, cal, "", chips, _throughput(s, "")),
        layout=parallelism.layout_words(),
    )
    return frame.with_columns(**{f"{name}_gb": pl.col(f"{name}_bytes") / 1e9 for name in memory.COMPONENTS})


def _size_once_per_plan(frame: pl.DataFrame, s: Scenario, cal: calibration_mod.Calibration) -> pl.DataFrame:
    """:func:`_size` once per (accelerator, job, chips): clouds and pricing models with the same count share it."""
    key = ["accelerator_id", "job", "chips"]
    sized = _size(frame.unique(key, keep="first", maintain_order=True), s, cal)
    added = [c for c in sized.columns if c not in frame.columns]
    return frame.join(sized.select(*key, *added), on=key, how="left", maintain_order="left")


def _clouds_per_accelerator(cat: catalog_mod.Catalog) -> pl.DataFrame:
    return cat.usable_prices().group_by("accelerator_id").agg(pl.col("cloud").n_unique().alias("clouds_offering"))


def _schedule(frame: pl.DataFrame, s: Scenario) -> pl.DataFrame:
    """Porting happens before training: calendar days of porting (``start_delay_days``) come off the window the
    chips are sized for when there is a deadline, and are added to the finish date (``finish_days``, in
    :func:`_costs`)."""
    engineers = s.assumptions.porting_engineers
    frame = frame.with_columns(**{f"start_delay_days{b}": pl.col(f"migration_weeks{b}") * 7 / engineers for b in BAND})
    window = (pl.col("target_days") - pl.col("start_delay_days")).clip(lower_bound=MIN_TRAIN_WINDOW_DAYS)
    return frame.with_columns(
        target_days=pl.when(pl.col("deadline_days").is_not_null()).then(window).otherwise(pl.col("target_days"))
    )


def _limits(frame: pl.DataFrame, cat: catalog_mod.Catalog) -> pl.DataFrame:
    """The most chips one job may use: the accelerator's largest documented single job, and the chips its cloud
    rents under this pricing model without a reservation (``data/capacity.csv``), whichever is smaller."""
    frame = cat.capacity_for(frame)
    by_capacity = pl.col("capacity_max_chips") < pl.col("max_job_chips")
    return frame.with_columns(
        chips_limit=pl.min_horizontal("max_job_chips", "capacity_max_chips"),
        chips_limited_by=pl.when(by_capacity)
        .then(pl.format("{} {} capacity without a reservation", pl.col("cloud"), pl.col("pricing_model")))
        .otherwise(pl.lit("the largest documented job")),
    )


def _size_within_limits(
    frame: pl.DataFrame, s: Scenario, cal: calibration_mod.Calibration, cat: catalog_mod.Catalog
) -> pl.DataFrame:
    """Size every option; an option that needs more chips than its limit is planned at the limit instead
    (whole nodes or slices), so it shows how long the job takes with the most chips it can really get; one whose
    instances are rented whole takes all the chips it pays for (:func:`_fill_instances`)."""
    frame = frame.with_columns(chips=_solve_chips(frame, s, cal))
    over = pl.col("chips_given").is_null() & (pl.col("chips") > pl.col("chips_limit")).fill_null(False)
    block = pl.col("block_chips")
    at_limit = pl.when(pl.col("chips_limit") >= block).then(pl.col("chips_limit") // block * block)
    frame = frame.with_columns(
        chips=pl.when(over).then(at_limit.otherwise(pl.col("chips_limit"))).otherwise(pl.col("chips")).cast(pl.Int64),
        chips_capped=over,
    )
    sized = _size_once_per_plan(frame, s, cal)
    # The search stops within CONVERGED of the target, and the whole count it rounds to is planned afresh: a count a
    # hair short of the target (30.003 days for 30) gets the chips that close the gap, in whole nodes or slices.
    target = _training_target_days(s)
    short = pl.col("chips_given").is_null() & ~pl.col("chips_capped") & (pl.col("train_days") > target)
    more = sizing.round_to_allowed(pl.col("chips") * pl.col("train_days") / target, block)
    more = pl.min_horizontal(pl.max_horizontal(more, pl.col("chips") + block), pl.col("chips_limit"))
    sized = _resize(frame, sized, sized.with_row_index("_i").filter(short).select("_i", _chips=more), s, cal)
    return _fill_instances(frame, sized, s, cal, cat)


def _resize(
    frame: pl.DataFrame, sized: pl.DataFrame, rows: pl.DataFrame, s: Scenario, cal: calibration_mod.Calibration
) -> pl.DataFrame:
    """``sized`` with the rows ``rows`` names (``_i``: their index) planned afresh on ``_chips`` chips."""
    if rows.height == 0:
        return sized
    bumped = frame.with_row_index("_i").join(rows.with_columns(pl.col("_chips").cast(pl.Int64)), on="_i")
    resized = _size_once_per_plan(bumped.with_columns(chips=pl.col("_chips")).drop("_chips"), s, cal)
    kept = sized.with_row_index("_i").join(rows.select("_i"), on="_i", how="anti")
    return pl.concat([kept, resized.select(kept.columns)]).sort("_i").drop("_i")


def _fill_instances(
    frame: pl.DataFrame, sized: pl.DataFrame, s: Scenario, cal: calibration_mod.Calibration, cat: catalog_mod.Catalog
) -> pl.DataFrame:
    """A plan sized for its deadline on instances rented whole that it does not fill takes the chips it pays for:
    they finish it sooner for a bill no larger (1,244 GB200s on AWS capacity blocks rent 18 UltraServers of 72; the
    plan runs on all 1,296). A count the user gave stays, and so does one a limit holds."""
    priced = cat.priced(sized.with_row_index("_i"), s.pricing, s.constraints.clouds)
    spare = (
        pl.col("chips_given").is_null()
        & ~pl.col("chips_capped")
        & (pl.col("rented_chips") > pl.col("chips"))
        & (pl.col("rented_chips") <= pl.col("chips_limit")).fill_null(True)
    )
    return _resize(frame, sized, priced.filter(spare).select("_i", _chips="rented_chips"), s, cal)


def _costs(frame: pl.DataFrame, s: Scenario) -> pl.DataFrame:
    a = s.assumptions
    model = pl.col("pricing_model")
    chips = pl.col("chips").cast(pl.Float64)
    spot_overhead = cost.preemption_overhead(
        chips,
        pl.col("block_chips"),
        a.spot_preemption_overhead,
        a.spot_interruptions_per_node_month,
        a.hours_lost_per_interruption,
    )
    columns = {}
    for band in BAND:
        wall = cost.wall_hours_with_preemption(pl.col(f"train_days{band}") * 24, model, spot_overhead)
        columns[f"train_days{band}"] = wall / 24
        # the cloud bills the chips it rents: whole instances (Catalog.cheapest_quotes), for the run or the term
        columns[f"chip_hours{band}"] = cost.billed_chip_hours(pl.col("rented_chips").cast(pl.Float64), wall, model)
        columns[f"used_chip_hours{band}"] = chips * wall
    frame = frame.with_columns(
        **columns,
        preemption_overhead=pl.when(model == "spot").then(spot_overhead).otherwise(0.0),
        term_months=cost.term_months(model),
    )
    migration = a.usd_per_engineer_week if a.include_migration_cost else 0.0
    columns = {}
    for band in BAND:
        price = pl.col(f"usd_per_chip_hour{band}")
        columns[f"compute_cost_usd{band}"] = pl.col(f"chip_hours{band}") * price
        columns[f"migration_cost_usd{band}"] = pl.col(f"migration_weeks{band}") * migration
        columns[f"finish_days{band}"] = pl.col(f"start_delay_days{band}") + pl.col(f"train_days{band}")
        columns[f"energy_kwh{band}"] = cost.energy_kwh(
            pl.col("chips"), pl.col("watts"), pl.col(f"train_days{band}") * 24, a.host_power_factor, a.pue
        )
        columns[f"amortised_cost_usd{band}"] = (
            pl.col(f"used_chip_hours{band}") * price + pl.col(f"migration_weeks{band}") * migration
        )
    frame = frame.with_columns(**columns)
    return frame.with_columns(
        **{f"cost_usd{b}": pl.col(f"compute_cost_usd{b}") + pl.col(f"migration_cost_usd{b}") for b in BAND},
        co2e_kg=cost.co2e_kg(pl.col("energy_kwh"), a.grid_kg_co2e_per_kwh),
    )


OUTPUT_COLUMNS = [
    "accelerator_id",
    "name",
    "vendor",
    "kind",
    "kind_label",
    "offered",
    "cloud",
    "pricing_model",
    "feasible",
    "infeasible_code",
    "infeasible_reason",
    "chips",
    "layout",
    *parallelism.LAYOUT_COLUMNS,
    "recompute",
    "zero_stage",
    "global_batch_tokens",
    "max_global_batch_tokens",
    "planned_batch_tokens",
    "micro_batches",
    "min_chips_to_fit",
    "max_chips_for_batch",
    "step_s",
    "goodput",
    "mfu",
    "mfu_base",
    "mfu_base_low",
    "mfu_base_high",
    "mfu_basis",
    "train_days",
    "train_days_low",
    "train_days_high",
    "chip_hours",
    "chip_hours_low",
    "chip_hours_high",
    "usd_per_chip_hour",
    "usd_per_chip_hour_low",
    "usd_per_chip_hour_high",
    "usd_per_chip_hour_typical",
    "region",
    "instance_type",
    "chips_per_instance",
    "rented_chips",  # the job's chips in whole instances where an instance is rented whole: what is billed
    "rent_unit",  # the chips rented at a time (an instance rented whole, a TPU slice's unit; 1 where billed per chip)
    "price_rows",
    "price_as_of",
    "price_age_years",  # how much older the quote is than the newest in the data
    "price_as_of_approx",
    "price_secondary_source",
    "user_price",
    "compute_cost_usd",
    "compute_cost_usd_low",
    "compute_cost_usd_high",
    "migration_weeks",
    "migration_weeks_low",
    "migration_weeks_high",
    "migration_cost_usd",
    "cost_usd",
    "cost_usd_low",
    "cost_usd_high",
    "term_months",
    "amortised_cost_usd",
    "amortised_cost_usd_low",
    "amortised_cost_usd_high",
    "start_delay_days",
    "start_delay_days_low",
    "start_delay_days_high",
    "finish_days",
    "finish_days_low",
    "finish_days_high",
    "deadline_days",
    "chips_limit",
    "chips_limited_by",
    "chips_capped",
    "max_job_chips",
    "max_job_basis",
    "capacity_max_chips",
    "capacity_basis",
    "preemption_overhead",
    "memory_per_chip_gb",
    "hbm_gb",
    "fits_in_memory",
    *(f"{c}_gb" for c in memory.COMPONENTS),
    "energy_kwh",
    "energy_kwh_low",
    "energy_kwh_high",
    "co2e_kg",
    "run_framework",
    "framework_switch",
    "support",
    "team_framework_support",
    "framework_efficiency",
    "train_flops",
    "peak_flops_per_s",
    "clouds_offering",
    "params",
    "tokens",
]


def evaluate_full(
    scenario: Scenario,
    catalog: catalog_mod.Catalog | None = None,
    calibration: calibration_mod.Calibration | None = None,
    jobs_frame: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Every option with every input and intermediate column (for sweeps, charts and explanations).

    ``jobs_frame`` (from :func:`job_frame`) evaluates several jobs at once; the ``job`` and ``sweep``
    columns tell them apart. By default: the scenario's own job only. The latest results, up to
    :data:`EVALUATIONS_KEPT_BYTES`, are kept in memory, keyed by the scenario, the catalog's content, the
    calibration and the jobs: a repeated call returns the same frame without computing it.
    """
    cat = catalog or _default_catalog()
    key = (
        scenario,
        cache.content_digest(cat),
        calibration,  # None: the default one, itself a function of the catalog's content
        None if jobs_frame is None else cache.frame_digest(jobs_frame),
    )
    return _EVALUATIONS.get(key, lambda: _evaluate_full(scenario, cat, calibration, jobs_frame))


# A Train-tab result with its sweeps is 2-5 MB, a plain evaluate() 0.2 MB: the last five or so app results.
EVALUATIONS_KEPT_BYTES = 24_000_000
_EVALUATIONS = cache.Memo(EVALUATIONS_KEPT_BYTES)


def _evaluate_full(
    scenario: Scenario,
    cat: catalog_mod.Catalog,
    calibration: calibration_mod.Calibration | None,
    jobs_frame: pl.DataFrame | None,
) -> pl.DataFrame:
    cal = calibration or _default_calibration(cat)
    summary = cat.price_summary(scenario.pricing, scenario.constraints.clouds).select(
        "accelerator_id", "cloud", "pricing_model", "usd_per_chip_hour_typical", "price_rows"
    )
    frame = (
        _accelerator_frame(scenario, cat, cal, job_frame(scenario) if jobs_frame is None else jobs_frame)
        .join(summary, on="accelerator_id", how="left")
        .join(_clouds_per_accelerator(cat), on="accelerator_id", how="left")
        .with_columns(pl.col("pricing_model").fill_null(scenario.pricing[0]))
    )
    frame = _limits(_schedule(frame, scenario), cat)
    frame = cat.priced(_size_within_limits(frame, scenario, cal, cat), scenario.pricing, scenario.constraints.clouds)
    frame = _costs(frame, scenario).with_columns(
        memory_per_chip_gb=pl.col("memory_per_chip_bytes") / 1e9,
        hbm_gb=pl.col("hbm_bytes") / 1e9,
        fits_in_memory=(
            pl.col("memory_per_chip_bytes") <= pl.col("hbm_bytes") * scenario.assumptions.hbm_usable_fraction
        ),
    )
    frame = frame.with_columns(**rules.first_failing(rules.rules_for(scenario))).with_columns(
        feasible=pl.col("infeasible_reason").is_null()
    )
    order = ["job", "feasible", "cost_usd", "accelerator_id", "cloud", "pricing_model"]  # ties in a fixed order
    return frame.sort(order, descending=[False, True, False, False, False, False], nulls_last=True, maintain_order=True)


def evaluate(
    scenario: Scenario,
    catalog: catalog_mod.Catalog | None = None,
    calibration: calibration_mod.Calibration | None = None,
) -> pl.DataFrame:
    """Every (accelerator, cloud, pricing model) option for ``scenario``; feasible ones sorted by cost first."""
    return evaluate_full(scenario, catalog, calibration).select(OUTPUT_COLUMNS)


def sweep(
    scenario: Scenario,
    picks: pl.DataFrame,
    catalog: catalog_mod.Catalog | None = None,
    calibration: calibration_mod.Calibration | None = None,
    **vary,
) -> pl.DataFrame:
    """Evaluate chosen options (``picks``: accelerator_id, cloud, pricing_model) over varied jobs.

    ``vary`` is ``params=[...]`` (model sizes) or ``days=[...]`` (target durations); see :func:`jobs`.
    """
    narrowed = dataclasses.replace(scenario, accelerators=tuple(picks["accelerator_id"].unique()))
    frame = evaluate_full(narrowed, catalog, calibration, job_frame(scenario, **vary))
    return picked(frame.filter(pl.col("sweep") != "main"), picks)


def picked(frame: pl.DataFrame, picks: pl.DataFrame) -> pl.DataFrame:
    """Rows of ``frame`` for the chosen (accelerator, cloud, pricing model) options."""
    return frame.join(
        picks.select("accelerator_id", "cloud", "pricing_model"),
        on=["accelerator_id", "cloud", "pricing_model"],
        how="semi",
    )


def memory_breakdown(frame: pl.DataFrame) -> pl.DataFrame:
    """Long frame (accelerator_id, chips, component, gb, hbm_gb) of memory per chip; the parts sum to
    ``memory_per_chip_gb`` of each option."""
    keys = ["accelerator_id", "name", "chips", "tensor_parallel", "hbm_gb"]
    return (
        frame.select(*keys, *(f"{c}_gb" for c in memory.COMPONENTS))
        .unpivot(index=keys, variable_name="component", value_name="gb")
        .with_columns(pl.col("component").str.strip_suffix("_gb"))
    )
