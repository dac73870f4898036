"""One replica of a served model on each accelerator and tensor-parallel degree, and its load curve.

``configs`` lists (accelerator x tensor-parallel degree): inside the fast scale-up domain, or, for PCIe cards
with no NVLink (L4, L40S, A10G: ``scaleup_domain_chips`` 1), across the cards of one server over PCIe
(``scaleup_bytes_per_s``), whose slower all-reduces the formulas charge per token. ``load_curve`` evaluates
each configuration at loads rho = 1%..99% of its capacity (formulas in :mod:`workbook.model.serving`);
``limits`` keeps, per configuration, the highest load that fits in memory and meets the latency targets.
Latency columns: ``tpot_ms`` / ``ttft_ms`` are the 99th percentiles (``sv.LATENCY_PERCENTILE``), the statistic
the targets set and the one sizing compares with them; ``tpot_mean_ms`` / ``ttft_mean_ms`` are the means.
The input frame carries the calibrated efficiencies per row (``eta_bw``, the HBM streaming efficiency of the chip's
vendor, ``eta_c``); the per-step overhead (:func:`step_overhead`), the all-reduce efficiency
(measured on GPUs: :data:`ALLREDUCE_KINDS`), the mixture-of-experts and FP4 factors on ``eta_c`` are calibrated
once for every stack (:class:`Factors`).

**Scheduler.** What sets the time to first token under load is how the serving engine admits prompts
(:class:`Scheduler`, from the submitter's published settings; the default is an engine with no limits, where a prompt
starts in the next step). A step carries at most ``max_tokens_per_step`` tokens (TensorRT-LLM ``max_num_tokens``, vLLM
``max_num_batched_tokens``) per micro-batch; with in-flight batching (TensorRT-LLM) or chunked prefill (vLLM) each
decoding sequence's token takes one of them, so the prompt tokens a replica can start per decode step are **budget =
stages x max_tokens_per_step - sequences in flight** (without mixing, vLLM runs prefill-only steps: stages x
max_tokens_per_step). Prompts wait their turn FCFS: a queue of prompt tokens served at ``budget`` tokens per step
(M/G/1, Pollaczek-Khinchine): with u = lambda x step x mean prompt / budget, **wait = lambda step^2 E[P^2] / (2 budget^2
(1 - u))**, and its tail P(W > t) = u exp(-u t / wait) (the conditional wait taken exponential). The same prompts ahead
also hold it back by their prefill work (an M/G/1 queue at the GPU's speed, :func:`prefill_work_wait`); the longer of
the two waits applies. Behind a router that sends each request to the least busy replica (``ServeScenario.router``, the
default: :func:`router_pool`) the fleet's c replicas share one queue of prompts, an M/G/c queue: Erlang C's chance of
waiting and Allen-Cunneen's mean wait (:func:`workbook.model.serving.pooled_wait`; c = 1 gives the above). The formulas
were checked against the engine's simulation and published results one replica at a time (``round-robin``, c = 1); the
pooled form is queueing theory. A prompt then runs in ceil(P / per-step share) steps when it may be chunked (one step
otherwise). A harness that holds queries for ``dispatch_window_s`` to batch them (and sends each batch to one of
``replicas_per_dispatcher`` replicas) adds the window (half on average) and the prefill of the prompts batched with it.
An engine that runs ``steps_per_schedule`` decode steps per scheduler call (vLLM's multi-step scheduling,
``num_scheduler_steps``) admits prompts only between those runs: a prompt also waits out the rest of the run it arrived
in, (n - 1) / 2 steps on average and up to n - 1. An engine that balances attention run data-parallel (TensorRT-LLM's
``adp_balancing``, each of a replica's chips its own sequences) holds new prompts until every rank has one, then
``balance_wait_steps`` more steps, or at most ``balance_timeout_steps`` steps, and starts them together: a prompt waits
out the rest of that cycle (:func:`balance_hold_steps`), half of it on average. An engine that schedules the next batch
while the GPU runs the current one (``schedule_ahead``: TensorRT-LLM's overlap scheduler, on by default in its PyTorch
backend, "one extra decoding step" its documented cost; vLLM's async scheduling, on by default since 0.14) has made that
batch before a prompt arriving now can join it: the prompt waits one step more. Prompt lengths: lognormal through the
mean and the 99th percentile when that is known. The p99 first token is the 99th percentile of the sum of these
independent delays, not the sum of their percentiles (:func:`workbook.model.serving.percentile_of_sum`).

**Checked against the engine's simulation** (:mod:`workbook.serving.simulation`, ``tests/serving/test_simulation.py``):
a chunked prompt's steps carry its chunk and the decode tokens (the prompts behind it wait), not other prompts'
average prefill; an engine without mixed steps reads the weights again for each prefill-only step
(:func:`prefill_step_share`); a multi-step run's arrivals are admitted, and prefilled, together
(:func:`dispatch_burst_tokens`); the steps around a first token spread as single steps
(:func:`workbook.model.serving.one_step_percentile_seconds`); the sequences in flight are peakier than Poisson
(:func:`workbook.model.serving.peakedness`), which the slot waits take through Hayward's approximation; a request's
p99 time per output token adds the spread of the prefill arriving while it decodes
(:func:`workbook.model.serving.prefill_burst_seconds`).
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import polars as pl

from workbook.model import serving as sv
from workbook.model.sustained import FACTOR_COLUMN
from workbook.serving.scenario import ServeAssumptions, ServeScenario, matmul_precision, peak_column

TP_CANDIDATES = (1, 2, 4, 8, 16, 32, 64)
# A model too large for one node is served by a pipeline of nodes: tensor parallel within each node, pipeline
# parallel across them (vLLM, "Distributed inference and serving": "the tensor parallel size is the number of GPUs
# you want to use in each node, and the pipeline parallel size is the number of nodes"; TensorRT-LLM and SGLang
# likewise). Only where a node is small: a TPU slice or an NVL72 rack already holds a replica of 64 chips.
PIPELINE_CANDIDATES = (2, 4, 8)
MAX_NODE_CHIPS = 16
LOAD_GRID = tuple(i / 100 for i in range(1, 100))  # rho, fraction of the replica's capacity
KEYS = ["accelerator_id", "tensor_parallel"]  # one replica configuration
REFINE_STEPS = 20  # loads tried between a curve's highest load within the limits and the next one
ENGINE_MAX_SEQS = "max_seqs"  # optional column of the input frame: the engine's limit on sequences per replica
# Chips whose tensor-parallel all-reduce runs at the calibrated efficiency and pays its latency in every step
# (:mod:`workbook.model.serving`): GPUs, where TensorRT-LLM and vLLM all-reduce between the matmuls (NCCL/RCCL or
# custom kernels, not overlapped with them). TPU and Trainium compilers overlap collectives with the matmuls (XLA's
# async collectives): they keep the link's speed (JetStream's TP8 8B result would need 99% of the v5e's peak at the
# GPU figure).
ALLREDUCE_KINDS = ("gpu",)
# Stacks that size the KV cache as a fraction of the memory left free once the weights and runtime are loaded:
# TensorRT-LLM's KvCacheConfig.free_gpu_memory_fraction ("allocate 90% of free GPU memory for KV cache",
# nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html). vLLM's gpu_memory_utilization is a fraction of the
# whole device (docs.vllm.ai, CacheConfig); NVIDIA's aiconfigurator models the two the same way.
KV_FROM_FREE_MEMORY = ("trtllm", "trtllm-static")
SLOTS_FULL = 0.999  # busy slots are capped just below all of them, where the wait for one is finite


@dataclasses.dataclass(frozen=True)
class Factors:
    """Calibrated once for every stack (:mod:`workbook.serving.calibration`): the compute efficiency of
    mixture-of-experts layers relative to the stack's dense FP8/BF16 one, the coefficient of the share of the
    compute time FP4 weights speed up (:func:`fp4_fraction`), and the fraction of the link's one-way bandwidth a
    tensor-parallel all-reduce of a decode step's tokens reaches on a GPU."""

    moe: float
    allreduce: float
    fp4: float  # FP4 coefficient (:func:`fp4_fraction`) of a stack with none of its own
    fp4_by_stack: tuple[tuple[str, float], ...] = ()  # (stack, FP4 coefficient) where a stack has its own; else ``fp4``
    layer_overhead_s: float = (
        0.0  # fixed seconds a step costs per layer besides its reads and FLOPs (:func:`step_overhead`)
    )
    layer_overhead_by_stack: tuple[tuple[str, float], ...] = ()  # (stack, seconds a layer) where a stack has its own
    # (stack, what reading an FP8 KV cache costs attention as a share of a BF16 cache's) where measured, in the software
    # of the prediction's time (:data:`workbook.serving.calibration.FP8_KV_READ_SHARE`); else half, its bytes'.
    fp8_kv_read_by_stack: tuple[tuple[str, float], ...] = ()


