"""Achieved throughput: peak x MFU x scale efficiency, and goodput for long runs.

MFU (model FLOPs utilisation) = model FLOPs per second / dense peak of the precision used.
The per-(accelerator, precision) base MFU and the goodput come from ``workbook.calibration``,
fitted on the published runs in ``data/reference_runs.csv``; every value can be overridden.

Scale efficiency beyond the fast domain (NVLink node or rack for GPUs, ICI pod for TPUs):
  eff(N) = (1 - c) ** max(0, log2(N / domain))
with c, the MFU lost per doubling, per accelerator kind in ``data/kinds.csv`` (column
``scale_loss_per_doubling``, with its published scaling series: 0.003 for GPU scale-out fabrics from
NVIDIA DGXC Llama 3.1 70B on 64 vs 2,048 H100; 0.035 across TPU pods from MaxText 128B on 1 vs 32 v5e pods).
"""

import math

import polars as pl


def scale_efficiency(chips, domain_chips, loss_per_doubling):
    """Fraction of single-domain MFU kept at ``chips`` (1.0 inside the domain)."""
    ratio = chips / domain_chips
    if isinstance(ratio, pl.Expr):
        doublings = pl.max_horizontal(ratio.log(2), pl.lit(0.0))
    else:
        doublings = max(0.0, math.log2(ratio))
    return (1.0 - loss_per_doubling) ** doublings


def achieved_flops_per_s(peak_flops_per_s, mfu):
    """Model FLOPs per second per chip."""
    return peak_flops_per_s * mfu


def train_seconds(total_flops, chips, flops_per_s_per_chip, goodput):
    """Wall-clock seconds: FLOPs / (chips x achieved rate), stretched by 1/goodput for failures and restarts."""
    return total_flops / (chips * flops_per_s_per_chip) / goodput
