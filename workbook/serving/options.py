"""``evaluate_serving(scenario)``: per (accelerator, cloud, pricing) option, the cheapest way to serve a model.

For every accelerator the model tries the tensor-parallel degrees a replica can use (:mod:`replica`), finds each
one's capacity (the highest load that fits in memory and meets the time-to-first-token and per-token targets,
with prefill interleaved into decode steps), and sizes **independent replicas** so that each runs at most the
headroom target of that capacity: replicas = ceil(traffic / (headroom x capacity)). No training-cluster cap
applies: replicas do not talk to each other. The cloud's capacity does: a fleet is rented like a training job, so an
option needing more chips than its cloud rents at once under its pricing model without a reservation
(``data/capacity.csv``: on-demand 512, spot 256, stated assumptions) is ruled out and says so. A model that does
not fit in one node (weights and one sequence's KV cache) is served by a pipeline of nodes
(:data:`replica.PIPELINE_CANDIDATES`), as vLLM's guide says to; where it fits, replicas stay within a node. The
configuration with the fewest chips wins (ties: the smallest replica, which fits the most instance sizes, then the
most throughput per chip). Latencies are reported at the load the
traffic actually puts on each replica. With ``ServeScenario.disaggregation`` an accelerator's answer may instead be
separate prefill and decode pools
(:mod:`workbook.serving.disaggregated`), where they need fewer chips.
Efficiencies come from the vendor's chosen software stack (:mod:`workbook.serving.calibration`), and so do the
engine's scheduler settings: each stack's documented defaults (``data/serving_engine_defaults.csv``: per-step
token budget, batch limit, chunked prefill, scheduling ahead; a stack with no verified default runs an unlimited
engine, and the ``engine`` column says so), which set how long prompts queue under load (:class:`replica.Scheduler`).
"""

from __future__ import annotations

import polars as pl

from workbook import catalog as catalog_mod
from workbook.catalog import Catalog
from workbook.catalog.schemas import PRICING_MODELS
from workbook.model import cost
from workbook.model.units import HOURS_PER_MONTH, SECONDS_PER_HOUR
from workbook.present import counted, grouped, milliseconds
from workbook.serving import disaggregated, replica
from workbook.serving.band import KINDS, throughput_band
from workbook.serving.calibration import ServingEfficiency, calibrate
from workbook.serving.scenario import ServeScenario, stack_runs

KEYS = replica.KEYS
ENGINE_COLUMNS = [
    "max_tokens_per_step",
    replica.ENGINE_MAX_SEQS,
    "chunked_prefill",
    "schedule_ahead",
    "engine",
    "engine_source",
]
UNLIMITED_ENGINE = "no verified default for this stack: an engine with no token budget and no batch limit"


def with_engine(acc: pl.DataFrame, defaults: pl.DataFrame, s: ServeScenario) -> pl.DataFrame:
    """``acc`` (with its ``stack``) and the stack's default engine settings there: the row naming the accelerator,
    else the stack's ``any`` row, else none (an unlimited engine, said in ``engine``). A batch limit the user set
    (``max_batch``) replaces the engine's."""
    table = defaults.select(
        "stack",
        "accelerator_id",
        *ENGINE_COLUMNS[:-1],
        pl.concat_str("source", pl.lit(" (as of "), "as_of", pl.lit(")")).alias("engine_source"),
    )
    stack_wide = table.filter(pl.col("accelerator_id") == "any").drop("accelerator_id")
    frame = (
        acc.join(table, on=["stack", "accelerator_id"], how="left")
        .join(stack_wide, on="stack", how="left", suffix="_any")
        .with_columns(
            pl.when(pl.col("engine").is_not_null()).then(pl.col(c)).otherwise(pl.col(f"{c}_any")).alias(c)
            for c in ENGINE_COLUMNS
        )
        .drop(f"{c}_any" for c in ENGINE_COLUMNS)
    )
    frame = frame.with_columns(pl.col("engine").fill_null(UNLIMITED_ENGINE))
    if s.max_batch is not None:
        frame = frame.with_columns(pl.lit(s.max_batch).alias(replica.ENGINE_MAX_SEQS))
    return frame


def _replicas(cat: Catalog, s: ServeScenario, eff: ServingEfficiency, rank: int = 0) -> pl.DataFrame:
    """Replicas of the scenario's accelerators on their candidate stack of ``rank`` (0: the vendor's listed one)."""
    acc = _accelerators(cat, s, eff).filter(pl.col("stack_rank") == rank)
    return within_a_node_where_it_fits(replica.replicas(replica.configs(acc), s, eff.factors()))