@dataclasses.dataclass(frozen=True)
class Scheduler:
    """How a replica's serving engine admits prompts (see the module docstring). The default has no limits."""

    max_tokens_per_step: float = math.inf  # tokens one step of one micro-batch may carry
    mixed_steps: bool = True  # decode tokens share a step's token budget with prompt tokens
    chunked_prefill: bool = True  # a prompt may be split over several steps
    pipeline_stages: int = 1  # micro-batches in flight per replica (pipeline parallel)
    dispatch_window_s: float = 0.0  # the harness holds queries this long to batch them
    replicas_per_dispatcher: int = 1  # replicas the harness's batches are spread over (each batch to one)
    steps_per_schedule: int = 1  # decode steps run per scheduler call (vLLM multi-step scheduling)
    balance_timeout_steps: int = 0  # attention-DP balancing: steps a prompt is held at most (0: no balancing)
    balance_wait_steps: int = 0  # steps held more once every rank has a prompt
    schedule_ahead: bool = False  # the next batch is made while the GPU runs this one: a new prompt waits a step


# Stacks whose engine runs prompt and decode tokens in the same step even without chunking: TensorRT-LLM's
# in-flight batching (max_num_tokens counts both). vLLM without chunked prefill runs prefill-only steps
# (docs.vllm.ai, "Chunked Prefill": "By default, vLLM scheduler prioritizes prefills and doesn't batch prefill and
# decode to the same batch").
MIXED_WITHOUT_CHUNKING = ("trtllm",)


def engine(
    stack: str,
    max_tokens_per_step: float | None = None,
    chunked_prefill: bool | None = None,
    pipeline_stages: int = 1,
    dispatch_window_s: float = 0.0,
    replicas_per_dispatcher: int = 1,
    steps_per_schedule: int = 1,
    balance_timeout_steps: int = 0,
    balance_wait_steps: int = 0,
    schedule_ahead: bool = False,
) -> Scheduler:
    """The scheduler of ``stack``'s engine with these settings; a setting left None keeps the unlimited engine's
    value (no token budget; prompts may be chunked)."""
    chunked = True if chunked_prefill is None else chunked_prefill
    return Scheduler(
        max_tokens_per_step=math.inf if max_tokens_per_step is None else float(max_tokens_per_step),
        mixed_steps=chunked or stack in MIXED_WITHOUT_CHUNKING,
        chunked_prefill=chunked,
        pipeline_stages=pipeline_stages,
        dispatch_window_s=dispatch_window_s,
        replicas_per_dispatcher=replicas_per_dispatcher,
        steps_per_schedule=steps_per_schedule,
        balance_timeout_steps=balance_timeout_steps,
        balance_wait_steps=balance_wait_steps,
        schedule_ahead=schedule_ahead,
    )


def per_engine(frame: pl.DataFrame, run) -> pl.DataFrame:
    """``run(part, scheduler)`` on the rows of each stack and engine setting (columns ``stack``,
    ``max_tokens_per_step``, ``chunked_prefill``, ``pipeline_parallel``, and ``schedule_ahead`` where present), with
    that engine's scheduler; a frame without them runs on the unlimited engine."""
    keys = ["stack", "max_tokens_per_step", "chunked_prefill", "pipeline_parallel"]
    if frame.height == 0 or not set(keys) <= set(frame.columns):
        return run(frame, Scheduler())
    if "schedule_ahead" not in frame.columns:
        frame = frame.with_columns(schedule_ahead=pl.lit(None, dtype=pl.Boolean))
    parts = [
        run(part, engine(stack, tokens, chunked, pipeline_stages=stages, schedule_ahead=bool(ahead)))
        for (stack, tokens, chunked, stages, ahead), part in frame.group_by(
            [*keys, "schedule_ahead"], maintain_order=True
        )
    ]
    return pl.concat(parts, how="diagonal_relaxed")


def prompt_second_moment(s: ServeScenario) -> float:
    """E[P^2] of the prompt lengths: lognormal through the mean and the 99th percentile, none longer than the
    context window leaves (every prompt the mean when no percentile is known):
    :func:`workbook.model.serving.second_moment`."""
    return sv.second_moment(s.prompt_tokens, s.prompt_tokens_p99, s.prompt_tokens_cap)


def output_second_moment(s: ServeScenario) -> float:
    """E[O^2] of the answer lengths, likewise from their mean and 99th percentile."""
    return sv.second_moment(s.output_tokens, s.output_tokens_p99, s.output_tokens_cap)


def prompt_budget(sched: Scheduler, sequences: pl.Expr) -> pl.Expr:
    """Prompt tokens the replica can start per decode step: its micro-batches' token budgets less the decode
    tokens that share them. At or below zero the prompts never start (the wait is infinite)."""
    decode = sequences if sched.mixed_steps else pl.lit(0.0)
    return (sched.pipeline_stages * sched.max_tokens_per_step - decode).clip(lower_bound=0.0)


