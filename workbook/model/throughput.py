"""Achieved throughput and goodput.

The per-chip rate comes from the planned layout's step time (``workbook.model.parallelism``): calibrated
kernel efficiency x peak for the compute, plus the pipeline bubble and the communication the layout
cannot hide. Goodput (share of wall-clock time that advances training) = accounting x interruptions:

* **Interruptions** grow with the chips and are bounded by the job's length. Llama Team 2024, "The Llama 3
  Herd of Models", arXiv:2407.21783 Sec. 3.3.4: 466 job interruptions in a 54-day snapshot on 16,384 H100
  (419 unexpected), with more than 90% effective training time. That is 466 / (54 x 16,384) = 5.27e-4
  interruptions per chip-day and at most 0.1 x 54 x 24 h / 466 = 0.278 h lost per interruption (the restart
  plus the work since the last checkpoint, checkpoint writes included). A job shorter than that cannot lose
  more than the work it has done: on average half of itself (it restarts from the beginning, no checkpoint
  yet). Wall time = work + interruptions x loss, with interruptions = rate x chips x work, so
  goodput = 1 / (1 + rate x chips x min(loss, work / 2)): a 2-hour job on 512 chips loses 0.3%, a 60-day job
  on 16,384 chips 9%, a 4-minute benchmark on 11,616 chips 0.7%.
* **Accounting**: what whole published runs spend beyond the benchmark rate and their interruptions
  (evaluation, ramp-up, stragglers, less tuned production configs, how each publisher counts chip-hours),
  fitted on full runs only (``workbook.training.calibration``). Benchmark timing (MLPerf ``run_start`` to
  ``run_stop``, steady-state throughput) does not include it: accounting 1.
"""

import polars as pl

from workbook.model.units import SECONDS_PER_DAY

LLAMA3_INTERRUPTIONS = 466
LLAMA3_SNAPSHOT_DAYS = 54
LLAMA3_CHIPS = 16_384
LLAMA3_EFFECTIVE_TIME = 0.90
INTERRUPTIONS_PER_CHIP_DAY = LLAMA3_INTERRUPTIONS / (LLAMA3_SNAPSHOT_DAYS * LLAMA3_CHIPS)
HOURS_LOST_PER_INTERRUPTION = (1 - LLAMA3_EFFECTIVE_TIME) * LLAMA3_SNAPSHOT_DAYS * 24 / LLAMA3_INTERRUPTIONS
BENCHMARK_ACCOUNTING = 1.0  # MLPerf / throughput timing: no evaluation, checkpoint or accounting overhead


def _smaller(a, b):
    """min(a, b) for numbers and polars expressions alike."""
    return pl.min_horizontal(a, b) if isinstance(a, pl.Expr) or isinstance(b, pl.Expr) else min(a, b)


def interruption_goodput(
    chips, work_days, per_chip_day=INTERRUPTIONS_PER_CHIP_DAY, hours_lost=HOURS_LOST_PER_INTERRUPTION
):
    """Share of wall-clock time not lost to interruptions for ``work_days`` of training on ``chips`` chips."""
    lost_days = _smaller(work_days / 2, hours_lost / 24)
    return 1 / (1 + per_chip_day * chips * lost_days)


def goodput(chips, work_days, accounting):
    """Share of wall-clock time that trains: ``accounting`` (calibrated on whole runs; 1 for benchmark timing)
    x :func:`interruption_goodput`."""
    return accounting * interruption_goodput(chips, work_days)


def achieved_flops_per_s(peak_flops_per_s, mfu):
    """Model FLOPs per second per chip."""
    return peak_flops_per_s * mfu


def work_days(total_flops, chips, flops_per_s_per_chip):
    """Days of uninterrupted training at the achieved rate (before goodput)."""
    return total_flops / (chips * flops_per_s_per_chip) / SECONDS_PER_DAY


def train_seconds(total_flops, chips, flops_per_s_per_chip, goodput):
    """Wall-clock seconds: FLOPs / (chips x achieved rate), stretched by 1/goodput for failures and restarts."""
    return total_flops / (chips * flops_per_s_per_chip) / goodput