def _accelerators(cat: Catalog, s: ServeScenario, eff: ServingEfficiency) -> pl.DataFrame:
    """The scenario's accelerators, one row per candidate stack (``stack_rank``), with the stack's efficiencies
    and engine defaults."""
    acc = cat.accelerators
    if s.accelerators:
        acc = acc.filter(pl.col("accelerator_id").is_in(list(s.accelerators)))
    acc = with_engine(eff.for_accelerators(acc, s.stack_choice), cat.serving_engine_defaults, s)
    acc = _runnable_stacks(acc, s.weight_precision)
    if s.efficiency_override is not None:
        acc = acc.with_columns(eta_bw=pl.lit(s.efficiency_override), eta_c=pl.lit(s.efficiency_override))
    return acc


def _runnable_stacks(acc: pl.DataFrame, precision: str) -> pl.DataFrame:
    """``acc`` less the candidate stacks that cannot run ``precision`` weights on their chip
    (:func:`workbook.serving.scenario.stack_runs`), the chip's other rows saying which were left out and why
    (``stack_excluded``; null where none was)."""
    runs = stack_runs(precision)
    left_out = (
        acc.filter(~runs)
        .group_by("accelerator_id")
        .agg(pl.col("stack_name").unique(maintain_order=True).str.join(" and ").alias("_left_out"))
    )
    words = f"{{}} was not tried: it runs {precision.upper()} weights only on a chip's own {precision.upper()} "
    words += "matmuls, which this chip lacks, by its support matrix"
    return (
        acc.filter(runs)
        .join(left_out, on="accelerator_id", how="left")
        .with_columns(stack_excluded=pl.when(pl.col("_left_out").is_not_null()).then(pl.format(words, "_left_out")))
        .drop("_left_out")
    )


def within_a_node_where_it_fits(reps: pl.DataFrame) -> pl.DataFrame:
    """``reps`` less the pipelines of nodes of the accelerators where one node holds the model and a sequence."""
    fits = reps.filter((pl.col("pipeline_parallel") == 1) & (pl.col("max_sequences") >= 1))["accelerator_id"]
    return reps.filter((pl.col("pipeline_parallel") == 1) | ~pl.col("accelerator_id").is_in(fits.unique().to_list()))


def _target_words(ms: float | None) -> str:
    """A latency target as the reasons write it (a branch that cannot bind when there is none)."""
    return "no" if ms is None else milliseconds(ms)


def _why_not(s: ServeScenario) -> pl.Expr:
    return (
        pl.when(~pl.col("any_fits"))
        .then(
            pl.format(
                "weights and one sequence's KV cache do not fit even in a replica of {}",
                counted(pl.col("max_tensor_parallel"), "chip"),
            )
        )
        .when(~pl.col("any_tpot"))
        .then(
            pl.format(
                "even one sequence at a time is slower than the {} ms p99 per-token target (best {} ms, on the "
                "replicas of {} or more that hold the model)",
                pl.lit(_target_words(s.tpot_ms)),
                pl.col("best_tpot_ms").round(1),
                counted(pl.col("min_fitting_tensor_parallel"), "chip"),
            )
        )
        .when(~pl.col("any_ok"))
        .then(
            pl.format(
                "prefill of {} tokens takes longer than the {} ms p99 first-token target",
                pl.lit(f"{s.prompt_tokens_tail:,.0f}"),
                pl.lit(_target_words(s.ttft_ms)),
            )
        )
        .otherwise(None)
    )


def best_configs(cat: Catalog, s: ServeScenario, eff: ServingEfficiency) -> pl.DataFrame:
    """Per accelerator: the replica configuration serving the traffic within the headroom with the fewest chips,
    on the candidate stack that needs the fewest (ties: the vendor's listed stack; ``stack_comparison`` says what
    each candidate needs)."""
    ranks = _accelerators(cat, s, eff)["stack_rank"].unique().sort()
    parts = [_best_on_stack(_replicas(cat, s, eff, rank), s) for rank in ranks]
    return fewest_chips(pl.concat(parts, how="diagonal_relaxed"))