def prompt_queue_load(rps: pl.Expr, step_s: pl.Expr, budget: pl.Expr, s: ServeScenario) -> pl.Expr:
    """u = lambda x step x mean prompt / budget: the load of the FCFS queue of prompt tokens served at ``budget``
    tokens per step."""
    return rps * step_s * s.prompt_tokens / budget


def prompt_queue(
    u: pl.Expr, step_s: pl.Expr, budget: pl.Expr, s: ServeScenario, pool, waiting: pl.Expr | None = None
) -> pl.Expr:
    """Mean wait in seconds of that queue at load ``u`` (:func:`prompt_queue_load`), pooled over ``pool`` replicas
    (:func:`router_pool`), ``waiting`` its chance of waiting where already computed."""
    return sv.pooled_wait(u, pool, step_s * prompt_second_moment(s) / (2 * budget * s.prompt_tokens), waiting)


def prompt_queue_percentile(wait: pl.Expr, waiting: pl.Expr, percentile: float = sv.LATENCY_PERCENTILE) -> pl.Expr:
    """Wait at ``percentile``, ``waiting`` the chance of any: P(W > t) = waiting exp(-waiting t / wait); zero while
    fewer than 1 - percentile wait at all."""
    return (
        pl.when(wait.is_infinite())
        .then(math.inf)
        .when(waiting > 1 - percentile)
        .then(wait / waiting * (waiting / (1 - percentile)).log())
        .otherwise(0.0)
    )


def router_pool(s: ServeScenario, rps: pl.Expr) -> pl.Expr | float:
    """Replicas whose prompts share one queue: the fleet at this load per replica (the scenario's traffic over
    ``rps`` each) behind a router that sends each request to the least busy replica (``router`` "least-loaded": vLLM's
    production stack, llm-d and Dynamo route on load), else one (``round-robin``: each replica queues its own, as
    the per-replica results it was checked against were measured)."""
    if s.router == "round-robin":
        return 1.0
    return (s.output_tokens_per_s / s.output_tokens / rps).ceil().clip(lower_bound=1.0)


def prefill_step_share(sched: Scheduler, rps: pl.Expr, weights_s: pl.Expr, rho: pl.Expr) -> pl.Expr:
    """Prefill-only steps per decode step of an engine that does not mix them (vLLM without chunked prefill runs the
    waiting prompts in a step of their own before the next decode step, or the next run of ``steps_per_schedule``
    n of them): the chance that a prompt arrived during the last run, (1 - exp(-lambda x n x step)) / n, a step
    costing the fixed part once more when a prefill step comes with it (the fixed point, two rounds from none)."""
    n = sched.steps_per_schedule
    share = pl.lit(0.0)
    for _ in range(2):
        share = (1 - (-rps * n * sv.step_seconds(weights_s * (1 + share), rho)).exp()) / n
    return share


def prompt_steps(sched: Scheduler, prompt_tokens: float, sequences: pl.Expr) -> pl.Expr:
    """Steps a prompt runs in: ceil(P / its micro-batch's share of the budget) when it may be chunked, else one."""
    if not sched.chunked_prefill:
        return pl.lit(1.0)
    share = prompt_budget(sched, sequences) / sched.pipeline_stages
    return (prompt_tokens / share).ceil().clip(lower_bound=1.0)


def prefill_work_wait(sched: Scheduler, prefill_per_token_s: pl.Expr, s: ServeScenario, load: pl.Expr, pool, waiting):
    """Mean wait for the prefill work of the prompts ahead (:func:`workbook.model.serving.prefill_wait_seconds`)
    when prompts arrive one by one. The queue is of whole prompts, served first come first served, so chunking
    does not shorten it (it spreads a prompt over steps, which the step count charges). A harness that batches
    the queries (``dispatch_window_s``) delivers the prompts ahead together with the request, in its burst
    (:func:`dispatch_burst_tokens`), and the replica's next batch only a window per replica later: no wait beyond
    the burst's own prefill."""
    if sched.dispatch_window_s > 0:
        return pl.lit(0.0)
    return sv.prefill_wait_seconds(prefill_per_token_s, s.prompt_tokens, prompt_second_moment(s), load, pool, waiting)


def dispatch_burst_tokens(
    sched: Scheduler, rps: pl.Expr, s: ServeScenario, step_s: pl.Expr, percentile: float | None = None
):
    """Prompt tokens admitted together with a request, whose prefill its first token waits for: the queries the
    harness's dispatch window batches with it (lambda x replicas x window of them) and, under multi-step scheduling,
    those that arrived during the same run of steps (lambda x (n - 1) steps: with one step per call, the running
    step's arrivals are the carried steps' part, :func:`workbook.model.serving.first_token_steps`). A Poisson count
    k of them: k x mean prompt on average, + z sqrt(k E[P^2]) at ``percentile``."""
    k = rps * (sched.replicas_per_dispatcher * sched.dispatch_window_s + (sched.steps_per_schedule - 1) * step_s)
    mean = k * s.prompt_tokens
    if percentile is None:
        return mean
    return mean + NormalDist().inv_cdf(percentile) * (k * prompt_second_moment(s)) ** 0.5


def balance_hold_steps(sched: Scheduler, rps: pl.Expr, step_s: pl.Expr) -> pl.Expr:
    """Steps between the starts of held prompts under attention-DP balancing (TensorRT-LLM's ``_balance_adp_requests``:
    a rank's new prompts wait until every rank has one, then ``balance_wait_steps`` more; a wait of
    ``balance_timeout_steps`` steps starts them anyway): min(timeout, ranks / (lambda x step) + wait), the prompts
    reaching the replica's tensor_parallel ranks in turn (the engine gives each new one to the least-loaded rank).
    The prompt waits out the rest of the cycle it arrived in: uniform over it, exact where the timeout binds (every
    DeepSeek-R1 MLPerf Server run: about one arrival a step against eight ranks); where the ranks fill first, the
    prompt that completes them waits only the extra steps, so the mean is over (1.22x on the first token against the
    engine's simulation, ``tests/serving/test_simulation.py``). Zero without balancing."""
    if sched.balance_timeout_steps <= 0:
        return pl.lit(0.0)
    fill = pl.col("tensor_parallel") / (rps * step_s) + sched.balance_wait_steps
    return pl.min_horizontal(fill, pl.lit(float(sched.balance_timeout_steps)))


def _per_stack(frame: pl.DataFrame, by_stack: tuple[tuple[str, float], ...], default: float) -> pl.Expr:
    """A calibrated value of each row's stack, else ``default``."""
    if by_stack and "stack" in frame.columns:
        return pl.col("stack").replace_strict(dict(by_stack), default=default, return_dtype=pl.Float64)
    return pl.lit(default)


