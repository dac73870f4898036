"""Chips and time: round to real node/slice sizes, cap at the largest documented job.

Allowed sizes: powers of two up to the accelerator's block (an 8-GPU node, a 64-chip TPU v5p cube,
a 256-chip v5e/v6e pod, a 16-chip Trainium instance), then whole multiples of the block.
"""

import polars as pl

from workbook.model.units import SECONDS_PER_DAY


def round_to_allowed(chips: pl.Expr, block: pl.Expr) -> pl.Expr:
    """Smallest allowed chip count >= ``chips``."""
    wanted = pl.max_horizontal(chips, pl.lit(1.0))
    power_of_two = (2.0 ** wanted.log(2).ceil()).clip(upper_bound=block)
    return pl.when(wanted <= block).then(power_of_two).otherwise((wanted / block).ceil() * block).cast(pl.Int64)


def round_down_to_allowed(chips: pl.Expr, block: pl.Expr) -> pl.Expr:
    """Largest allowed chip count <= ``chips`` (0 below one chip)."""
    power_of_two = pl.when(chips >= 1).then(2.0 ** chips.clip(lower_bound=1).log(2).floor()).otherwise(0.0)
    return pl.when(chips < block).then(power_of_two).otherwise((chips / block).floor() * block).cast(pl.Int64)


def chips_for_days(total_flops, days, flops_per_s_per_chip, goodput):
    """Chips needed to finish ``total_flops`` in ``days`` at the given per-chip rate and goodput."""
    return total_flops / (days * SECONDS_PER_DAY * flops_per_s_per_chip * goodput)