def fewest_chips(candidates: pl.DataFrame) -> pl.DataFrame:
    """Per accelerator, the candidate stack's row that serves within the targets with the fewest chips (then the
    lower ``stack_rank``), with ``stack_comparison``: where several stacks were tried, each one's chips."""
    served = pl.col("max_load_fraction").is_not_null() & pl.col("serve_reason").is_null()
    ranked = candidates.with_columns(_served=served).sort(
        ["_served", "chips", "stack_rank"], descending=[True, False, False]
    )
    # each stack's fixed step cost comes from its own source, of its own date: say which for the stacks not chosen
    # (the chosen one's is said with its efficiency)
    ranked = ranked.with_columns(_chosen=pl.int_range(pl.len()).over("accelerator_id") == 0)
    source = pl.lit("")
    if "overhead_basis" in candidates.columns:
        basis = pl.col("overhead_basis")
        source = (
            pl.when(basis.is_not_null() & ~pl.col("_chosen"))
            .then(pl.format(" (fixed step cost {})", basis))
            .otherwise(source)
        )
    needs = (
        pl.when(pl.col("_served"))
        .then(pl.format("{} {}{}", "stack_name", "chips", source))
        .otherwise(pl.format("{} cannot meet the targets", "stack_name"))
    )
    comparison = (
        ranked.sort("stack_rank")
        .group_by("accelerator_id")
        .agg(pl.len().alias("_tried"), needs.str.join(", ").alias("_needs"))
        .with_columns(
            stack_comparison=pl.when(pl.col("_tried") > 1)
            .then(
                pl.format(
                    "the vendor's published stack needing the fewest chips here: {}, ties going to the first",
                    "_needs",
                )
            )
            .otherwise(None)
        )
    )
    chosen = ranked.unique("accelerator_id", keep="first", maintain_order=True).join(
        comparison.select("accelerator_id", "stack_comparison"), on="accelerator_id"
    )
    if "disaggregated" in candidates.columns:  # split pools are weighed against shared replicas on any stack
        shared = pl.when(pl.col("disaggregated")).then(pl.col("chips_without_disaggregation")).otherwise("chips")
        split = pl.when(pl.col("disaggregated")).then(pl.col("chips")).otherwise("disaggregated_chips")
        fewest = ranked.filter("_served").group_by("accelerator_id").agg(shared.min().alias("_shared"))
        fewest_split = ranked.group_by("accelerator_id").agg(split.min().alias("_split"))
        chosen = (
            chosen.join(fewest, on="accelerator_id", how="left")
            .join(fewest_split, on="accelerator_id", how="left")
            .with_columns(
                chips_without_disaggregation=pl.when(pl.col("disaggregated")).then(
                    pl.min_horizontal("chips_without_disaggregation", "_shared")
                ),
                disaggregated_chips=pl.when(~pl.col("disaggregated")).then("_split"),
            )
            .drop("_shared", "_split")
        )
    return chosen.drop("_served", "_chosen")