def kv_read_width(factors: Factors, frame: pl.DataFrame, kv_precision: str) -> pl.Expr:
    """How many times its stored bytes an attention step's FP8 KV-cache reads cost: the row's stack's measured cost as
    a share of a BF16 cache's (``factors.fp8_kv_read_by_stack``) over the bytes' share, FP8's over BF16's (0.5); 1 for
    other precisions and unmeasured stacks."""
    if kv_precision != "fp8":
        return pl.lit(1.0)
    bytes_share = sv.BYTES_PER_ELEMENT["fp8"] / sv.BYTES_PER_ELEMENT["bf16"]
    return _per_stack(frame, factors.fp8_kv_read_by_stack, bytes_share) / bytes_share


def step_overhead(factors: Factors, frame: pl.DataFrame, layers) -> pl.Expr:
    """Seconds every step of a replica costs besides reading the weights and running its FLOPs: the engine's host
    work (scheduling, sampling) and the launches and gaps of the step's kernels, a dozen or so per layer, so
    ``layers`` (a pipeline stage's) x the stack's seconds a layer, the same however many sequences the step carries.
    Fitted per stack on its batch-1 latencies (:mod:`workbook.serving.calibration`)."""
    return _per_stack(frame, factors.layer_overhead_by_stack, factors.layer_overhead_s) * layers


def fp4_fraction(factors: Factors, frame: pl.DataFrame, model) -> pl.Expr:
    """Share of a token's dense compute time that FP4 matmuls speed up, for ``model``: the matmuls' time is
    proportional to the active parameters N, the rest of a layer's work per token (norms, residuals, activation
    functions, rotary embeddings, quantizing activations: memory-bound passes over the token's hidden state) to
    layers x hidden width L d, so the rest over the matmuls is k L d / N and the share is **1 / (1 + k L d / N)**,
    with k the stack's FP4 coefficient (:func:`workbook.serving.calibration.fp4_factors`): a wide model (405B, d
    16,384) gains more from FP4 than a narrow one (8B, d 4,096)."""
    k = _per_stack(frame, factors.fp4_by_stack, factors.fp4)
    return 1 / (1 + k * layer_width_per_param(model.n_layers, model.hidden_dim, model.active_params))


def layer_width_per_param(n_layers, hidden_dim, active_params):
    """L d / N: a token's work outside the matmuls relative to its matmuls' (:func:`fp4_fraction`)."""
    return n_layers * hidden_dim / active_params


def fp4_factor(factors: Factors, frame: pl.DataFrame, model) -> pl.Expr:
    """Compute efficiency with FP4 weights, of the chip's FP4 peak, relative to the FP8 efficiency of its FP8 peak.
    Amdahl: FP4 matmuls run a share f of the FP8 compute time (:func:`fp4_fraction`) r = FP4 peak / FP8 peak times
    faster, the rest as fast as before, so the time falls to f / r + 1 - f and the efficiency of the FP4 peak is
    **1 / (f + (1 - f) r)**. A chip whose FP4 peak is 3x its FP8 one (GB300, B300 2.9x) gains less from FP4 than
    one with 2x (B200, GB200), as published: in MLPerf v6.0 B300 and GB300 serve Llama 2 70B and Llama 3.1 8B at
    1.04-1.08x B200's and GB200's throughput per GPU, with 1.46-1.5x their FP4 peak."""
    ratio = pl.col("fp4_flops_per_s") / pl.col("fp8_flops_per_s")
    fraction = fp4_fraction(factors, frame, model)
    return 1 / (fraction + (1 - fraction) * ratio)


def configs(accelerators: pl.DataFrame) -> pl.DataFrame:
    """Accelerators x replica layouts: ``tensor_parallel`` chips in one scale-up domain (``pipeline_parallel``
    1), and, where a whole domain is a node of at most :data:`MAX_NODE_CHIPS` chips, ``pipeline_parallel`` such
    nodes in a pipeline over the scale-out network (``tensor_parallel`` = all the replica's chips)."""
    limit = node_chips()
    grid = pl.DataFrame({"tensor_parallel": TP_CANDIDATES})
    within = (
        accelerators.join(grid, how="cross")
        .filter(pl.col("tensor_parallel") <= limit)
        .with_columns(pipeline_parallel=pl.lit(1, dtype=pl.Int64))
    )
    nodes = (
        accelerators.filter(limit.is_in(TP_CANDIDATES) & (limit <= MAX_NODE_CHIPS))
        .join(
            pl.DataFrame({"pipeline_parallel": PIPELINE_CANDIDATES}, schema={"pipeline_parallel": pl.Int64}),
            how="cross",
        )
        .with_columns(tensor_parallel=limit * pl.col("pipeline_parallel"))
    )
    return pl.concat([within, nodes.select(within.columns)]).with_columns(
        over_pcie=(pl.col("scaleup_domain_chips") <= 1) & (pl.col("tensor_parallel") > pl.col("pipeline_parallel"))
    )


def runtime_bytes(frame: pl.DataFrame, s: ServeScenario) -> pl.Expr:
    """Bytes a chip's engine has in use beside its weights, outside its KV cache: what TensorRT-LLM's start-up logs
    show for the stacks of :data:`KV_FROM_FREE_MEMORY` (``trtllm_runtime_overhead_bytes``), the assumed runtime for
    the rest (``runtime_overhead_bytes``)."""
    a = s.assumptions
    generic = pl.lit(a.runtime_overhead_bytes)
    if "stack" not in frame.columns:
        return generic
    return pl.when(pl.col("stack").is_in(KV_FROM_FREE_MEMORY)).then(a.trtllm_runtime_overhead_bytes).otherwise(generic)


def kv_room_bytes(frame: pl.DataFrame, s: ServeScenario, weights_bytes: pl.Expr) -> pl.Expr:
    """KV-cache bytes per chip, as the engine sizes its cache: a fraction f (``hbm_usable_fraction``) of the chip's
    memory less the weights and the runtime (:func:`runtime_bytes`; vLLM, SGLang: ``gpu_memory_utilization`` of the
    total), or, for the stacks of :data:`KV_FROM_FREE_MEMORY`, f of the memory left free after them (TensorRT-LLM)."""
    f, runtime = s.assumptions.hbm_usable_fraction, runtime_bytes(frame, s)
    of_total = pl.col("hbm_bytes") * f - runtime - weights_bytes
    if "stack" not in frame.columns:
        return of_total
    of_free = f * (pl.col("hbm_bytes") - runtime - weights_bytes)
    return pl.when(pl.col("stack").is_in(KV_FROM_FREE_MEMORY)).then(of_free).otherwise(of_total)


def node_chips() -> pl.Expr:
    """Chips one scale-up domain joins: the NVLink (or ICI) domain, or a server of PCIe cards."""
    return (
        pl.when(pl.col("scaleup_domain_chips") <= 1)
        .then(pl.col("block_chips"))
        .otherwise(pl.col("scaleup_domain_chips"))
    )


