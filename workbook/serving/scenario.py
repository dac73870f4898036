"""Frozen inputs of a serving job: the model, precision, request shape, traffic, latency targets, assumptions."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import polars as pl

from workbook.catalog.schemas import PRICING_MODELS
from workbook.errors import InputError
from workbook.errors import check_choice as _choice
from workbook.errors import check_number as _number
from workbook.model import serving as sv
from workbook.model.spec import ModelSpec
from workbook.model.units import HEAD_DIM, PEAK_COLUMN, SECONDS_PER_DAY


@dataclasses.dataclass(frozen=True)
class ServeAssumptions:
    """Every serving default, visible and overridable (mirrors :class:`workbook.training.scenario.Assumptions`)."""

    # The engine's share of the memory the chip reports for weights and KV cache (vLLM gpu_memory_utilization, of the
    # total) or for its KV cache (TensorRT-LLM free_gpu_memory_fraction, of what the weights leave): both default 0.9
    hbm_usable_fraction: float = 0.90
    # The memory an engine has in use beside the weights, outside its KV cache: CUDA/XLA context, activations of one
    # step, allocator slack. Engines that size their cache as a share of the whole device (vLLM, SGLang, JetStream,
    # Neuron): an assumption (their start-up logs show 0.5-3 GiB beside weights and cache for 1-8B models on one GPU,
    # more with tensor parallelism and large steps: vLLM pull request #10511, Llama 3 8B on H100, 3.05 GiB at TP1 and
    # 4.84 at TP2; raised to 5.6 GB, Red Hat's stock vLLM on one L40S goes 2.1x over its MLPerf result).
    runtime_overhead_bytes: float = 2e9
    # TensorRT-LLM, which sizes its cache from the memory left free once all of that is loaded: what its start-up
    # logs show in use (workbook.model.serving.TRTLLM_STARTUP_LOGS: 7.0-7.5 GB in four, 70B on B200 and H100 NVL, 8B
    # on an RTX 5090; NVIDIA's aiconfigurator budgets 3.5 GiB of "other" memory beside NCCL's and a step's activations,
    # ai-dynamo/aiconfigurator systems/*.yaml misc.other_mem)
    trtllm_runtime_overhead_bytes: float = sv.TRTLLM_RUNTIME_BYTES
    pue: float = 1.2  # data-centre power usage effectiveness
    host_power_factor: float = 1.5  # system power / accelerator power
    # A GPU tensor-parallel all-reduce's latency: a decode step's (low-latency algorithms) on NVLink and over PCIe,
    # and a long prompt's (bandwidth-optimal ones), from published microbenchmarks (workbook.model.serving). The
    # calibration's fixed step cost is taken net of the default.
    allreduce_latency_s: float = sv.SMALL_ALLREDUCE_LATENCY_S
    pcie_allreduce_latency_s: float = sv.PCIE_ALLREDUCE_LATENCY_S
    bulk_allreduce_latency_s: float = sv.BULK_ALLREDUCE_LATENCY_S

    def __post_init__(self):
        _number("hbm_usable_fraction", self.hbm_usable_fraction, 0.5, 1.0)
        _number("runtime_overhead_bytes", self.runtime_overhead_bytes, 0, 64e9)
        _number("trtllm_runtime_overhead_bytes", self.trtllm_runtime_overhead_bytes, 0, 64e9)
        _number("pue", self.pue, 1.0, 3.0)
        _number("host_power_factor", self.host_power_factor, 1.0, 3.0)
        _number("allreduce_latency_s", self.allreduce_latency_s, 0.0, 1e-3)
        _number("pcie_allreduce_latency_s", self.pcie_allreduce_latency_s, 0.0, 1e-3)
        _number("bulk_allreduce_latency_s", self.bulk_allreduce_latency_s, self.allreduce_latency_s, 1e-2)


WEIGHT_PRECISIONS = ("bf16", "fp8", "fp4", "int8", "int4")
KV_PRECISIONS = ("bf16", "fp8", "int8")


def default_kv_precision(weight_precision: str) -> str:
    """The KV-cache precision served with ``weight_precision`` weights when none is given: the same, except FP8
    under FP4 weights (NVFP4 checkpoints keep an FP8 cache) and BF16 under weight-only INT4 (AWQ/GPTQ)."""
    return {"fp4": "fp8", "int4": "bf16"}.get(weight_precision, weight_precision)


# Serving prices on-demand unless the user picks otherwise: spot capacity can be reclaimed at any moment, and a
# preempted replica breaks the latency target until a new one has loaded the model, so spot is never a default.
DEFAULT_SERVE_PRICING = ("on-demand",)
# Served weights and KV cache in FP8 by default, as today's published serving results run them (MLPerf Inference
# v4.1-v5.1 Llama 2 70B: FP8 on H100/H200/B200/MI300X); chips without FP8 matmuls read FP8 weights and compute in BF16.
DEFAULT_SERVE_PRECISION = "fp8"
SPOT_WARNING = (
    "Spot capacity can be reclaimed at any moment: a preempted replica breaks the latency target until a new one "
    "has loaded the model. Keep on-demand or committed capacity for the base load."
)
STACK_CHOICES = ("best", "generic")
# What an engine does when its KV cache is full (TensorRT-LLM's capacity scheduler policy; vLLM and SGLang have one
# behaviour): "preempt" admits a request on the room its prompt needs now and, when the running sequences need more,
# pauses the newest ones, whose prompts are prefilled again when they resume (TensorRT-LLM MAX_UTILIZATION, as
# NVIDIA's MLPerf harness runs it; vLLM's and SGLang's preemption by recompute); "reserve" admits a request only
# with room for its prompt and its whole answer, and never pauses one (TensorRT-LLM GUARANTEED_NO_EVICT, the default
# of its LLM API, trtllm-serve and trtllm-bench: nvidia.github.io/TensorRT-LLM llm-api/reference SchedulerConfig,
# "capacity_scheduler_policy = GUARANTEED_NO_EVICT"). workbook.serving.replica.replicas charges each.
CAPACITY_POLICIES = ("preempt", "reserve")
# Routers: "least-loaded" sends each request to the replica with the least work outstanding (vLLM production-stack
# router, llm-d, NVIDIA Dynamo), so prompts share one queue; "round-robin" spreads them blindly, a queue per replica.
ROUTERS = ("least-loaded", "round-robin")
# Replicas run at most this fraction of the load they could sustain within the latency targets: queues and
# latency blow up near full load (TPOT ~ 1/(1 - load)) and traffic has peaks. 70-80% is the usual planning
# range for latency-bound services; the default sits in its middle.
DEFAULT_HEADROOM = 0.75
MIN_HEADROOM, MAX_HEADROOM = 0.3, 0.95
# FP8 serving multiplies in FP8 (W8A8, e.g. TensorRT-LLM) where the chip has it; INT8/INT4 weights are the
# usual weight-only quantisation (AWQ/GPTQ, JetStream int8): they halve or quarter the bytes read, but the
# matrix multiplies run at the BF16 rate.
# FP4 (NVFP4 on Blackwell, MXFP4 on MI355X) multiplies in FP4 where the chip has FP4 tensor cores; elsewhere the
# FP4 weights are dequantised to BF16 and multiplied at the BF16 rate (weight-only W4A16: vLLM's FP4 Marlin kernels,
# "Your GPU does not have native support for FP4 computation ... Weight-only FP4 compression will be used leveraging
# the Marlin kernel", vllm/model_executor/layers/quantization/utils/marlin_utils_fp4.py).
# FP8 weights on a chip without FP8 matmuls (A100, A10G, TPU v5e: no FP8 peak in data/accelerators.csv) are read
# as FP8 and dequantised to BF16 for the multiply: half the bytes read, the BF16 compute rate (weight-only W8A16, as
# vLLM runs FP8 checkpoints below compute capability 8.9 with its FP8 Marlin kernels: docs.vllm.ai "FP8 W8A8",
# vLLM PR 5975; mixture-of-experts layers too since vLLM PRs 16850 and 18026, May 2025). The card says so
# (workbook.serving.recommend).
PEAK_FOR = {**PEAK_COLUMN, "fp4": "fp4_flops_per_s", "int8": PEAK_COLUMN["bf16"], "int4": PEAK_COLUMN["bf16"]}
# TensorRT-LLM runs FP8 weights only on FP8 matmuls (Ada and newer) and FP4 only on FP4 ones (Blackwell): its support
# matrix lists no FP8 for Ampere (nvidia.github.io/TensorRT-LLM reference/support-matrix, "Ampere (SM80, SM86) -
# FP32, FP16, BF16, INT8, INT4"), Model Optimizer's gives FP8 "GPUs: Ada and Later" and FP4 "Blackwell and Later",
# and it has no weight-only FP8 or FP4 path (its weight-only modes are INT8 and INT4: W8A16, W4A16 AWQ/GPTQ).
# Where a stack cannot run the weights on a chip it is not a candidate there (workbook.serving.options).
NATIVE_MATMULS_ONLY = {"trtllm": ("fp8", "fp4")}


def _peak_chain(precision: str) -> dict[str, str]:
    """The precisions whose peaks ``precision`` weights are multiplied at, first choice first, with their columns
    (one column once: INT8's and INT4's is BF16's)."""
    chain = (precision, "bf16")
    columns = {}
    for name in chain:
        columns.setdefault(PEAK_FOR[name], name)
    return {name: column for column, name in columns.items()}


def peak_column(precision: str) -> pl.Expr:
    """The dense peak a replica multiplies at with ``precision`` weights: the precision's own rate where the chip
    has it, else BF16's (weight-only: the weights are dequantised as they are read)."""
    return pl.coalesce([pl.col(column) for column in _peak_chain(precision).values()])


def matmul_precision(precision: str) -> pl.Expr:
    """The precision whose peak :func:`peak_column` takes on each chip for ``precision`` weights: ``precision``
    itself where the chip has its matmuls, else the one it falls back to ("bf16" for FP8 weights on an A100)."""
    return pl.coalesce([pl.when(pl.col(c).is_not_null()).then(pl.lit(n)) for n, c in _peak_chain(precision).items()])


def stack_runs(precision: str) -> pl.Expr:
    """True on the rows (a chip with its ``stack``) whose stack can run ``precision`` weights on that chip: false
    where the stack needs the chip's own matmuls of that precision (:data:`NATIVE_MATMULS_ONLY`) and it has none."""
    needs_native = pl.lit(False)
    for stack, precisions in NATIVE_MATMULS_ONLY.items():
        if precision in precisions:
            needs_native = needs_native | (pl.col("stack") == stack)
    return ~needs_native | pl.col(PEAK_FOR[precision]).is_not_null()


def default_kv_heads(attention_dim: int) -> int:
    """Grouped-query attention with 8 KV heads (Llama 2 70B, Llama 3, Mistral) once there are 32+ heads."""
    heads = max(1, attention_dim // HEAD_DIM)
    return 8 if heads >= 32 else heads


@dataclasses.dataclass(frozen=True)
class ServeScenario:
    """Serve ``model`` at a traffic level within latency targets."""

    model: ModelSpec
    weight_precision: str = DEFAULT_SERVE_PRECISION
    kv_precision: str = DEFAULT_SERVE_PRECISION
    prompt_tokens: int = 1000
    output_tokens: int = 300
    requests_per_s: Optional[float] = None
    tokens_per_day: Optional[float] = None  # output tokens per day; alternative to requests_per_s
    ttft_ms: Optional[float] = 2000.0  # targets are 99th percentiles (workbook.model.serving.LATENCY_PERCENTILE)
    tpot_ms: Optional[float] = 50.0
    n_kv_heads: Optional[int] = None
    pricing: tuple[str, ...] = DEFAULT_SERVE_PRICING
    accelerators: tuple[str, ...] = ()
    clouds: tuple[str, ...] = ()
    efficiency_override: Optional[float] = None  # replaces both calibrated efficiencies
    headroom: float = DEFAULT_HEADROOM  # replicas are sized to run at most this fraction of their capacity
    stack_choice: str = "best"  # "best": best published stack per vendor; "generic": open-source vLLM-type stack
    max_batch: Optional[int] = None  # the server's limit on sequences in flight (default: memory decides)
    prompt_tokens_p99: Optional[int] = None  # 99th-percentile prompt length (default: every prompt is prompt_tokens)
    output_tokens_p99: Optional[int] = None  # 99th-percentile answer length (default: every answer is output_tokens)
    # also consider separate prefill and decode replicas (workbook.serving.disaggregated), where they need fewer chips
    disaggregation: bool = False
    router: str = "least-loaded"  # how requests reach replicas: ROUTERS (workbook.serving.replica.router_pool)
    # attention run data-parallel, each chip of a replica its own sequences and their KV cache (TensorRT-LLM's
    # enable_attention_dp, SGLang's --enable-dp-attention), as NVIDIA's MLPerf DeepSeek-R1 configs run it; off, every
    # engine's default: tensor-parallel attention (:attr:`kv_split`)
    attention_data_parallel: bool = False
    capacity_policy: str = "preempt"  # a full KV cache: CAPACITY_POLICIES
    assumptions: ServeAssumptions = ServeAssumptions()

    def __post_init__(self):
        _choice("weight_precision", self.weight_precision, WEIGHT_PRECISIONS)
        _choice("kv_precision", self.kv_precision, KV_PRECISIONS)
        _number("prompt_tokens", self.prompt_tokens, 1, 2_000_000, integer=True)
        _number("output_tokens", self.output_tokens, 1, 200_000, integer=True)
        if self.requests_per_s is not None and self.tokens_per_day is not None:
            raise InputError("requests_per_s", "give either requests_per_s or tokens_per_day, not both")
        if self.requests_per_s is not None:
            _number("requests_per_s", self.requests_per_s, 1e-6, 1e7)
        if self.tokens_per_day is not None:
            _number("tokens_per_day", self.tokens_per_day, 1, 1e16)
        if self.ttft_ms is not None:
            _number("ttft_ms", self.ttft_ms, 1, 600_000)
        if self.tpot_ms is not None:
            _number("tpot_ms", self.tpot_ms, 0.1, 60_000)
        if self.n_kv_heads is not None:
            _number("n_kv_heads", self.n_kv_heads, 1, 1024, integer=True)
        if self.efficiency_override is not None:
            _number("efficiency_override", self.efficiency_override, 0.01, 1.0)
        _number("headroom", self.headroom, MIN_HEADROOM, MAX_HEADROOM)
        _choice("stack_choice", self.stack_choice, STACK_CHOICES)
        if self.max_batch is not None:
            _number("max_batch", self.max_batch, 1, 1_000_000, integer=True)
        if self.prompt_tokens_p99 is not None:
            _number("prompt_tokens_p99", self.prompt_tokens_p99, self.prompt_tokens, 2_000_000, integer=True)
        if self.output_tokens_p99 is not None:
            _number("output_tokens_p99", self.output_tokens_p99, self.output_tokens, 200_000, integer=True)
        _choice("router", self.router, ROUTERS)
        _choice("capacity_policy", self.capacity_policy, CAPACITY_POLICIES)
        self._check_context()
        self._check_spread()
        for field in ("disaggregation", "attention_data_parallel"):
            if not isinstance(getattr(self, field), bool):
                raise InputError(field, f"must be true or false, got {getattr(self, field)!r}")
        for model in self.pricing:
            _choice("pricing", model, PRICING_MODELS)

    def _check_context(self) -> None:
        """A request (and the 99th-percentile prompt with the 99th-percentile answer) must fit in the model's context
        window, where the model states one: the engine refuses a longer one (vLLM's max_model_len)."""
        limit = self.model.context_tokens
        if limit is None:
            return
        tail_field = "prompt_tokens_p99" if self.prompt_tokens_p99 else "output_tokens_p99"
        for field, words, prompt, output in (
            ("prompt_tokens", "the prompt plus the answer", self.prompt_tokens, self.output_tokens),
            (
                tail_field,
                "the 99th-percentile prompt plus the 99th-percentile answer",
                self.prompt_tokens_tail,
                self.output_tokens_p99 or self.output_tokens,
            ),
        ):
            if prompt + output > limit:
                raise InputError(
                    field,
                    f"{words} ({prompt:,} + {output:,} tokens) must fit in the model's {limit:,}-token context window",
                )

    def _check_spread(self) -> None:
        """Lengths are lognormal through their mean and 99th percentile, within the context window
        (:func:`workbook.model.serving.length_shape`): a percentile no such lengths reach is refused, with the
        largest they do."""
        for field, mean, p99, cap in (
            ("prompt_tokens_p99", self.prompt_tokens, self.prompt_tokens_p99, self.prompt_tokens_cap),
            ("output_tokens_p99", self.output_tokens, self.output_tokens_p99, self.output_tokens_cap),
        ):
            if p99 is None or sv.length_shape(mean, p99, cap) is not None:
                continue
            low, high = float(mean), float(min(p99, cap))
            for _ in range(30):
                mid = (low + high) / 2
                low, high = (mid, high) if sv.length_shape(mean, mid, cap) is not None else (low, mid)
            within = "" if math.isinf(cap) else f" within the {cap:,.0f} tokens the context window leaves"
            raise InputError(
                field,
                f"lengths with a mean of {mean:,} and a 99th percentile of {p99:,} are more spread than lognormal "
                f"lengths{within} can be: accepted from {mean:,} to {math.floor(low):,}",
            )

    @property
    def prompt_tokens_cap(self) -> float:
        """The longest prompt: the context window less the mean answer (none stated: no limit)."""
        limit = self.model.context_tokens
        return math.inf if limit is None else float(limit - self.output_tokens)

    @property
    def output_tokens_cap(self) -> float:
        """The longest answer: the context window less the mean prompt (none stated: no limit)."""
        limit = self.model.context_tokens
        return math.inf if limit is None else float(limit - self.prompt_tokens)

    @property
    def prompt_tokens_tail(self) -> int:
        """The prompt length at the latency percentile (the first-token tail's prefill)."""
        return self.prompt_tokens_p99 or self.prompt_tokens

    @property
    def kv_heads(self) -> int:
        """KV heads: the scenario's own, else the model's stated ones, else grouped-query attention's default (a
        shape derived from a parameter count states none)."""
        return self.n_kv_heads or self.model.n_kv_heads or default_kv_heads(self.model.attention_dim)

    @property
    def latent_attention(self) -> bool:
        """The model caches multi-head latent attention's latent (and no KV-head override replaces it)."""
        return self.model.kv_lora_rank is not None and self.n_kv_heads is None

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes a token holds: keys and values of every KV head and layer, or, with latent attention, its
        latent and rotary key (DeepSeek-V3: 61 x 576 values, 35 KB in FP8, where 128 heads' keys and values would
        take 2 MB). How a replica's chips share it: :attr:`kv_split`."""
        kv_bytes = sv.BYTES_PER_ELEMENT[self.kv_precision]
        m = self.model
        if self.latent_attention:
            return m.n_layers * (m.kv_lora_rank + m.qk_rope_dim) * kv_bytes
        return sv.kv_bytes_per_token(m.n_layers, self.kv_heads, HEAD_DIM, kv_bytes)

    @property
    def kv_split(self) -> float:
        """The most chips of a pipeline stage its KV cache is split over; past that, each chip holds a copy of its
        share. Tensor-parallel attention gives each chip whole KV heads, so a cache splits over at most its KV heads'
        count (vLLM copies a head's cache on each chip that runs its queries where the chips outnumber the KV heads),
        and a latent attention's one latent is on every chip, all of it (SGLang issue 2591: 'each rank keeps a full
        copy of the compressed KV'; vLLM issue 51454: DP8 holds 7.7x the KV of TP8 for DeepSeek's one-head MLA).
        Attention run data-parallel splits it over every chip, each holding its own sequences' cache; not charged
        then: the attention weights each chip holds whole (DeepSeek-V3's 11B, about 10 GB a chip more in FP8 than
        split eight ways)."""
        if self.attention_data_parallel:
            return math.inf
        return 1 if self.latent_attention else self.kv_heads

    @property
    def decode_attention_dim(self) -> int:
        """Width whose 4 L d x context FLOPs a decoded token's attention costs: the attention's, or, with latent
        attention run absorbed (as serving engines decode it), each head scoring the latent and rotary key and
        summing the latent: 2 H (r + r_rope) + 2 H r = 4 H (r + r_rope / 2) a context token and layer."""
        m = self.model
        if self.latent_attention:
            return m.n_heads * (m.kv_lora_rank + m.qk_rope_dim // 2)
        return m.attention_dim

    @property
    def output_tokens_per_s(self) -> float:
        """Required output tokens per second (1 request/s by default)."""
        if self.tokens_per_day is not None:
            return self.tokens_per_day / SECONDS_PER_DAY
        return (self.requests_per_s if self.requests_per_s is not None else 1.0) * self.output_tokens