def _best_on_stack(reps: pl.DataFrame, s: ServeScenario) -> pl.DataFrame:
    """:func:`best_configs` for the replicas ``reps`` of one stack per accelerator."""
    curve = replica.per_engine(reps, lambda part, sched: replica.load_curve(part, s, sched))
    coarse = replica.limits(curve)
    lim = replica.per_engine(reps, lambda part, sched: replica.refined_limits(part, s, sched, coarse))
    demand_rps = s.output_tokens_per_s / s.output_tokens
    frame = (
        reps.join(lim, on=KEYS)
        .with_columns(
            capacity_within_targets_rps=pl.col("max_load_fraction") * pl.col("capacity_rps"),
        )
        .with_columns(
            replicas=(demand_rps / (s.headroom * pl.col("capacity_within_targets_rps")))
            .ceil()
            .clip(lower_bound=1)
            .cast(pl.Int64),
        )
        .with_columns(chips=pl.col("replicas") * pl.col("tensor_parallel"))
    )
    summary = (
        frame.group_by("accelerator_id")
        .agg(
            pl.col("any_fits").any(),
            pl.col("any_tpot").any(),
            pl.col("any_ok").any(),
            pl.col("tensor_parallel").max().alias("max_tensor_parallel"),
            pl.col("tensor_parallel").filter(pl.col("any_fits")).min().alias("min_fitting_tensor_parallel"),
        )
        .join(
            # the fastest a replica that holds the model goes: one that does not fit is no evidence of speed
            curve.group_by("accelerator_id").agg(
                pl.col("tpot_ms").filter(pl.col("fits_in_memory")).min().alias("best_tpot_ms")
            ),
            on="accelerator_id",
        )
    )
    ok = frame.filter(pl.col("max_load_fraction").is_not_null()).with_columns(
        capacity_per_chip=pl.col("capacity_within_targets_rps") / pl.col("tensor_parallel")
    )
    best = replica.fewest_chips_first(ok, "chips", "capacity_per_chip").unique(
        "accelerator_id", keep="first", maintain_order=True
    )
    # Infeasible accelerators keep their largest replica, read at the lightest load, so the table shows its memory
    # with the weights and about one sequence's KV cache (what the reason weighs), not a cache no replica could hold.
    fallback = frame.sort("tensor_parallel", descending=True).unique("accelerator_id", keep="first")
    chosen = pl.concat(
        [best.drop("capacity_per_chip"), fallback.join(best.select("accelerator_id"), on="accelerator_id", how="anti")]
    )
    actual = demand_rps / pl.col("replicas") / pl.col("capacity_rps")
    rho = (
        pl.when(pl.col("max_load_fraction").is_null())
        .then(replica.LOAD_GRID[0])
        .when(actual < 1)
        .then(actual)
        .otherwise(replica.LOAD_GRID[-1])
    )
    # Each configuration read at the traffic's load and at the load of the fleet its latency targets would need were
    # they looser (what_targets_cost), in one pass.
    # read at the first load of the refined grid at or above it: the limit the looser targets give is found on that
    # grid (replica.refined_limits), so latencies read in between would allow the fleet a hair less than it needs
    fine = (replica.LOAD_GRID[1] - replica.LOAD_GRID[0]) / replica.REFINE_STEPS
    needed = demand_rps / (_relaxed_replicas(s, demand_rps) * s.headroom * pl.col("capacity_rps"))
    relaxed_rho = pl.min_horizontal((needed / fine).ceil() * fine, replica.LOAD_GRID[-1])
    readings = pl.concat(
        [chosen.with_columns(_rho=rho, _at_headroom=False), chosen.with_columns(_rho=relaxed_rho, _at_headroom=True)]
    )
    both = replica.per_engine(readings, lambda part, sched: replica.at_load(part, s, pl.col("_rho"), sched))
    at = (
        both.filter(~pl.col("_at_headroom"))
        .drop("_rho", "_at_headroom")
        .with_columns(
            utilisation=pl.col("requests_per_s_per_replica") / pl.col("capacity_within_targets_rps"),
            chip_seconds_per_request=pl.col("tensor_parallel") / pl.col("capacity_within_targets_rps"),
            disaggregated=pl.lit(False),
        )
    )
    if s.disaggregation:
        at = disaggregated.cheaper(at, disaggregated.best_pools(reps, s, demand_rps))
    else:
        at = at.with_columns(pl.lit(None).alias(c) for c in disaggregated.PREFILL_COLUMNS)
    relaxed = what_targets_cost(both.filter(pl.col("_at_headroom")), s, demand_rps)
    return (
        at.join(relaxed, on=KEYS, how="left")
        .with_columns(pl.when(~pl.col("disaggregated")).then(pl.col(c)).alias(c) for c in RELAXED_COLUMNS)
        .join(summary, on="accelerator_id")
        .with_columns(serve_reason=pl.when(pl.col("disaggregated")).then(None).otherwise(_why_not(s)))
    )


# What the latency targets cost a configuration they hold below the headroom target (null where they do not).
RELAXED_COLUMNS = ["relaxed_ttft_ms", "relaxed_tpot_ms", "relaxed_targets", "relaxed_chips"]
# Looser targets are offered up to this multiple of the user's: beyond, the option serves another use (a batch job,
# not a chat), and saying what it would need is noise.
LOOSER_AT_MOST = 10.0


def _round_up(value: pl.Expr) -> pl.Expr:
    """``value`` rounded up to two significant figures (7,175 -> 7,200), so a target set to it is met."""
    scale = pl.lit(10.0).pow(value.log10().floor() - 1)
    return (value / scale).ceil() * scale


def _milliseconds(value: pl.Expr) -> pl.Expr:
    """Two significant figures as text: 7,200; 65; 7.5."""
    return pl.when(value >= 10).then(grouped(value)).otherwise(value.round(1).cast(pl.String))


def _relaxed_replicas(s: ServeScenario, demand_rps: float) -> pl.Expr:
    """Replicas a configuration needs where its latency targets allow it the headroom target's load: sized, as every
    answer is, to run at the headroom target of that load (the headroom's share of the headroom load)."""
    return (demand_rps / (s.headroom * s.headroom * pl.col("capacity_rps"))).ceil().clip(lower_bound=1)


