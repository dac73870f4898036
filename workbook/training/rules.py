"""Why an option cannot be used: an ordered list of named rules over the options frame.

Each rule has a stable ``code`` (tests and code match codes, never the English), a condition (a polars
expression over the options frame) and a plain-words reason. The first rule that holds decides an option's
``infeasible_code`` and ``infeasible_reason``; an option no rule rejects is feasible. A new rule is one
entry in :func:`rules_for` (and, if it needs a new input, that input in the scenario).
"""

from __future__ import annotations

import dataclasses

import polars as pl

from workbook.catalog import over_capacity
from workbook.model import cost
from workbook.present import grouped
from workbook.training.scenario import Scenario

# Precisions with no production training stack outside TPUs: MLPerf INT8 training results are TPU v5e/v5p/v6e
# with AQT (mlcommons/training_results_v3.1-v4.1, Google); no GPU or Trainium INT8 training stack is published.
NO_STACK_PRECISIONS = ("int8",)


@dataclasses.dataclass(frozen=True)
class Rule:
    code: str
    condition: pl.Expr  # true where the option is ruled out
    reason: pl.Expr  # plain words, may quote the option's numbers


def rules_for(s: Scenario) -> list[Rule]:
    """The rules for ``s``, in the order they are checked (hardware and data first, the user's limits last)."""
    c = s.constraints
    checks = [
        Rule(
            "no_training_stack",
            pl.lit(s.precision in NO_STACK_PRECISIONS) & (pl.col("kind") != "tpu"),
            pl.format(
                "{} training has no production stack on {} (INT8 training runs only on TPUs, via AQT); use BF16 or FP8",
                pl.lit(s.precision.upper()),
                pl.col("name"),
            ),
        ),
        Rule(
            "no_precision",
            pl.col("peak_flops_per_s").is_null(),
            pl.format("{} has no {} support", pl.col("name"), pl.lit(s.precision.upper())),
        ),
        Rule(
            "framework_unsupported",
            pl.col("support") == "unsupported",
            pl.format("{} training is not supported on {}", pl.lit(s.framework), pl.col("kind")),
        ),
        Rule(
            "no_mfu",
            pl.col("mfu_base").is_null() & pl.lit(s.assumptions.mfu_override is None),
            pl.format("no calibrated {} MFU for {} (set an MFU override)", pl.lit(s.precision.upper()), pl.col("name")),
        ),
        Rule(
            "no_price",
            pl.col("price_rows").is_null(),
            pl.format(
                "no {} price for {}{} in the dataset",
                pl.lit(" / ".join(s.pricing)),
                pl.col("name"),
                pl.lit(f" on {' / '.join(s.constraints.clouds)}" if s.constraints.clouds else ""),
            ),
        ),
        Rule(
            "no_instance",
            pl.col("usd_per_chip_hour").is_null(),
            pl.format(
                "no {} quote on {} for an instance that can run {} chips (only smaller instances are listed)",
                pl.col("pricing_model"),
                pl.col("cloud"),
                grouped(pl.col("chips")),
            ),
        ),
        Rule(
            "no_fit_any_count",
            pl.col("min_chips_to_fit").is_null(),
            pl.lit("does not fit in memory at any chip count (activations alone exceed HBM)"),
        ),
        Rule(
            "batch_too_small",
            pl.col("chips") > pl.col("max_chips_for_batch"),
            pl.format(
                "the global batch of {}M tokens keeps at most {} chips busy (data parallel x sequence <= batch); "
                "raise the global batch or use fewer chips",
                (pl.col("global_batch_tokens") / 1e6).round(1),
                grouped(pl.col("max_chips_for_batch")),
            ),
        ),
        Rule(
            "over_max_job",
            pl.max_horizontal("chips", "min_chips_to_fit") > pl.col("max_job_chips"),
            pl.format(
                "needs {} chips; the largest documented single job on {} is {} ({})",
                grouped(pl.max_horizontal("chips", "min_chips_to_fit")),
                pl.col("name"),
                grouped(pl.col("max_job_chips")),
                pl.col("max_job_note"),
            ),
        ),
        Rule(
            "spot_at_scale",
            (pl.col("pricing_model") == "spot")
            & (pl.col("chips") >= cost.SPOT_PRACTICAL_MAX_CHIPS)
            & (pl.col("train_days") >= cost.SPOT_LONG_JOB_DAYS),
            pl.format(
                "spot at {} chips for {} days is unavailable in practice: no cloud holds that much spot capacity "
                "for weeks, and each node loss stops every chip (+{}% time lost to preemptions at this size)",
                grouped(pl.col("chips")),
                pl.col("train_days").round(0),
                (pl.col("preemption_overhead") * 100).round(0),
            ),
        ),
        Rule("over_capacity", *over_capacity(pl.max_horizontal("chips", "min_chips_to_fit"))),
        Rule(
            "no_fit",
            pl.col("chips") < pl.col("min_chips_to_fit"),
            pl.format("does not fit in memory: needs at least {} chips", grouped(pl.col("min_chips_to_fit"))),
        ),
        Rule(
            "no_layout",
            pl.col("tensor_parallel").is_null(),
            pl.format(
                "no tensor x pipeline x context x data layout divides {} chips within the global batch",
                grouped(pl.col("chips")),
            ),
        ),
        Rule(
            "no_fit_layout",
            ~pl.col("fits_in_memory"),
            pl.format("does not fit in memory at {} chips with any parallel layout", grouped(pl.col("chips"))),
        ),
        Rule(
            "capacity_block_too_long",
            (pl.col("pricing_model") == "capacity-block") & (pl.col("train_days") > cost.CAPACITY_BLOCK_MAX_DAYS),
            pl.lit(f"capacity blocks last at most {cost.CAPACITY_BLOCK_MAX_DAYS} days"),
        ),
    ]
    if c.multi_cloud:
        checks.append(
            Rule(
                "single_cloud",
                pl.col("clouds_offering").fill_null(0) < 2,
                pl.lit("offered by only one cloud (multi-cloud required)"),
            )
        )
    deadline = pl.col("deadline_days")
    deadline_words = (
        pl.when(deadline == deadline.floor())
        .then(deadline.cast(pl.Int64).cast(pl.String))
        .otherwise(deadline.round(1).cast(pl.String))
    )
    checks.append(
        Rule(
            "porting_past_deadline",
            pl.col("start_delay_days") >= deadline,
            pl.format(
                "porting alone takes about {} days ({} engineer-weeks), past the {}-day deadline",
                pl.col("start_delay_days").round(0),
                pl.col("migration_weeks").round(1),
                deadline_words,
            ),
        )
    )
    limit = pl.when(pl.col("chips_capped")).then(pl.format(" (the most: {})", pl.col("chips_limited_by")))
    porting = pl.when(pl.col("start_delay_days") > 0).then(
        pl.format(" including {} days of porting", pl.col("start_delay_days").round(1))
    )
    checks.append(
        Rule(
            "past_deadline",  # the finish counts: porting before training as well as the training itself
            pl.col("finish_days") > deadline,
            pl.format(
                "finishes in {} days{}: {} days of training on {} chips{}, past the {}-day deadline",
                pl.col("finish_days").round(1),
                porting.otherwise(pl.lit("")),
                pl.col("train_days").round(1),
                grouped(pl.col("chips")),
                limit.otherwise(pl.lit("")),
                deadline_words,
            ),
        )
    )
    checks.append(
        Rule(
            "over_budget",
            pl.col("cost_usd") > pl.col("budget_usd"),
            pl.format(
                "costs ${}M, over the ${}M budget",
                (pl.col("cost_usd") / 1e6).round(2),
                (pl.col("budget_usd") / 1e6).round(2),
            ),
        )
    )
    return checks


def first_failing(checks: list[Rule]) -> dict[str, pl.Expr]:
    """``infeasible_code`` and ``infeasible_reason`` of the first rule that holds (null when none does)."""
    code, reason = pl.lit(None, pl.String), pl.lit(None, pl.String)
    for rule in reversed(checks):
        hit = rule.condition.fill_null(False)
        code = pl.when(hit).then(pl.lit(rule.code)).otherwise(code)
        reason = pl.when(hit).then(rule.reason).otherwise(reason)
    return {"infeasible_code": code, "infeasible_reason": reason}
