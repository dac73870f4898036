"""Frozen inputs of a training job: tokens, framework, precision, constraints and the assumptions.

Each dataclass checks its own invariants in ``__post_init__`` and raises
:class:`workbook.errors.InputError` naming the field and the accepted range; nothing is clamped.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from workbook.catalog.schemas import FRAMEWORKS, PRECISIONS, PRICING_MODELS
from workbook.errors import InputError
from workbook.errors import check_choice as _choice
from workbook.errors import check_number as _number
from workbook.model.spec import ModelSpec

__all__ = [
    "COMPUTE_OPTIMAL_TOKENS_PER_PARAM",
    "PLATFORMS",
    "TODAYS_PRACTICE_TOKENS",
    "MFU_OVERRIDE_RANGE",
    "Assumptions",
    "Constraints",
    "ModelSpec",
    "Scenario",
]

COMPUTE_OPTIMAL_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022 ("Chinchilla"): the default token budget
# "Today's practice": open models are trained far past compute-optimal. Llama 3 8B and 70B were pretrained on
# 15T+ tokens, Llama 3.1 405B on 15.6T (Meta, arXiv:2407.21783); DeepSeek-V3 on 14.8T (arXiv:2412.19437).
TODAYS_PRACTICE_TOKENS = 15e12
DEFAULT_TARGET_DAYS = 30.0  # when a job is given neither chips nor days: the run must be done within this
# The team's current platform -> (vendor, kind) of the accelerators it runs on today without porting.
PLATFORMS = {
    "nvidia": ("nvidia", "gpu"),
    "tpu": ("google", "tpu"),
    "amd": ("amd", "gpu"),
    "trainium": ("aws", "trainium"),
}
PLATFORM_LABELS = {
    "nvidia": "CUDA on NVIDIA",
    "tpu": "JAX/XLA on TPU",
    "amd": "ROCm on AMD",
    "trainium": "Neuron on Trainium",
}
MFU_OVERRIDE_RANGE = (0.01, 0.95)  # accepted user MFU (published large runs sit at ~0.2-0.6)

RECOMPUTE_CHOICES = ("auto", "none", "selective", "full")

# Global batch in tokens grows with model size in published runs: Llama 2 used 4M tokens at every size
# (7B-70B; arXiv:2307.09288 Sec. 2.2), Llama 3.1 405B ended at 16M (arXiv:2407.21783 Sec. 3.4.1), DeepSeek-V3
# (671B MoE) 15,360 x 4,096 = 63M (arXiv:2412.19437 Sec. 4.2). Default: 4M up to 70B, then the power law
# through (70B, 4M) and (405B, 16M); set ``global_batch_tokens`` to your own.
GLOBAL_BATCH_FLOOR_TOKENS = 4 * 2**20
GLOBAL_BATCH_FLOOR_PARAMS = 70e9
GLOBAL_BATCH_EXPONENT = 0.79  # ln(16M / 4M) / ln(405B / 70B)
BATCH_RAISE = 4  # a default batch may grow 4-fold for its layout: Llama 3.1 405B's went from 4M to 16M tokens


def default_global_batch_tokens(params: float) -> float:
    """Tokens per optimizer step when the user gives none (see the published points above)."""
    growth = max(1.0, params / GLOBAL_BATCH_FLOOR_PARAMS) ** GLOBAL_BATCH_EXPONENT
    return GLOBAL_BATCH_FLOOR_TOKENS * growth


def global_batch_columns(given: float | None, params: float) -> dict[str, float]:
    """A job's global batch (``given``, else the default) and the most the planner may raise it to where a layout
    needs more (a pipeline interleaves only with a micro-batch per stage; every data-parallel rank needs one): a given
    batch is kept, a default one may grow ``BATCH_RAISE``-fold, as published runs grew theirs at scale."""
    batch = given or default_global_batch_tokens(params)
    return {"global_batch_tokens": batch, "max_global_batch_tokens": batch if given else batch * BATCH_RAISE}


@dataclasses.dataclass(frozen=True)
class Assumptions:
    """Every default the model uses, visible and overridable. Sources in ``docs``/README."""

    mfu_override: Optional[float] = None  # replaces the calibrated MFU for every option
    goodput_override: Optional[float] = None  # replaces the calibrated goodput
    zero_stage: Optional[int] = None  # ZeRO stage 0-3 across data-parallel chips; None: the planner picks 1 or 3
    recompute: str = "auto"  # activation recomputation: none | selective | full | auto (the planner picks)
    global_batch_tokens: Optional[float] = None  # tokens per optimizer step; None: default_global_batch_tokens
    micro_batch_seqs: int = 1
    hbm_usable_fraction: float = 0.90  # allocator fragmentation + runtime buffers (assumption)
    framework_overhead_bytes: float = 2e9  # CUDA/XLA context, communication buffers (assumption)
    spot_preemption_overhead: float = 0.15  # spot time lost to capacity waits and checkpoints at any size (assumption)
    # Spot interruptions grow with the nodes in a job (workbook.model.cost.preemption_overhead): AWS Spot Instance
    # Advisor's highest interruption bucket is ">20%" of instances per month, typical of GPU instances (assumption).
    spot_interruptions_per_node_month: float = 0.2
    hours_lost_per_interruption: float = 1.0  # half a 1-hour checkpoint interval + ~30 min restart (assumption)
    porting_engineers: int = 2  # engineers porting in parallel: calendar weeks = engineer-weeks / engineers
    pue: float = 1.2  # data-centre power usage effectiveness (hyperscaler fleet averages ~1.1-1.2)
    host_power_factor: float = 1.5  # system power / accelerator power (DGX H100: 10.2 kW for 5.6 kW of GPUs = 1.8)
    grid_kg_co2e_per_kwh: float = 0.37  # world-average grid intensity (IEA ~2023); set your region's
    usd_per_engineer_week: float = 6000.0  # fully loaded ML engineer (~$300k/year / 50 weeks), assumption
    include_migration_cost: bool = True

    def __post_init__(self):
        if self.mfu_override is not None:
            _number("mfu_override", self.mfu_override, *MFU_OVERRIDE_RANGE)
        if self.goodput_override is not None:
            _number("goodput_override", self.goodput_override, 0.1, 1.0)
        if self.zero_stage is not None:
            _number("zero_stage", self.zero_stage, 0, 3, integer=True)
        _choice("recompute", self.recompute, RECOMPUTE_CHOICES)
        if self.global_batch_tokens is not None:
            _number("global_batch_tokens", self.global_batch_tokens, 1024, 1e10)
        _number("micro_batch_seqs", self.micro_batch_seqs, 1, 4096, integer=True)
        _number("hbm_usable_fraction", self.hbm_usable_fraction, 0.5, 1.0)
        _number("framework_overhead_bytes", self.framework_overhead_bytes, 0, 64e9)
        _number("spot_preemption_overhead", self.spot_preemption_overhead, 0, 2)
        _number("spot_interruptions_per_node_month", self.spot_interruptions_per_node_month, 0, 30)
        _number("hours_lost_per_interruption", self.hours_lost_per_interruption, 0, 48)
        _number("porting_engineers", self.porting_engineers, 1, 100, integer=True)
        _number("pue", self.pue, 1.0, 3.0)
        _number("host_power_factor", self.host_power_factor, 1.0, 3.0)
        _number("grid_kg_co2e_per_kwh", self.grid_kg_co2e_per_kwh, 0, 2)
        _number("usd_per_engineer_week", self.usd_per_engineer_week, 0, 1e6)


@dataclasses.dataclass(frozen=True)
class Constraints:
    """Limits the recommendation must respect."""

    deadline_days: Optional[float] = None
    budget_usd: Optional[float] = None
    framework_lock_in: bool = False  # the team will not switch frameworks
    multi_cloud: bool = False  # the chip must be rentable on at least two clouds (excludes TPU, Trainium)
    clouds: tuple[str, ...] = ()  # only these clouds (e.g. ("gcp",)); empty = all

    def __post_init__(self):
        if self.deadline_days is not None:
            _number("deadline_days", self.deadline_days, 0.01, 3650)
        if self.budget_usd is not None:
            _number("budget_usd", self.budget_usd, 1, 1e12)


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One training job: model, tokens, framework, precision, and either chips or target days."""

    model: ModelSpec
    tokens: float
    framework: str = "pytorch"
    current_platform: str = "nvidia"  # where the team's code runs today (PLATFORMS): sets the porting effort
    precision: str = "bf16"
    chips: Optional[int] = None
    days: Optional[float] = None
    pricing: tuple[str, ...] = PRICING_MODELS
    accelerators: tuple[str, ...] = ()  # empty = every accelerator in the catalog
    constraints: Constraints = Constraints()
    assumptions: Assumptions = Assumptions()

    def __post_init__(self):
        _number("tokens", self.tokens, 1e6, 1e15)
        _choice("framework", self.framework, FRAMEWORKS)
        _choice("current_platform", self.current_platform, tuple(PLATFORMS))
        _choice("precision", self.precision, PRECISIONS)
        if self.chips is not None and self.days is not None:
            raise InputError("chips", "give either chips or days, not both")
        if self.chips is not None:
            _number("chips", self.chips, 1, 10_000_000, integer=True)
        if self.days is not None:
            _number("days", self.days, 0.01, 3650)
        if not self.pricing:
            raise InputError("pricing", f"needs at least one of {', '.join(PRICING_MODELS)}")
        self._check_batch_holds_a_micro_batch()
        for model in self.pricing:
            _choice("pricing", model, PRICING_MODELS)

    def _check_batch_holds_a_micro_batch(self) -> None:
        """A step must hold one micro-batch of sequences, or no chip has work (the plan read "keeps at most 0 chips
        busy"); the error names the global batch when the user set it, else the sequence length."""
        a, seq_len = self.assumptions, self.model.seq_len
        batch = a.global_batch_tokens or default_global_batch_tokens(self.model.params)
        least = a.micro_batch_seqs * seq_len
        if batch >= least:
            return
        if a.global_batch_tokens is not None:
            raise InputError(
                "global_batch_tokens", f"must hold at least one {seq_len:,}-token sequence a step, got {batch:,.0f}"
            )
        raise InputError("seq_len", f"must be at most the global batch of {batch:,.0f} tokens a step, got {seq_len:,}")

    @property
    def target_days(self) -> float:
        """Days the sizing aims for when neither chips nor days are given: the deadline, else
        :data:`DEFAULT_TARGET_DAYS`."""
        if self.days is not None:
            return self.days
        return self.constraints.deadline_days or DEFAULT_TARGET_DAYS