def what_targets_cost(at: pl.DataFrame, s: ServeScenario, demand_rps: float) -> pl.DataFrame:
    """Per configuration of ``at`` that a latency target holds below the headroom target (or that meets the targets
    at no load), read at the load its replicas would carry were the targets no tighter than its latencies at the
    headroom target's load (:func:`_relaxed_replicas` of them, ``relaxed_chips``): its p99 latencies there, rounded
    up, where they exceed their targets (``relaxed_ttft_ms``, ``relaxed_tpot_ms``, in words ``relaxed_targets``):
    the loosest targets that fleet needs, what the user's cost. Read at the headroom load instead, they overstated
    the loosening 2.5-4x (70B on H100, a 4 ms per-token target: 37 ms said, where 8.6 ms gets the same 8 chips).
    Null where the replica runs at the headroom anyway or could not (memory, the step's token budget): then no
    latency target is the limit. Targets at least that loose need at most ``relaxed_chips``."""
    targets = (("ttft_ms", s.ttft_ms), ("tpot_ms", s.tpot_ms))
    over = {column: pl.col(column) > target if target else pl.lit(False) for column, target in targets}
    near = pl.all_horizontal(pl.col(column) <= LOOSER_AT_MOST * target for column, target in targets if target)
    held = pl.col("max_load_fraction").is_null() | (pl.col("max_load_fraction") < s.headroom)
    fits = pl.col("fits_in_memory") & pl.col("within_token_budget")
    relaxed = held & fits & near & (over["ttft_ms"] | over["tpot_ms"])
    words = {
        "ttft_ms": pl.format("{} ms to the first token", _milliseconds(pl.col("relaxed_ttft_ms"))),
        "tpot_ms": pl.format("{} ms per token", _milliseconds(pl.col("relaxed_tpot_ms"))),
    }
    return (
        at.with_columns(
            relaxed_ttft_ms=pl.when(relaxed & over["ttft_ms"]).then(_round_up(pl.col("ttft_ms"))),
            relaxed_tpot_ms=pl.when(relaxed & over["tpot_ms"]).then(_round_up(pl.col("tpot_ms"))),
            relaxed_chips=pl.when(relaxed).then(
                _relaxed_replicas(s, demand_rps).cast(pl.Int64) * pl.col("tensor_parallel")
            ),
        )
        .with_columns(  # the loosened targets in words (a null one's words are null and left out)
            relaxed_targets=pl.when(pl.col("relaxed_chips").is_not_null()).then(
                pl.format("{} at p99", pl.concat_str(list(words.values()), separator=" and ", ignore_nulls=True))
            )
        )
        .select(*KEYS, *RELAXED_COLUMNS)
    )


SERVE_COLUMNS = [
    "accelerator_id",
    "name",
    "kind",
    "family",
    "vendor",
    "cloud",
    "pricing_model",
    "feasible",
    "infeasible_reason",
    "stack",
    "stack_name",
    "stack_round",
    "stack_note",
    "layer_overhead_s",
    "overhead_basis",
    "stack_comparison",
    "stack_excluded",
    "engine",
    "max_tokens_per_step",
    "max_seqs",
    "chunked_prefill",
    "schedule_ahead",
    "engine_source",
    "tensor_parallel",
    "pipeline_parallel",
    "layout",
    "disaggregated",
    "moe",
    *disaggregated.PREFILL_COLUMNS,
    "over_pcie",
    "scaleout_bytes_per_s",
    "allreduce_efficiency",
    "allreduce_latency_us",
    "matmul_precision",
    "fp4_factor",
    "fp4_fraction",
    "fp4_basis",
    "sustained_compute_factor",
    "sustained_compute_basis",
    "sequences",
    "chips_per_replica",
    "replicas",
    "chips",
    "capacity_max_chips",  # what the cloud rents at once under this pricing without a reservation (null: no ceiling)
    "on_demand_cloud",  # the chip's cheapest on-demand cloud and price, to weigh a commitment against
    "on_demand_usd_per_chip_hour",
    "capacity_basis",
    "tokens_per_s_per_chip",
    "tokens_per_s_per_replica",
    "capacity_tokens_per_s_per_replica",
    "utilisation",
    "headroom",
    "load_fraction",
    "limit",
    "limit_cause",
    "cache_bound",
    "recomputed_tokens_per_request",  # a full cache that preempts: prompt tokens a request has prefilled again
    "ttft_ms",
    "tpot_ms",
    "ttft_mean_ms",
    "tpot_mean_ms",
    "prefill_tail_ms",  # the 99th-percentile prompt's prefill alone, on an idle replica
    *RELAXED_COLUMNS,
    "memory_per_chip_gb",
    "weights_gb",
    "kv_cache_gb",
    "overhead_gb",
    "hbm_gb",
    "memory_room_gb",  # beside the weights and the engine's runtime (replica.memory_room_gb)
    "fits_in_memory",
    "usd_per_chip_hour",  # the cheapest quote that can hold a replica (Catalog.priced)
    "usd_per_chip_hour_typical",  # the median quote
    "region",
    "instance_type",
    "chips_per_instance",
    "rented_chips",  # the fleet's chips in whole instances: what is billed
    "chips_needed",  # the chips the traffic needs (a fleet runs on all it rents: _on_rented_chips)
    "rent_unit",  # the chips rented at a time (an instance rented whole; 1 where billed per chip)
    "usd_per_hour",
    "usd_per_month",
    "usd_per_month_low",
    "usd_per_month_high",
    "usd_per_million_tokens",
    "usd_per_million_tokens_low",
    "usd_per_million_tokens_high",
    "usd_per_million_tokens_at_ceiling",
    "model_error_low",
    "model_error_high",
    "model_error_results",
    "model_error_scope",
    "kwh_per_million_tokens",
    "price_rows",
    "price_as_of",
    "price_age_years",  # how much older the quote is than the newest in the data
    "price_secondary_source",
    "user_price",
]