# Memory at the edge: the room the weights and the runtime (:func:`runtime_bytes`) leave a chip is less than the most
# an engine has been logged to keep beyond its stack's runtime: vLLM's pull request #10511, Llama 3 8B at TP2 on H100,
# 4.84 GiB beside weights and cache, 3.2 GB more than the 2 GB assumed for it (TensorRT-LLM's logs,
# workbook.model.serving.TRTLLM_STARTUP_LOGS, lie within 0.4 GB of their median, its runtime)
MEMORY_EDGE_GB = 4.84 * 2**30 / 1e9 - ServeAssumptions().runtime_overhead_bytes / 1e9


def memory_room_gb() -> pl.Expr:
    """GB a chip has beside its share of the weights and the engine's runtime: the KV cache's, and the margin for
    what the engine keeps beyond that runtime (:data:`MEMORY_EDGE_GB`)."""
    return pl.col("hbm_bytes") / 1e9 - pl.col("weights_gb") - pl.col("overhead_gb")


def fewest_chips_first(frame: pl.DataFrame, chips: str, per_chip: str) -> pl.DataFrame:
    """Replica configurations in the order a fleet picks them: the fewest ``chips``; ties, one whose weights leave
    the engine room (not at the memory edge, :data:`MEMORY_EDGE_GB`: DeepSeek-V3 in FP4 on B200, one 4-chip replica
    rather than two of 2 chips each filled to 191 of 192 GB), then the smallest replica (it fits the most instance
    sizes: two 1-GPU A10G instances, not an 8-GPU one rented whole for a 2-GPU replica), then the most throughput
    ``per_chip``."""
    at_edge = memory_room_gb() < MEMORY_EDGE_GB
    return frame.sort(
        [pl.col(chips), at_edge, pl.col("tensor_parallel"), pl.col(per_chip)], descending=[False, False, False, True]
    )


