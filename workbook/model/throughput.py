"""Achieved throughput and goodput.

The per-chip rate comes from the planned layout's step time (``workbook.model.parallelism``): calibrated
kernel efficiency x peak for the compute, plus the pipeline bubble and the communication the layout
cannot hide. Goodput (share of wall-clock time that advances training) has two parts: a calibrated base
(evaluation, checkpoint writes, slower production configs: ``workbook.training.calibration``) and job
interruptions, which grow with the chip count.

Interruptions (Llama Team 2024, "The Llama 3 Herd of Models", arXiv:2407.21783 Sec. 3.3.4): 466 job
interruptions in a 54-day snapshot on 16,384 H100 (419 unexpected), with more than 90% effective training
time. That is 466 / (54 x 16,384) = 5.27e-4 interruptions per chip-day and at most
0.1 x 54 x 24 h / 466 = 0.278 h lost per interruption (the work since the last checkpoint plus the restart).
Wall time = work + interruptions x loss, with interruptions = rate x chips x work, so
goodput = 1 / (1 + rate x chips x loss_days).
"""

LLAMA3_INTERRUPTIONS = 466
LLAMA3_SNAPSHOT_DAYS = 54
LLAMA3_CHIPS = 16_384
LLAMA3_EFFECTIVE_TIME = 0.90
INTERRUPTIONS_PER_CHIP_DAY = LLAMA3_INTERRUPTIONS / (LLAMA3_SNAPSHOT_DAYS * LLAMA3_CHIPS)
HOURS_LOST_PER_INTERRUPTION = (1 - LLAMA3_EFFECTIVE_TIME) * LLAMA3_SNAPSHOT_DAYS * 24 / LLAMA3_INTERRUPTIONS


def interruption_goodput(chips, per_chip_day=INTERRUPTIONS_PER_CHIP_DAY, hours_lost=HOURS_LOST_PER_INTERRUPTION):
    """Share of wall-clock time not lost to interruptions for a job on ``chips`` chips."""
    return 1 / (1 + per_chip_day * chips * hours_lost / 24)


def achieved_flops_per_s(peak_flops_per_s, mfu):
    """Model FLOPs per second per chip."""
    return peak_flops_per_s * mfu


def train_seconds(total_flops, chips, flops_per_s_per_chip, goodput):
    """Wall-clock seconds: FLOPs / (chips x achieved rate), stretched by 1/goodput for failures and restarts."""
    return total_flops / (chips * flops_per_s_per_chip) / goodput