# What an accelerator that cannot serve within the targets has no figure for: its row is its largest replica with
# about one sequence in flight (its memory), and a latency, a load or a cost there would read as an answer.
UNSERVED_NULL_COLUMNS = [
    "ttft_ms",
    "tpot_ms",
    "ttft_mean_ms",
    "tpot_mean_ms",
    "prefill_tail_ms",
    "load_fraction",
    "utilisation",
    "sequences",
    "tokens_per_s_per_chip",
    "tokens_per_s_per_replica",
    "capacity_tokens_per_s_per_replica",
    "usd_per_million_tokens_at_ceiling",
]


def _rented_at_error(error: pl.Expr) -> pl.Expr:
    """The chips an option would rent were its throughput exp(-``error``) of the model's (a bound of the model's
    held-out error): the chips its traffic needs, scaled, in whole replicas (chips one at a time for split pools,
    whose two kinds of replica differ) as the card's range line counts them, then in whole rented units. A fleet
    that rents whole instances with room to spare keeps its bill where the error only fills that room: 2 H100s'
    worth of traffic on one p5.48xlarge needs 3 at 1.5x the error and still rents the 8."""
    per = pl.when(pl.col("disaggregated")).then(pl.lit(1)).otherwise(pl.col("chips_per_replica"))
    chips = per * (pl.col("chips_needed") / per * error.exp()).round().clip(lower_bound=1)
    unit = pl.col("rent_unit").fill_null(1)
    return (chips / unit).ceil() * unit