def layout() -> pl.Expr:
    """A replica's layout in words: "TP8", or "TP8 x PP2" for a pipeline of two 8-chip stages."""
    stages = pl.col("pipeline_parallel")
    within = (pl.col("tensor_parallel") // stages).cast(pl.Int64)
    return (
        pl.when(stages > 1)
        .then(pl.format("TP{} x PP{}", within, stages))
        .otherwise(pl.format("TP{}", pl.col("tensor_parallel")))
    )


def replicas(frame: pl.DataFrame, s: ServeScenario, factors: Factors) -> pl.DataFrame:
    """Per configuration: the replica-seconds one request costs (and the p99 prompt's prefill alone), capacity, weights
    time, memory room, and the engine's way with a full cache (``s.capacity_policy``): room for the sequences' tokens
    so far and the prompts prefilled again when it preempts (``recomputed_prompt_tokens``, ``recompute_s``), or room
    for each request's prompt and whole answer when it reserves. The ``tensor_parallel`` chips of a replica may form
    ``pipeline_parallel`` stages (column; 1 if absent), each holding its layers on tensor_parallel / stages chips:
    only the chips within a stage all-reduce, over that stage's layers, and each token's hidden state passes from
    stage to stage, over the scale-up link inside a node and the scale-out network between nodes."""
    m = s.model
    w_bytes = sv.BYTES_PER_ELEMENT[s.weight_precision]
    kv_token = s.kv_bytes_per_token
    t = pl.col("tensor_parallel").cast(pl.Float64)
    bandwidth = pl.col("hbm_bytes_per_s")
    peak = peak_column(s.weight_precision) * pl.col(FACTOR_COLUMN)  # the clock the chip holds under load
    eta_c = pl.col("eta_c") * (factors.moe if m.is_moe else 1.0)
    fp4_matmuls = pl.lit(s.weight_precision == "fp4") & pl.col("fp4_flops_per_s").is_not_null()
    fp4 = fp4_factor(factors, frame, m)
    eta_c = eta_c * pl.when(fp4_matmuls).then(fp4).otherwise(1.0)  # elsewhere FP4 weights run FP8 matmuls
    stages = pl.col("pipeline_parallel").cast(pl.Float64) if "pipeline_parallel" in frame.columns else pl.lit(1.0)
    within_stage = t / stages
    allreduce = pl.when(pl.col("kind").is_in(ALLREDUCE_KINDS)).then(factors.allreduce).otherwise(1.0)
    hop_link = (
        pl.when(pl.col("tensor_parallel") <= node_chips())
        .then(pl.col("scaleup_bytes_per_s") / sv.LINK_DIRECTIONS)
        .otherwise(pl.col("scaleout_bytes_per_s"))
    )
    tp = (within_stage > 1) & pl.col("kind").is_in(ALLREDUCE_KINDS)
    layers = m.n_layers / stages
    a = s.assumptions
    pcie = pl.col("over_pcie") if "over_pcie" in frame.columns else pl.lit(False)
    latency_s = pl.when(pcie).then(a.pcie_allreduce_latency_s).otherwise(a.allreduce_latency_s)
    extra_s = (a.bulk_allreduce_latency_s - latency_s).clip(lower_bound=0.0)
    comm, prompt_comm = _communication(m.hidden_dim, layers, within_stage, tp, hop_link, stages, allreduce, extra_s)
    shape = (m.active_params, m.n_layers, m.attention_dim, s.decode_attention_dim)
    answers = output_second_moment(s)
    prefill_s, decode_s = sv.request_seconds(
        shape,
        s.prompt_tokens,
        s.output_tokens,
        t,
        peak,
        eta_c,
        comm,
        prompt_second_moment(s),
        answers,
        prompt_comm(s.prompt_tokens),
    )
    # the 99th-percentile prompt alone (attention makes its prefill grow faster than its length)
    prefill_tail_s, _ = sv.request_seconds(
        shape,
        s.prompt_tokens_tail,
        s.output_tokens,
        t,
        peak,
        eta_c,
        comm,
        s.prompt_tokens_tail**2,
        prompt_comm_per_token=prompt_comm(s.prompt_tokens_tail),
    )
    kv_eta = pl.col("eta_bw") * sv.KV_READ_SHARE  # paged KV-cache reads reach less than streamed weights
    # the chips the KV cache is split over: every stage its layers', each split over at most s.kv_split chips
    kv_chips = stages * pl.min_horizontal(within_stage, pl.lit(float(s.kv_split)))
    kv_read_s = sv.kv_read_seconds(kv_token, s.prompt_tokens, s.output_tokens, kv_chips, bandwidth, kv_eta, answers)
    kv_read_s = kv_read_s * kv_read_width(factors, frame, s.kv_precision)
    weights_bytes = w_bytes * m.params / t
    if s.capacity_policy == "reserve":  # each request holds room for its prompt and its whole answer from its start
        kv_sequence = sv.kv_cache_bytes(1, kv_token, s.prompt_tokens, reserved_answer_tokens(s))
    else:  # a paged KV cache holds what the sequences have written so far
        kv_sequence = sv.kv_cache_bytes(1, kv_token, s.prompt_tokens, s.output_tokens, True, answers)
    cache_sequences = kv_room_bytes(frame, s, weights_bytes) * kv_chips / kv_sequence
    limit = pl.lit(math.inf)
    if s.max_batch is not None:  # the user's limit replaces the engine's
        limit = pl.lit(float(s.max_batch))
    elif ENGINE_MAX_SEQS in frame.columns:  # the engine's batch limit (null: none), per pipeline micro-batch
        limit = pl.col(ENGINE_MAX_SEQS).cast(pl.Float64).fill_null(math.inf) * stages
    max_sequences = pl.min_horizontal(cache_sequences, limit)
    frame = frame.with_columns(
        allreduce_efficiency=pl.when(within_stage > 1).then(allreduce),  # null: no all-reduce
        matmul_precision=matmul_precision(s.weight_precision),  # "bf16": FP8 weights on a chip without FP8 matmuls
        fp4_factor=pl.when(fp4_matmuls).then(fp4),  # null: no FP4 matmuls
        fp4_fraction=pl.when(fp4_matmuls).then(fp4_fraction(factors, frame, m)),
        prefill_s=prefill_s,
        prefill_tail_s=prefill_tail_s,
        decode_s=decode_s,
        kv_read_s=kv_read_s,
        weights_gb=weights_bytes / 1e9,
        overhead_gb=runtime_bytes(frame, s) / 1e9,
        max_sequences=max_sequences,
        cache_bound=cache_sequences < limit,  # the slots are the KV cache's room, not a count of sequences
        kv_gb_per_sequence=kv_sequence / kv_chips / 1e9,
        allreduce_latency_us=pl.when(tp).then(latency_s * 1e6),  # null: no GPU all-reduce
        allreduce_step_s=pl.when(tp).then(sv.allreduce_latency_seconds_per_step(layers, latency_s)).otherwise(0.0),
        step_overhead_s=step_overhead(factors, frame, layers),
        all_weights_s=weights_bytes / (bandwidth * pl.col("eta_bw")),
        active_weights_s=w_bytes * m.active_params / t / (bandwidth * pl.col("eta_bw")),
    )
    # a full cache that preempts prefills prompts again (read off the cache's sequences, a column by now)
    preempts = pl.lit(s.capacity_policy == "preempt") & pl.col("cache_bound")
    frame = frame.with_columns(
        recomputed_prompt_tokens=pl.when(preempts).then(recomputed_tokens(s, pl.col("max_sequences"))).otherwise(0.0)
    )
    return frame.with_columns(
        recompute_s=pl.col("recomputed_prompt_tokens") * pl.col("prefill_s") / s.prompt_tokens,
    ).with_columns(
        capacity_rps=sv.capacity_requests_per_s(
            pl.col("prefill_s") + pl.col("recompute_s"), pl.col("decode_s"), pl.col("kv_read_s")
        )
    )


def reserved_answer_tokens(s: ServeScenario) -> int:
    """The answer a request reserves room for where the engine reserves (``capacity_policy`` "reserve"): the
    answer's 99th percentile (the max_tokens a client sets so that few answers are cut short), else the answer (every
    answer the same length, as a fixed-length benchmark's)."""
    return s.output_tokens_p99 or s.output_tokens


def recomputed_tokens(s: ServeScenario, sequences: pl.Expr) -> pl.Expr:
    """Prompt tokens a request has prefilled again where a full cache of ``sequences`` preempts (``capacity_policy``
    "preempt": :func:`workbook.model.serving.recomputed_prompt_tokens`), at the replica's limit: capacity
    (``recompute_s``, at its prefill's cost per prompt token) pays it in full, and :func:`at_load` weighs it by the
    chance that the cache is full at the load."""
    footprint = s.prompt_tokens + s.output_tokens
    return sv.recomputed_prompt_tokens(sequences.clip(lower_bound=1.0), s.output_tokens, footprint)


def _communication(hidden_dim, layers, within_stage, tp, hop_link, stages, efficiency, extra_latency_s):
    """Seconds of communication per decode token, and per prompt token as a function of the prompt's length: the
    stage's all-reduces (a decode step's tokens at ``efficiency`` of the link; on a GPU replica a long prompt's at the
    link's speed once the bandwidth-optimal algorithm's ``extra_latency_s`` is spread over it,
    :func:`workbook.model.serving.prompt_allreduce_seconds_per_token`) and the hops between pipeline stages."""
    hop = sv.pipeline_hop_seconds_per_token(stages, hidden_dim, hop_link)
    link = pl.col("scaleup_bytes_per_s")

    def per_token(link_fraction):
        allreduce_s = sv.allreduce_seconds_per_token(layers, hidden_dim, within_stage, link, link_fraction)
        return pl.when(within_stage > 1).then(allreduce_s).otherwise(0.0)

    small, bulk = per_token(efficiency), per_token(1.0)

    def prompt(tokens):
        prompt_s = sv.prompt_allreduce_seconds_per_token(layers, small, bulk, tokens, extra_latency_s)
        return pl.when(tp).then(prompt_s).otherwise(small) + hop

    return small + hop, prompt


def at_load(frame: pl.DataFrame, s: ServeScenario, rho: pl.Expr, sched: Scheduler = Scheduler()) -> pl.DataFrame:
    """Step time, latencies, sequences in flight and memory of each replica at load ``rho`` of its capacity,
    under the engine's ``sched``. Intermediate quantities are computed as columns in turn (dropped at the end),
    so that each expression stays small to plan."""
    columns = frame.columns
    frame = frame.with_columns(_rps=rho * pl.col("capacity_rps"))
    rps = pl.col("_rps")
    # Mixture of experts: the weights read per step depend on how many sequences are in flight (one pass).
    first = sv.sequences_in_flight(
        rps, s.output_tokens, sv.step_seconds(pl.col("all_weights_s") * sched.pipeline_stages, rho)
    )
    weights_s = pl.min_horizontal(pl.col("active_weights_s") * first.clip(lower_bound=1), pl.col("all_weights_s"))
    # Pipeline parallel: a token passes every stage in turn, and each stage reads its chip's share of the weights.
    # Every stage of a pipeline runs its own step: its reads, all-reduces and fixed cost, one after the other.
    fixed_s = weights_s + pl.col("allreduce_step_s") + pl.col("step_overhead_s")
    frame = frame.with_columns(_weights_s=fixed_s * sched.pipeline_stages)
    weights_s = pl.col("_weights_s")
    slots = pl.col("max_sequences").floor().clip(lower_bound=1)  # whole sequences
    # A full cache that preempts prefills prompts again only while it is full, where capacity_rps charges it at every
    # load: the chance that every slot is taken (Erlang C at the sequences in flight of the charged load, in its
    # many-server form: a weight on a small charge, where the exact sum per row would cost a third of the answer's time)
    # scales it.
    grid_rho, full = rho, pl.lit(0.0)
    if (frame["recompute_s"] > 0).any():
        charged = sv.sequences_in_flight(rps, s.output_tokens, sv.step_seconds(weights_s, rho))
        full = sv.many_server_waiting_probability(pl.min_horizontal(charged, slots * SLOTS_FULL), slots)
        frame = frame.with_columns(_full=full, _grid_rho=rho).with_columns(
            _load_worked=rho - rps * pl.col("recompute_s") * (1 - pl.col("_full"))
        )
        grid_rho, full, rho = pl.col("_grid_rho"), pl.col("_full"), pl.col("_load_worked")
    if not sched.mixed_steps:
        frame = frame.with_columns(_weights_s=weights_s * (1 + prefill_step_share(sched, rps, weights_s, rho)))
    frame = frame.with_columns(_step_s=sv.step_seconds(weights_s, rho))
    step_s = pl.col("_step_s")
    frame = frame.with_columns(_sequences=sv.sequences_in_flight(rps, s.output_tokens, step_s))
    sequences = pl.col("_sequences")
    hold_s = s.output_tokens * step_s
    # The scheduler's queue: the prompt waits for the tokens ahead of it, runs in its steps, shares its prefill
    # step with the prompts the harness batched with it, after the harness's dispatch window.
    budget = prompt_budget(sched, sequences)
    prefill_per_token_s = pl.col("prefill_s") / s.prompt_tokens
    decode_per_sequence_s = sv.work_per_sequence_step(0.0, pl.col("decode_s"), pl.col("kv_read_s"), s.output_tokens)
    # the chances of waiting in the two queues (Erlang C where the fleet's replicas share them), computed once
    pool = router_pool(s, rps)
    frame = frame.with_columns(_u=prompt_queue_load(rps, step_s, budget, s), _prefill_load=rps * pl.col("prefill_s"))
    if isinstance(pool, pl.Expr):
        frame = frame.with_columns(_pool=pool)
        pool = pl.col("_pool")
    frame = frame.with_columns(
        _u_waiting=sv.pooled_waiting(pl.col("_u"), pool), _load_waiting=sv.pooled_waiting(pl.col("_prefill_load"), pool)
    )
    frame = frame.with_columns(
        _busy=pl.min_horizontal(sequences, slots * SLOTS_FULL),  # beyond: does not fit (fits_in_memory)
        _queue_s=prompt_queue(pl.col("_u"), step_s, budget, s, pool, pl.col("_u_waiting")),
        _work_s=prefill_work_wait(
            sched, prefill_per_token_s, s, pl.col("_prefill_load"), pool, pl.col("_load_waiting")
        ),
        _prompt_steps=prompt_steps(sched, s.prompt_tokens, sequences),
        _prompt_steps_p=prompt_steps(sched, s.prompt_tokens_tail, sequences),
    )
    busy, queue_s, work_s, load_p = pl.col("_busy"), pl.col("_queue_s"), pl.col("_work_s"), pl.col("_prefill_load")
    # A full cache is full of tokens, not of sequences: where its room is the limit, the tokens' spread adds.
    cache = sv.cache_peakedness(
        s.prompt_tokens,
        s.prompt_tokens_p99,
        s.output_tokens,
        s.output_tokens_p99,
        s.prompt_tokens_cap,
        s.output_tokens_cap,
    )
    frame = frame.with_columns(
        _peak=sv.peakedness(rho, load_p) * pl.when(pl.col("cache_bound")).then(cache).otherwise(1.0)
    )
    peak = pl.col("_peak")
    frame = frame.with_columns(
        within_token_budget=pl.col("_u") < 1,
        _waiting=sv.peaked_waiting_probability(busy, slots, peak),
        # The prompts ahead hold it back by their token count (the step budget) or by their prefill work,
        # whichever binds: two measures of the same FCFS queue.
        _queue_wait_s=pl.max_horizontal(queue_s, work_s),
        _queue_wait_p_s=pl.max_horizontal(
            prompt_queue_percentile(queue_s, pl.col("_u_waiting")),
            prompt_queue_percentile(work_s, pl.col("_load_waiting")),
        ),
        _carry=sv.first_token_steps(load_p),
    )
    waiting = pl.col("_waiting")
    # A request's time per output token at the 99th percentile: the batch it lives with (its decode work) and the
    # prefill of the prompts arriving while it decodes, each at its own spread.
    e2 = prompt_second_moment(s)
    decode_p_s = sv.step_percentile_seconds(weights_s, decode_per_sequence_s, busy, slots)
    step_p_s = pl.max_horizontal(
        step_s,
        decode_p_s
        + prefill_per_token_s * s.prompt_tokens * rps * step_s
        + sv.prefill_burst_seconds(prefill_per_token_s, s.prompt_tokens, e2, busy, s.output_tokens, load_p),
    )
    # A prompt chunked over several steps takes all of their budget left by the decoding sequences (FCFS: the
    # prompts behind it wait), so its steps carry its chunk and those sequences' tokens, not the average prefill of
    # other prompts: beside the chunk, each costs the fixed part and the decode work.
    chunk_s = weights_s + decode_per_sequence_s * sequences
    chunk_p_s = pl.max_horizontal(chunk_s, decode_p_s)
    frame = frame.with_columns(
        _step_p_s=step_p_s,
        _slot_wait_s=sv.slot_wait_seconds(busy, slots, hold_s, waiting=waiting, peak=peak),
        _slot_wait_p_s=sv.slot_wait_percentile_seconds(busy, slots, hold_s, waiting=waiting, peak=peak),
        # The prompt's own part: its prefill (with the prompts the harness batched with it) and its other steps.
        _own_s=prefill_per_token_s * (s.prompt_tokens + dispatch_burst_tokens(sched, rps, s, step_s))
        + (pl.col("_prompt_steps") - 1) * chunk_s,
        _own_p_s=pl.col("prefill_tail_s")
        + prefill_per_token_s * dispatch_burst_tokens(sched, rps, s, step_s, sv.LATENCY_PERCENTILE)
        + (pl.col("_prompt_steps_p") - 1) * chunk_p_s,
    )
    step_p_s = pl.col("_step_p_s")
    # The first token's delays, (mean, 99th percentile) each, independent of one another: the steps around it,
    # the prompt's own prefill, the prompts ahead, a free slot, the harness's window. The 99th percentile of their
    # sum is not the sum of theirs (sv.percentile_of_sum).
    # Multi-step scheduling: the engine admits prompts only between runs of steps_per_schedule steps, so a prompt
    # also waits out the rest of the run it arrived in (uniform over its other steps).
    run_s, run_p_s = (step * (sched.steps_per_schedule - 1) for step in (step_s, step_p_s))
    # Attention-DP balancing: the prompt waits out the rest of the hold cycle it arrived in (uniform over it).
    hold = balance_hold_steps(sched, rps, step_s)
    # Scheduling ahead: the batch after the running step was made when it started; the prompt waits that one too.
    ahead = float(sched.schedule_ahead)
    waits = (
        (pl.col("_queue_wait_s"), pl.col("_queue_wait_p_s")),
        (pl.col("_slot_wait_s"), pl.col("_slot_wait_p_s")),
        (pl.lit(sched.dispatch_window_s / 2), pl.lit(sv.LATENCY_PERCENTILE * sched.dispatch_window_s)),
        (run_s / 2, sv.LATENCY_PERCENTILE * run_p_s),
        (hold * step_s / 2, sv.LATENCY_PERCENTILE * hold * step_p_s),
        (ahead * step_s, ahead * step_p_s),
    )
    own = (pl.col("_own_s"), pl.col("_own_p_s"))
    frame = frame.with_columns(
        _one_step_p_s=sv.one_step_percentile_seconds(step_s, prefill_per_token_s, rps, s.prompt_tokens, e2)
    )
    delays = ((step_s * pl.col("_carry"), pl.col("_one_step_p_s") * pl.col("_carry")), own, *waits)
    frame = frame.with_columns(
        load_fraction=grid_rho,
        requests_per_s_per_replica=rps,
        recomputed_tokens_per_request=pl.col("recomputed_prompt_tokens") * full,
        tpot_mean_ms=step_s * 1000,
        ttft_mean_ms=sv.ttft_seconds(own[0], step_s, sum(mean for mean, _ in waits), load_p) * 1000,
        tpot_ms=step_p_s * 1000,
        ttft_ms=sv.percentile_of_sum(*zip(*delays, strict=True)) * 1000,
        sequences=sequences,
        kv_cache_gb=sequences * pl.col("kv_gb_per_sequence"),
        tokens_per_s_per_replica=rps * s.output_tokens,
        ttft_cause=_ttft_cause(),
    )
    intermediate = [name for name in frame.columns if name.startswith("_") and name not in columns]
    return frame.drop(intermediate).with_columns(
        memory_per_chip_gb=pl.col("weights_gb") + pl.col("kv_cache_gb") + pl.col("overhead_gb"),
        tokens_per_s_per_chip=pl.col("tokens_per_s_per_replica") / pl.col("tensor_parallel"),
        fits_in_memory=(pl.col("sequences") <= pl.col("max_sequences")) & (pl.col("max_sequences") >= 1),
        meets_ttft=pl.lit(True) if s.ttft_ms is None else pl.col("ttft_ms") <= s.ttft_ms,
        meets_tpot=pl.lit(True) if s.tpot_ms is None else pl.col("tpot_ms") <= s.tpot_ms,
    )


def _ttft_cause() -> pl.Expr:
    """The first token's delay at its 99th percentile that load has grown most: "slot" (a free sequence slot),
    "queue" (the prompts ahead) or "prefill" (the prompt's own beyond its prefill alone: the steps it shares with
    decoding, the prompts batched with it). The prefill alone is there at any load, so it is not counted: a
    100,000-token prompt's 1.7 s is the longest delay, but what breaks a 2 s target is the queue ahead of it."""
    slot, queue, own = (
        pl.col("_slot_wait_p_s"),
        pl.col("_queue_wait_p_s"),
        pl.col("_own_p_s") - pl.col("prefill_tail_s"),
    )
    return (
        pl.when((slot >= queue) & (slot >= own))
        .then(pl.lit("slot"))
        .when(queue >= own)
        .then(pl.lit("queue"))
        .otherwise(pl.lit("prefill"))
    )


def load_curve(frame: pl.DataFrame, s: ServeScenario, sched: Scheduler = Scheduler()) -> pl.DataFrame:
    """Every configuration at every load of ``LOAD_GRID``."""
    grid = pl.DataFrame({"rho": LOAD_GRID})
    return at_load(frame.join(grid, how="cross"), s, pl.col("rho"), sched).drop("rho")


def _ok() -> pl.Expr:
    return pl.col("fits_in_memory") & pl.col("within_token_budget") & pl.col("meets_ttft") & pl.col("meets_tpot")


def limits(curve: pl.DataFrame) -> pl.DataFrame:
    """Per configuration, the highest load of the curve meeting memory and both targets (``max_load_fraction``,
    null if none), which limit binds first as load rises (``limit``) and, where the first token breaks its target,
    its longest delay there (``limit_cause``: :func:`_ttft_cause`)."""
    ok = _ok()
    keys = KEYS
    binding = (
        pl.when(~pl.col("fits_in_memory"))
        .then(pl.lit("memory"))
        .when(~pl.col("within_token_budget"))
        .then(pl.lit("step token budget"))
        .when(~pl.col("meets_tpot"))
        .then(pl.lit("per-token target"))
        .when(~pl.col("meets_ttft"))
        .then(pl.lit("first-token target"))
        .otherwise(pl.lit("compute"))
    )
    summary = (
        curve.with_columns(binding=binding)
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("load_fraction").filter(ok).max().alias("max_load_fraction"),
            pl.col("binding").filter(~ok).first().fill_null("compute").alias("limit"),
            pl.col("ttft_cause").filter(~ok).first().alias("limit_cause"),
            pl.col("fits_in_memory").any().alias("any_fits"),
            (pl.col("fits_in_memory") & pl.col("meets_tpot")).any().alias("any_tpot"),
            ok.any().alias("any_ok"),
        )
        .with_columns(limit_cause=pl.when(pl.col("limit") == "first-token target").then("limit_cause"))
    )
    return summary


