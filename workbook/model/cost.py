"""Cost, energy and emissions of a training run.

* compute cost = billed chip-hours x USD per chip-hour; on spot, chip-hours grow by the preemption
  overhead (work lost between checkpoints plus restart time); a commitment bills every hour of its
  term (1 or 3 years) whether used or not (docs/data-sources.md), so a short run on a commitment pays the term
  unless the capacity is reused, which this model does not assume;
* energy (kWh) = chips x accelerator watts x host power factor x hours / 1000 x PUE;
* CO2e (kg) = kWh x grid intensity.
"""

import polars as pl

from workbook.model.units import HOURS_PER_YEAR

TERM_HOURS = {"commit-1y": HOURS_PER_YEAR, "commit-3y": 3 * HOURS_PER_YEAR}
CAPACITY_BLOCK_MAX_DAYS = 182  # AWS EC2 Capacity Blocks for ML: 1 to 182 days


def wall_hours_with_preemption(wall_hours: pl.Expr, pricing_model: pl.Expr, spot_overhead: float) -> pl.Expr:
    """Spot runs take longer: work lost between checkpoints and restarts add ``spot_overhead``."""
    return pl.when(pricing_model == "spot").then(wall_hours * (1 + spot_overhead)).otherwise(wall_hours)


def billed_chip_hours(chips: pl.Expr, wall_hours: pl.Expr, pricing_model: pl.Expr) -> pl.Expr:
    """Chip-hours the cloud bills: the run's hours, or the whole term for a commitment."""
    term = pricing_model.replace_strict(TERM_HOURS, default=0.0, return_dtype=pl.Float64)
    return chips * pl.max_horizontal(wall_hours, term)


def energy_kwh(chips, watts, hours, host_power_factor, pue):
    """Facility energy in kWh."""
    return chips * watts * host_power_factor * hours / 1000 * pue


def co2e_kg(kwh, grid_kg_co2e_per_kwh):
    """Operational emissions in kg CO2e."""
    return kwh * grid_kg_co2e_per_kwh