def evaluate_serving(
    s: ServeScenario, catalog: Catalog | None = None, efficiency: ServingEfficiency | None = None
) -> pl.DataFrame:
    """Every (accelerator, cloud, pricing) serving option; feasible ones cheapest first."""
    cat = catalog or catalog_mod.load()
    eff = efficiency or calibrate(cat)
    demand = s.output_tokens_per_s
    frame = best_configs(cat, s, eff).with_columns(
        chips_per_replica=pl.col("tensor_parallel"),
        layout=replica.layout(),
        capacity_tokens_per_s_per_replica=pl.col("capacity_within_targets_rps") * s.output_tokens,
        headroom=pl.lit(s.headroom),
        moe=pl.lit(s.model.is_moe),  # its cost range takes mixture-of-experts results
    )
    tokens_per_hour = demand * SECONDS_PER_HOUR / 1e6  # millions of output tokens served per hour
    # The ranges: the price spread, and the chips the model's held-out throughput error would add or save
    # (:mod:`workbook.serving.band`), rented as the option rents them.
    rented = pl.col("rented_chips")
    low = _rented_at_error(pl.col("model_error_low")) * pl.col("usd_per_chip_hour_low")
    high = _rented_at_error(pl.col("model_error_high")) * pl.col("usd_per_chip_hour_high")
    priced = _priced(cat, s, frame.join(cat.price_summary(s.pricing, s.clouds), on="accelerator_id", how="left"))
    frame = (
        _on_rented_chips(priced, s)
        .join(_other_prices(cat, s), on="accelerator_id", how="left")
        .join(throughput_band(cat).for_options(frame), on=["stack", "accelerator_id", *KINDS], how="left")
        .with_columns(
            usd_per_hour=rented * pl.col("usd_per_chip_hour"),
            usd_per_month=rented * pl.col("usd_per_chip_hour") * HOURS_PER_MONTH,
            usd_per_month_low=low * HOURS_PER_MONTH,
            usd_per_month_high=high * HOURS_PER_MONTH,
            usd_per_million_tokens=rented * pl.col("usd_per_chip_hour") / tokens_per_hour,
            usd_per_million_tokens_low=low / tokens_per_hour,
            usd_per_million_tokens_high=high / tokens_per_hour,
            usd_per_million_tokens_at_ceiling=pl.col("chip_seconds_per_request")
            / s.headroom
            * pl.col("usd_per_chip_hour")
            * rented
            / pl.col("chips")
            / SECONDS_PER_HOUR
            * 1e6
            / s.output_tokens,
            kwh_per_million_tokens=cost.energy_kwh(
                pl.col("chips"), pl.col("watts"), 1.0, s.assumptions.host_power_factor, s.assumptions.pue
            )
            / tokens_per_hour,
            hbm_gb=pl.col("hbm_bytes") / 1e9,
            memory_room_gb=replica.memory_room_gb(),
            prefill_tail_ms=pl.col("prefill_tail_s") * 1000,
        )
    )
    # A fleet is rented like a training job: no more chips on one cloud under one pricing model than it rents at once
    # without a reservation (data/capacity.csv).
    frame = cat.capacity_for(frame.with_columns(pricing_model=pl.col("pricing_model").fill_null(s.pricing[0])))
    too_many, over = catalog_mod.over_capacity(pl.col("chips"))
    # Where a latency target is what makes the fleet so large, the targets that would not (what_targets_cost).
    looser = pl.when(pl.col("relaxed_chips").is_not_null()).then(
        pl.format(
            "; allowing {}, what replicas of {} give at the load that many would carry, at most {} would serve it",
            "relaxed_targets",
            counted(pl.col("tensor_parallel"), "chip"),
            counted(pl.col("relaxed_chips"), "chip"),
        )
    )
    reason = (
        pl.when(pl.col("serve_reason").is_not_null())
        .then(pl.concat_str("serve_reason", looser, ignore_nulls=True))
        .when(pl.col("usd_per_chip_hour").is_null())
        .then(
            pl.concat_str(
                pl.lit(f"no {' / '.join(s.pricing)} price in the dataset"),
                pl.format("; it has {} prices: choose one of those, or give your own", "other_pricing"),
                ignore_nulls=True,
            )
        )
        .when(too_many)
        .then(pl.concat_str(over, looser, ignore_nulls=True))
        .otherwise(None)
    )
    frame = frame.with_columns(infeasible_reason=reason).with_columns(
        pl.when(pl.col("serve_reason").is_null()).then(pl.col(c)).alias(c) for c in UNSERVED_NULL_COLUMNS
    )
    return (
        frame.with_columns(feasible=pl.col("infeasible_reason").is_null())
        .select(SERVE_COLUMNS)
        .sort(  # ties (the same price on two clouds) in a fixed order: by accelerator, then cloud
            ["feasible", "usd_per_million_tokens", "accelerator_id", "cloud", "pricing_model"],
            descending=[True, False, False, False, False],
            nulls_last=True,
        )
    )


def _priced(cat: Catalog, s: ServeScenario, frame: pl.DataFrame) -> pl.DataFrame:
    """Each option's price as a training job's (:meth:`workbook.catalog.Catalog.priced`): the cheapest region and
    instance that can hold a replica (its chips, up to a node; of a split fleet, its larger pool's), rented whole,
    the fleet's chips packed into instances (``rented_chips``: 3 replicas of 2 H100s on p5.48xlarge rent 8)."""
    replica_chips = pl.max_horizontal("tensor_parallel", "prefill_chips_per_replica")  # a split fleet's larger pool
    replicas = frame.with_columns(_node="block_chips", block_chips=pl.min_horizontal(replica_chips, "block_chips"))
    return cat.priced(replicas, s.pricing, s.clouds).with_columns(block_chips="_node").drop("_node")