def refined_limits(frame: pl.DataFrame, s: ServeScenario, sched: Scheduler, lim: pl.DataFrame) -> pl.DataFrame:
    """``lim`` (:func:`limits`) for the configurations of ``frame``, each ``max_load_fraction`` refined between it
    and the curve's next load in ``REFINE_STEPS`` steps: the highest load before the first that breaks a limit.
    Near a limit latency climbs steeply (queues for a slot or for the step's token budget grow as 1 / (1 - load)),
    so one grid step can span a first token well inside its target and one past it; read at the coarse load, a
    replica looks less loaded (and its latency lower) than the limits allow."""
    lim = lim.join(frame.select(KEYS), on=KEYS, how="semi")
    step = LOAD_GRID[1] - LOAD_GRID[0]
    offsets = pl.DataFrame({"_offset": [step * k / REFINE_STEPS for k in range(1, REFINE_STEPS)]})
    start = frame.join(lim.select(*KEYS, "max_load_fraction"), on=KEYS).filter(
        pl.col("max_load_fraction") < LOAD_GRID[-1]
    )
    if start.height == 0:
        return lim
    fine = at_load(start.join(offsets, how="cross"), s, pl.col("max_load_fraction") + pl.col("_offset"), sched).sort(
        [*KEYS, "_offset"]
    )
    within = _ok().cast(pl.Int8).cum_min().over(KEYS) == 1  # every load up to this one meets the limits
    refined = fine.group_by(KEYS).agg(pl.col("_offset").filter(within).max().alias("_gain"))
    return (
        lim.join(refined, on=KEYS, how="left")
        .with_columns(max_load_fraction=pl.col("max_load_fraction") + pl.col("_gain").fill_null(0.0))
        .drop("_gain")
    )
