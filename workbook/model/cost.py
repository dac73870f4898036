"""Cost, energy and emissions of a training run.

* compute cost = billed chip-hours x USD per chip-hour;
* spot: synchronous training stops whenever any node is reclaimed, so the time lost grows with the nodes in
  the job: overhead = base (capacity waits, checkpoint writes) + nodes x interruptions per node-hour x hours lost
  per interruption (half a checkpoint interval plus the restart); at thousands of chips this is past practical;
* a commitment bills every hour of its term (1 or 3 years) whether used or not (docs/data-sources.md): the bill is the
  whole term, or as many whole terms as a longer run needs; the amortised figure is what the run's own chip-hours
  cost at the committed rate, which is what it costs only if the rest of the (last) term is used by other work;
* energy (kWh) = chips x accelerator watts x host power factor x hours / 1000 x PUE;
* CO2e (kg) = kWh x grid intensity.
"""

import polars as pl

from workbook.model.units import HOURS_PER_MONTH

TERM_MONTHS = {"commit-1y": 12, "commit-3y": 36}
CAPACITY_BLOCK_MAX_DAYS = 182  # AWS EC2 Capacity Blocks for ML: 1 to 182 days
# ... bought "in 1-day increments up to 14 days, and in 7-day increments up to 182 days" (EC2 API reference,
# DescribeCapacityBlockOfferings, CapacityDurationHours), paid up front: a run is billed the block that covers it.
CAPACITY_BLOCK_DAILY_UP_TO_DAYS = 14
CAPACITY_BLOCK_WEEKLY_STEP_DAYS = 7
# Spot at scale: beyond these a long synchronous job on spot is not a plan (no cloud documents spot capacity of
# thousands of accelerators held for weeks; each node loss stops every chip). Judgement, stated in the reason.
SPOT_PRACTICAL_MAX_CHIPS = 1024
SPOT_LONG_JOB_DAYS = 7


def preemption_overhead(chips, node_chips, base, interruptions_per_node_month, hours_lost_per_interruption):
    """Extra wall time on spot as a fraction of the uninterrupted run; grows with the number of nodes."""
    nodes = chips / node_chips
    return base + nodes * interruptions_per_node_month / HOURS_PER_MONTH * hours_lost_per_interruption


def wall_hours_with_preemption(wall_hours: pl.Expr, pricing_model: pl.Expr, spot_overhead) -> pl.Expr:
    """Spot runs take longer: work lost between checkpoints and restarts add ``spot_overhead`` (a number or an
    expression, see :func:`preemption_overhead`)."""
    return pl.when(pricing_model == "spot").then(wall_hours * (1 + spot_overhead)).otherwise(wall_hours)


def term_months(pricing_model: pl.Expr) -> pl.Expr:
    """Months a commitment bills (null for pay-as-you-go pricing)."""
    return pricing_model.replace_strict(TERM_MONTHS, default=None, return_dtype=pl.Int64)


def capacity_block_hours(wall_hours: pl.Expr) -> pl.Expr:
    """Hours of the shortest capacity block that covers a run: whole days up to 14, whole weeks beyond
    (:data:`CAPACITY_BLOCK_DAILY_UP_TO_DAYS`): 37.6 days buy a 42-day block."""
    days = wall_hours / 24
    step = (
        pl.when(days <= CAPACITY_BLOCK_DAILY_UP_TO_DAYS)
        .then(pl.lit(1.0))
        .otherwise(float(CAPACITY_BLOCK_WEEKLY_STEP_DAYS))
    )
    return (days / step).ceil().clip(1) * step * 24


def billed_chip_hours(chips: pl.Expr, wall_hours: pl.Expr, pricing_model: pl.Expr) -> pl.Expr:
    """Chip-hours the cloud bills: the run's hours; for a commitment its whole term, or as many whole terms as the
    run needs when it outlasts one (a commitment is bought in terms, not by the hour); for a capacity block the
    block that covers the run (:func:`capacity_block_hours`)."""
    term = term_months(pricing_model).cast(pl.Float64) * HOURS_PER_MONTH
    hours = (
        pl.when(pricing_model == "capacity-block")
        .then(capacity_block_hours(wall_hours))
        .when(term.is_null())
        .then(wall_hours)
        .otherwise((wall_hours / term).ceil().clip(1) * term)
    )
    return chips * hours


def energy_kwh(chips, watts, hours, host_power_factor, pue):
    """Facility energy in kWh."""
    return chips * watts * host_power_factor * hours / 1000 * pue


def co2e_kg(kwh, grid_kg_co2e_per_kwh):
    """Operational emissions in kg CO2e."""
    return kwh * grid_kg_co2e_per_kwh
