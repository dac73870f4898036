"""Achieved throughput: peak x MFU x scale efficiency, and goodput for long runs.

MFU (model FLOPs utilisation) = model FLOPs per second / dense peak of the precision used.
The per-(accelerator, precision) base MFU and the goodput come from ``workbook.calibration``,
fitted on the published runs in ``data/reference_runs.csv``; every value can be overridden.

Scale efficiency beyond the fast domain (NVLink node or rack for GPUs, ICI pod for TPUs):
  eff(N) = (1 - c) ** max(0, log2(N / domain))
  c = 0.003 per doubling for GPU/Trainium scale-out fabrics: NVIDIA DGXC Llama 3.1 70B went from
      54.10% MFU on 64 H100 to 53.38% on 2,048 (5 doublings -> 0.987, i.e. c = 0.0027);
  c = 0.035 per doubling across TPU pods (multislice over the data-centre network): MaxText 128B
      on v5e went from 56.06% on one 256-chip pod to 46.25% on 32 pods (5 doublings -> 0.825).
"""

import math

import polars as pl

SCALE_LOSS_PER_DOUBLING = {"gpu": 0.003, "trainium": 0.003, "tpu": 0.035}


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