def _on_rented_chips(frame: pl.DataFrame, s: ServeScenario) -> pl.DataFrame:
    """A fleet whose instances, rented whole, hold whole replicas more than its traffic needs runs on all of them:
    they are billed either way, and more replicas carry less load each (3 replicas of 2 H100s on one p5.48xlarge run
    as 4). Its replicas are read afresh at that load; ``chips_needed`` keeps the count the traffic needs. A split
    fleet's two pools stay as sized."""
    frame = frame.with_columns(chips_needed=pl.col("chips")).with_row_index("_row")
    spare = (
        ~pl.col("disaggregated")
        & pl.col("serve_reason").is_null()
        & pl.col("max_load_fraction").is_not_null()
        & (pl.col("rented_chips") >= pl.col("chips") + pl.col("tensor_parallel"))
    ).fill_null(False)  # unpriced: nothing rented
    more = frame.filter(spare).with_columns(replicas=pl.col("rented_chips") // pl.col("tensor_parallel"))
    if more.height == 0:
        return frame.drop("_row")
    demand_rps = s.output_tokens_per_s / s.output_tokens
    rho = demand_rps / pl.col("replicas") / pl.col("capacity_rps")
    read = replica.per_engine(more, lambda part, sched: replica.at_load(part, s, rho, sched)).with_columns(
        chips=pl.col("replicas") * pl.col("tensor_parallel"),
        utilisation=pl.col("requests_per_s_per_replica") / pl.col("capacity_within_targets_rps"),
    )
    return pl.concat([frame.filter(~spare), read.select(frame.columns)]).sort("_row").drop("_row")


def _other_prices(cat: Catalog, s: ServeScenario) -> pl.DataFrame:
    """Per accelerator, what a price outside the scenario's pricing models offers: the models the dataset prices it
    under (``other_pricing``, in words: a chip with no price of the scenario's may have one of another), and its
    cheapest on-demand price per chip-hour (the cheapest quote of the cheapest cloud: ``on_demand_cloud``,
    ``on_demand_usd_per_chip_hour``), to weigh a commitment, itself priced at its cheapest quote, against."""
    others = [model for model in PRICING_MODELS if model not in s.pricing]
    priced = (
        cat.price_summary(tuple(others), s.clouds)
        .group_by("accelerator_id")
        .agg(pl.col("pricing_model").unique().sort().str.join(", ").alias("other_pricing"))
    )
    on_demand = (
        cat.price_summary(("on-demand",), s.clouds)
        .sort("usd_per_chip_hour_low", "cloud")
        .group_by("accelerator_id", maintain_order=True)
        .agg(
            pl.col("cloud").first().alias("on_demand_cloud"),
            pl.col("usd_per_chip_hour_low").first().alias("on_demand_usd_per_chip_hour"),
        )
    )
    return priced.join(on_demand, on="accelerator_id", how="full", coalesce=True)


def batch_curve(
    s: ServeScenario, picks: pl.DataFrame, catalog: Catalog | None = None, efficiency: ServingEfficiency | None = None
) -> pl.DataFrame:
    """Throughput vs time per token as the load on one replica grows, at each pick's tensor-parallel degree. A
    disaggregated pick (``picks`` from :func:`evaluate_serving`) is drawn as its decode replica, its output tokens
    shared with the prefill chips its requests need (:func:`_split_curve`)."""
    cat = catalog or catalog_mod.load()
    split = picks.filter(pl.col("disaggregated")) if "disaggregated" in picks.columns else picks.clear()
    eff = efficiency or calibrate(cat)
    ranks = _accelerators(cat, s, eff)["stack_rank"].unique().sort()
    chosen = picks.select(*KEYS, "stack").unique()
    reps = pl.concat([_replicas(cat, s, eff, rank).join(chosen, on=[*KEYS, "stack"]) for rank in ranks])
    shared = replica.per_engine(
        reps.join(split.select(KEYS), on=KEYS, how="anti"), lambda p, e: replica.load_curve(p, s, e)
    )
    curves = [shared.with_columns(_split=pl.lit(False))]
    if split.height:
        curves.append(_split_curve(reps, split, s).with_columns(_split=pl.lit(True)))
    return (
        pl.concat(curves, how="diagonal_relaxed")
        .filter(pl.col("fits_in_memory"))
        .select(
            "accelerator_id",
            "name",
            "tensor_parallel",
            pl.when(pl.col("_split"))
            .then(pl.format("decode {}, prefill apart", replica.layout()))
            .otherwise(replica.layout())
            .alias("layout"),
            "load_fraction",
            "tpot_ms",
            "ttft_ms",
            "tokens_per_s_per_chip",
        )
    )


def _split_curve(reps: pl.DataFrame, split: pl.DataFrame, s: ServeScenario) -> pl.DataFrame:
    """The decode replicas of the disaggregated picks ``split`` over the load grid, their output tokens per chip
    counting the prefill chips their requests need at the prefill pool's limit: lambda O / (t + lambda c), with c
    the pick's ``prefill_chip_seconds_per_request``."""
    c = pl.col("prefill_chip_seconds_per_request")
    return (
        disaggregated.decode_curve(disaggregated.decode_replicas(reps.join(split.select(KEYS), on=KEYS)), s)
        .join(split.select(*KEYS, c), on=KEYS)
        .with_columns(
            tokens_per_s_per_chip=pl.col("tokens_per_s_per_replica")
            / (pl.col("tensor_parallel") + pl.col("requests_per_s_per_replica") * c),
            ttft_ms=pl.lit(None, dtype=pl.Float64),  # the prefill pool emits the first token
        )
    )
