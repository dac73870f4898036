"""Serving formulas: memory, and a replica under continuous batching with chunked prefill.

* Weights: params x bytes per weight (bf16 2, fp8/int8 1, fp4 0.5625: NVFP4 keeps an FP8 scale per 16 values,
  int4 0.5), split over the tensor-parallel degree t.
* KV cache per token: 2 (K and V) x layers x KV heads x head size x bytes per KV element (multi-head latent
  attention: layers x its latent and rotary key, :attr:`workbook.serving.scenario.ServeScenario.kv_bytes_per_token`,
  its decoded attention over that latent: :attr:`~workbook.serving.scenario.ServeScenario.decode_attention_dim`); a
  sequence holds prompt + output tokens at its end, and a decode step's sequences hold P + E[O^2] / (2 E[O]) on average
  (P + O/2 for answers of one length; longer answers stay in flight longer: :func:`decode_context_tokens`).
* One request costs the replica, in seconds of its time (t chips, dense peak x compute efficiency ``eta_c``,
  HBM bandwidth x the streaming efficiency ``eta_bw`` measured for the chip's vendor, :data:`HBM_STREAM_EFFICIENCY`;
  L layers, attention width d):
  prefill  = (2 N_active P + 2 L d E[P^2]) / (t peak eta_c) + P c   (compute-bound; causal attention is quadratic;
             c = tensor-parallel all-reduce per token)
  decode   = O x ((2 N_active + 4 L d C) / (t peak eta_c) + c)   (the FLOPs of its O output tokens; C the mean
             decode context above)
  KV reads = O x kv_per_token x C / (t bw eta_bw s)  (each decode step reads the sequence's cache; paged reads at
             s = :data:`KV_READ_SHARE` of the weights' streaming rate; an FP8 cache at the cost the stack measured
             against a BF16 cache's, where it did: :func:`workbook.serving.replica.kv_read_width`)
  c = 2 all-reduces per layer of the token's hidden state over the tensor-parallel chips, at the link's one-way
  bandwidth x the all-reduce efficiency ``eta_ar`` (calibrated: :mod:`workbook.serving.calibration`).
* An all-reduce costs a latency plus its bytes over a bandwidth, in one of two regimes, as collective libraries
  choose by message size (NCCL's low-latency protocols and one-shot kernels for small messages, its ring / NVLS
  algorithms for large ones): a decode step's few tokens pay ``SMALL_ALLREDUCE_LATENCY_S`` per all-reduce in every
  step (``PCIE_ALLREDUCE_LATENCY_S`` over PCIe; :func:`allreduce_latency_seconds_per_step`, part of the step's fixed
  time beside the weight read; overridable in :class:`workbook.serving.scenario.ServeAssumptions`) and
  travel at ``eta_ar`` of the link; a long prompt's tokens travel together, at the link's full one-way speed after
  ``BULK_ALLREDUCE_LATENCY_S`` (:func:`prompt_allreduce_seconds_per_token`).
* Continuous batching with chunked prefill: every step reads the weights once and pays the engine's fixed cost
  (``weights_s`` = weight bytes per chip / (bw eta_bw) + the stack's step overhead a layer x layers, fitted on its
  batch-1 steps: :func:`workbook.serving.replica.step_overhead`) and, at load lambda requests/s, spends lambda x
  step x (decode + KV reads + prefill) on the requests' work: prefill chunks steal time from decode steps instead
  of waiting for an idle replica. So step = weights_s + rho x step, i.e. **step = weights_s / (1 - rho)**, with
  rho = lambda / capacity and **capacity = 1 / (decode + KV reads + prefill)** requests/s. Time per output token =
  step. The KV reads add to the decode FLOPs rather than hide under them: in each layer the attention kernels
  (memory-bound: they stream the sequences' cache) run after the matmuls (compute-bound at these batches), not
  beside them.
  Weight streaming is not overlapped with the work. A single FP8 GEMM does overlap them (DeepGEMM's H800 table,
  github deepseek-ai/DeepGEMM README @a6d97a1: at 128 tokens, 0.74-0.87x the sum of its weight read and its compute,
  like (read^p + compute^p)^(1/p) with p about 2), but charged that way the refit compute efficiency falls 10-16% and
  the held-out results trade errors (notebooks/validation.ipynb: Llama 2 70B Interactive tightens, 405B on H200 and
  Blackwell move away); the sum stands in for something else as well, not settled.
* Sequences in flight (Little's law): B = lambda x O x step; their KV cache must fit next to the weights.
* Time to first token = the rest of the running step (half a step on average) + the prompt's prefill + the step
  that emits the first token, plus the wait for a free sequence slot: the replica holds at most S sequences
  (memory, or the server's batch limit) and each holds its slot for O steps, an M/M/c queue with c = S servers
  (Erlang C: exact up to 64 slots, in Halfin and Whitt's many-server form above; negligible until the slots are
  nearly all taken), plus the wait for the prefill of the prompts ahead: steps that carry prompts last longer and
  a prompt more often arrives during one, an M/G/1 queue of prefill work (:func:`prefill_wait_seconds`; it
  matters for long prompts: 5,000-token prompts on a 70B TP2 replica wait ~0.2 s at 70% load).

Percentiles (latency targets, like MLPerf's server limits, are 99th percentiles: ``LATENCY_PERCENTILE``):
* A step carries the weights once plus each sequence's share of the work (its decode, its KV reads and, through
  chunked prefill, one O-th of a prompt's prefill): **step(B) = weights_s + a B** with a = (decode + KV reads
  + prefill) / O. A request's time per output token is the mean step over its O steps, so its tail comes from the
  batch it lives with: the sequences in flight fluctuate around their mean B like a Poisson count (infinite-server
  occupancy), B_p = B + z_p sqrt(B), and never exceed the slots S (a full replica queues instead:
  its step stops growing and the wait moves into the first token).
* First token at the percentile: its delays are the slot wait (M/M/c: P(W > t) = C exp(-(c mu - lambda) t), C the
  probability of waiting, c mu - lambda = (S - B) / hold), the wait for the prompts ahead, the prefill of the
  percentile prompt and the steps around it; the percentile of their sum is not the sum of their percentiles
  (:func:`percentile_of_sum`).
For a mixture of experts the weights read per step grow from the active to the total parameters as the batch
touches more experts: min(total, active x B).
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist, median

import polars as pl

from workbook.model import flops
from workbook.model.units import FMA_FLOPS

BYTES_PER_ELEMENT = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5625, "int8": 1.0, "int4": 0.5}
KV_TENSORS = 2  # keys and values
ALLREDUCES_PER_LAYER = 2  # Megatron tensor parallel: one after attention, one after the MLP
ACTIVATION_BYTES = 2.0  # all-reduced activations travel in BF16
LINK_DIRECTIONS = 2  # link figures are bidirectional totals; a ring all-reduce sends in one direction
LATENCY_PERCENTILE = 0.99
# All-reduce latencies on NVLink (published microbenchmarks on H100; used for every GPU, stated in the card):
# * small messages: 10 us (vLLM PR #22086, H100 TP2, all-reduce + RMSNorm of 32-64 tokens x 8192 (0.5-1 MB):
#   10-12 us; PR #24111, H100 TP6, 0.5 MB: 13 us with its best kernel, 23 us with NCCL);
# * large messages: 45 us, then the link's one-way bandwidth (vLLM PR #42324, Hopper NCCL all-reduce of 8-128 MiB:
#   76-561 us, a line through them gives 44 us + 454 GB/s bus bandwidth; nccl-tests on 8x H100 reach 460-480 GB/s
#   bus bandwidth at large sizes against NVLink 4's 450 GB/s one way, docs.alayanew.com "NCCL-tests in practice").
# * over PCIe (L4, L40S, A10G cards: no NVLink), small messages: 40 us (NCCL issue #1530, 8x RTX 4090 on PCIe,
#   all_reduce_perf of 8 bytes: 40-42 us; issue #1439, 8x RTX 3090: 54 us).
# The fraction of the HBM's datasheet bandwidth a step's weights stream at, per vendor: BabelStream on large arrays.
# NVIDIA: H100 SXM Copy 2.90 / Triad 2.97 / Dot 3.18 TB/s of 3.35 (87-95%), H200 Triad 4.15 of 4.8 (86%) (github
# Azure/AI-benchmarking-guide@8fd0c6e1 Azure_Results/ND_H100_v5_results.md, ND_H200_v5_results.md): 0.9. AMD: MI300X
# Copy 4.26 / Triad 3.95 TB/s of 5.3 (80% / 75%; github ROCm/system-acceptance-docs@b754ce72
# docs/mi300x/performance-bench.rst): 0.78. Other vendors (TPU, Trainium): no measurement found, NVIDIA's is used.
# What else a step costs at batch 1 is the stack's fixed step overhead (workbook.serving.calibration).
HBM_STREAM_EFFICIENCY = {"nvidia": 0.9, "amd": 0.78}
HBM_STREAM_DEFAULT = 0.9
HBM_STREAM_BASIS = "BabelStream on large arrays: H100/H200 86-95% of the datasheet HBM bandwidth, MI300X 75-80%"
# Paged KV-cache reads in decode attention reach less than streamed weights: scattered blocks of a few tokens per
# layer. Paged-attention decode kernels reach ~2.4 TB/s on H100, 72% of 3.35 (KernelBench "03_paged_attention"
# reference, vLLM PagedAttention v2 / FlashInfer; huggingface.co/datasets/Infatoshi/kernelbench-hard-problems), 0.8
# of the 0.9 weights stream at; the same share is used on every chip.
KV_READ_SHARE = 0.8


def hbm_stream_efficiency(vendor: str | None) -> float:
    """Fraction of the datasheet HBM bandwidth streamed weights reach on ``vendor``'s chips (measured copies)."""
    return HBM_STREAM_EFFICIENCY.get(vendor or "", HBM_STREAM_DEFAULT)


# What TensorRT-LLM has in use beside the weights when it sizes its KV cache (CUDA context and libraries, the engine's
# activations for its token budget, runtime and decoder buffers for its batch limit, NCCL), read off start-up logs as
# the memory the device reports, less the memory free before the cache, less the weights as the model counts them
# (every parameter at its precision's bytes: the FP16 embeddings' extra bytes are the engine's): (reported bytes, free
# bytes, the model's weights bytes per chip).
TRTLLM_STARTUP_LOGS = (
    # trtllm-serve 1.0.0rc1, one B200 (192.27e9 reported), Llama 2 70B FP4, 2,048 sequences, 3,584 tokens a step:
    # "available: 136.23 GiB" (github mlcommons/inference_results_v5.1@965182b0 closed/CoreWeave/log_70B_serve.txt)
    (192.27e9, 136.23 * 2**30, 68.98e9 * BYTES_PER_ELEMENT["fp4"]),
    # NVIDIA's MLPerf harness on TensorRT-LLM 0.9, two H100 NVL ("vram ... _num_bytes=100485038080"), Llama 2 70B FP8
    # at TP2, 4,096 tokens a step, 1,536 and 1,300 sequences: "Allocate 52617543680 bytes for k/v cache" and
    # 53036974080, at kvcache_free_gpu_mem_frac 0.9 (github mlcommons/inference_results_v4.0@3c4a1cf1 closed/Azure/
    # outputllama.log and outputllamaoffline.log)
    (100_485_038_080, 52_617_543_680 / 0.9, 68.98e9 / 2),
    (100_485_038_080, 53_036_974_080 / 0.9, 68.98e9 / 2),
    # TensorRT-LLM 0.19 (PyTorch backend), one RTX 5090, Llama 3.1 8B FP8: "total: 31.84 GiB, available: 17.83 GiB"
    # (github NVIDIA/TensorRT-LLM issue #4275; the card's total as CUDA reports it)
    (31.84 * 2**30, 17.83 * 2**30, 8.03e9),
)
# Their median, 7.1 GB (7.0-7.5 GB each): the runtime the TensorRT-LLM stacks' KV cache is sized after. A 7B engine
# for 4,096 sequences keeps ~10 GB, most of it decoder buffers (TensorRT-LLM docs, perf-benchmarking, 0.12).
TRTLLM_RUNTIME_BYTES = median(reported - free - weights for reported, free, weights in TRTLLM_STARTUP_LOGS)

SMALL_ALLREDUCE_LATENCY_S = 10e-6
BULK_ALLREDUCE_LATENCY_S = 45e-6
PCIE_ALLREDUCE_LATENCY_S = 40e-6  # the statistic latency targets (and MLPerf's server limits) set


def _maximum(a, b):
    """max for floats and polars expressions alike."""
    if isinstance(a, pl.Expr) or isinstance(b, pl.Expr):
        return pl.max_horizontal(a, b)
    return max(a, b)


def _minimum(a, b):
    if isinstance(a, pl.Expr) or isinstance(b, pl.Expr):
        return pl.min_horizontal(a, b)
    return min(a, b)


def _log(x):
    return x.log() if isinstance(x, pl.Expr) else math.log(x)


def _z(percentile: float) -> float:
    """Standard normal quantile of ``percentile``."""
    return NormalDist().inv_cdf(percentile)


def kv_bytes_per_token(n_layers, n_kv_heads, head_dim, kv_bytes):
    return KV_TENSORS * n_layers * n_kv_heads * head_dim * kv_bytes


SIGMA_STEP = 0.02  # the scan over a lognormal's sigma (:func:`length_shape`) before bisecting
SIGMA_MAX = 6.0


def _truncated_moment(mu: float, sigma: float, cap: float, k: int) -> float:
    """E[X^k | X <= cap] of ln X normal (mu, sigma): exp(k mu + k^2 sigma^2 / 2) Phi((ln cap - mu - k sigma^2) /
    sigma) / Phi((ln cap - mu) / sigma)."""
    full = math.exp(k * mu + k * k * sigma * sigma / 2)
    if math.isinf(cap):
        return full
    normal = NormalDist()
    log_cap = math.log(cap)
    return full * normal.cdf((log_cap - mu - k * sigma * sigma) / sigma) / normal.cdf((log_cap - mu) / sigma)


def _mu_for_percentile(p99: float, sigma: float, cap: float) -> float:
    """mu putting ``p99`` at the 99th percentile of the lognormal (mu, sigma) cut at ``cap``: Phi((ln p99 - mu) /
    sigma) = 0.99 Phi((ln cap - mu) / sigma), by bisection (the left side falls faster as mu rises)."""
    z = _z(LATENCY_PERCENTILE)
    if math.isinf(cap):
        return math.log(p99) - z * sigma
    normal = NormalDist()
    lo, hi = math.log(p99) - 12 * sigma, math.log(p99)
    for _ in range(60):
        mid = (lo + hi) / 2
        short = normal.cdf((math.log(p99) - mid) / sigma) - LATENCY_PERCENTILE * normal.cdf(
            (math.log(cap) - mid) / sigma
        )
        lo, hi = (mid, hi) if short > 0 else (lo, mid)
    return (lo + hi) / 2


@functools.lru_cache(maxsize=1024)
def length_shape(mean: float, p99: float | None = None, cap: float = math.inf) -> tuple[float, float] | None:
    """(mu, sigma) of lengths lognormal with this mean and 99th percentile, none longer than ``cap`` (the context
    window: an engine refuses a longer request), the least spread of those that fit (the smaller sigma); (ln mean, 0)
    when no percentile is known (every length the mean); None when no such lognormal exists. Uncut, ln(p99 / mean) =
    z sigma - sigma^2 / 2 has a root only up to p99 = exp(z^2 / 2) = 15x the mean, and the second moment,
    mean^2 exp(sigma^2), climbs without bound toward it (a 99th percentile 16x the mean read as 224x the squared
    mean, where cut at 128k tokens it is 13x). Cut at the cap, the mean falls from the percentile's as sigma grows:
    the first sigma whose mean is the mean's, found on a grid of ``SIGMA_STEP`` and then by bisection; none whose
    median is under one token."""
    if p99 is None or p99 <= mean:
        return (math.log(mean), 0.0)
    if p99 >= cap:
        return None
    if math.isinf(cap):
        z = _z(LATENCY_PERCENTILE)
        spread = z * z - 2 * math.log(p99 / mean)
        if spread < 0:
            return None
        sigma = z - math.sqrt(spread)
        return (math.log(mean) - sigma * sigma / 2, sigma)

    def excess(sigma: float) -> float:
        return _truncated_moment(_mu_for_percentile(p99, sigma, cap), sigma, cap, 1) - mean

    steps = round(SIGMA_MAX / SIGMA_STEP)
    high = next((i * SIGMA_STEP for i in range(1, steps + 1) if excess(i * SIGMA_STEP) <= 0), None)
    if high is None:
        return None
    low = high - SIGMA_STEP
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if excess(mid) > 0 else (low, mid)
    mu = _mu_for_percentile(p99, high, cap)
    return (mu, high) if mu >= 0 else None  # a median under one token is no length distribution


def moment(mean, p99=None, k: int = 2, cap: float = math.inf):
    """E[X^k] of lengths with this mean and 99th percentile, at most ``cap``, taken lognormal
    (:func:`length_shape`); mean^k when no percentile is known (every length the mean). Lengths no lognormal fits
    are refused where the scenario is made (:meth:`workbook.serving.scenario.ServeScenario.__post_init__`)."""
    if p99 is None or p99 <= mean:
        return mean**k
    shape = length_shape(mean, p99, cap)
    if shape is None:
        raise ValueError(f"no lognormal lengths have a mean of {mean} and a 99th percentile of {p99} within {cap}")
    return _truncated_moment(*shape, cap, k)


def second_moment(mean, p99=None, cap: float = math.inf):
    """E[X^2] of lengths with this mean and 99th percentile, at most ``cap`` (:func:`moment`)."""
    return moment(mean, p99, 2, cap)


def cache_peakedness(
    prompt_tokens, prompt_tokens_p99, output_tokens, output_tokens_p99, prompt_cap=math.inf, output_cap=math.inf
):
    """Variance over mean of the KV-cache tokens in flight, counted in sequences of the mean context, relative to
    that of the sequences themselves: a cache is full when its tokens are, not its sequences. Each request holds
    P + s tokens at its s-th step for its O steps, so with Poisson arrivals the tokens in flight are shot noise with
    mean lambda E[int L] and variance lambda E[int L^2] (Campbell's theorem), int L = P O + O^2 / 2 and
    int L^2 = P^2 O + P O^2 + O^3 / 3 over the request's steps: **E[int L^2] E[O] / E[int L]^2** (1.05 when every
    prompt and answer is the mean: the context grows; prompt and answer lengths independent, lognormal through
    their mean and 99th percentile, each at most its cap, :func:`moment`)."""
    p = [moment(prompt_tokens, prompt_tokens_p99, k, prompt_cap) for k in (1, 2)]
    o = [moment(output_tokens, output_tokens_p99, k, output_cap) for k in (1, 2, 3)]
    held = p[0] * o[0] + o[1] / 2
    return (p[1] * o[0] + p[0] * o[1] + o[2] / 3) * o[0] / held**2


def decode_context_tokens(prompt_tokens, output_tokens, output_tokens_squared=None):
    """Mean context of the sequences in a decode step: each step of a request reads its prompt and the tokens
    decoded so far, so over its O steps it averages P + O/2, and a batch holds requests in proportion to their
    steps (a long answer stays in flight longer): **P + E[O^2] / (2 E[O])** (``output_tokens_squared`` = E[O^2];
    P + O/2 when every answer is O tokens). Prompt and answer lengths are taken independent."""
    squared = output_tokens**2 if output_tokens_squared is None else output_tokens_squared
    return prompt_tokens + squared / (2 * output_tokens)


def kv_cache_bytes(batch, kv_bytes_per_token_, prompt_tokens, output_tokens, live: bool = False, output_squared=None):
    """KV cache of ``batch`` sequences: prompt + output tokens each at the end, their mean decode context while
    they decode (``live``, what a decode step reads: :func:`decode_context_tokens`)."""
    if live:
        return batch * kv_bytes_per_token_ * decode_context_tokens(prompt_tokens, output_tokens, output_squared)
    return batch * kv_bytes_per_token_ * (prompt_tokens + output_tokens)


def weights_read_bytes(params, active_params, batch, weight_bytes):
    """Bytes of weights one decode step reads: the active experts of every sequence, at most all weights."""
    return weight_bytes * _minimum(active_params * batch, params)


def decode_step_seconds(
    weight_bytes, kv_bytes, batch, active_params, chips, bandwidth, peak, bw_efficiency, flops_efficiency
):
    """Seconds per decode step for ``batch`` sequences on ``chips``: (memory, compute) times of the roofline."""
    memory = (weight_bytes + kv_bytes) / (chips * bandwidth * bw_efficiency)
    compute = FMA_FLOPS * active_params * batch / (chips * peak * flops_efficiency)
    return memory, compute


def allreduce_seconds_per_token(n_layers, hidden_dim, chips, link_bytes_per_s, efficiency=1.0):
    """Tensor-parallel communication per token: 2 ring all-reduces per layer of hidden x 2 bytes, each sending
    2 (t-1)/t of the message over the chip's link (NVLink, ICI, or PCIe for L4/L40S/A10G cards). The accelerator
    table's link figure is bidirectional (as in :mod:`workbook.model.parallelism`): a ring sends one way, at half,
    and an inference all-reduce reaches ``efficiency`` of that (not overlapped with the matmuls around it)."""
    ring = 2 * (chips - 1) / chips
    one_way = link_bytes_per_s / LINK_DIRECTIONS * efficiency
    return n_layers * ALLREDUCES_PER_LAYER * hidden_dim * ACTIVATION_BYTES * ring / one_way


def allreduce_latency_seconds_per_step(n_layers, latency_s=SMALL_ALLREDUCE_LATENCY_S):
    """The fixed part of a step's tensor-parallel all-reduces: 2 per layer, each ``latency_s`` however few tokens
    the step carries (the latency a decode step of one sequence pays)."""
    return n_layers * ALLREDUCES_PER_LAYER * latency_s


def prompt_allreduce_seconds_per_token(
    n_layers,
    small_per_token,
    bulk_per_token,
    prompt_tokens,
    extra_latency_s=BULK_ALLREDUCE_LATENCY_S - SMALL_ALLREDUCE_LATENCY_S,
):
    """Per prompt token, its all-reduces: a prompt's tokens travel in one message per all-reduce, large enough for
    the bandwidth-optimal algorithm (``bulk_per_token``, at the link's speed) once its extra latency over the
    low-latency algorithm's (``extra_latency_s``) is spread over the prompt; a short prompt stays with the
    low-latency one (``small_per_token``), as decode tokens do. The cheaper of the two."""
    extra = n_layers * ALLREDUCES_PER_LAYER * extra_latency_s / prompt_tokens
    return _minimum(small_per_token, bulk_per_token + extra)


def pipeline_hop_seconds_per_token(stages, hidden_dim, one_way_bytes_per_s):
    """Pipeline parallel: each of the stages - 1 boundaries sends the token's hidden state (BF16) to the next
    stage's chips at the link's one-way bandwidth; not overlapped with the stages' work (conservative: it is small,
    32 KB per token for a 16k-wide model, 0.7 us at 400 Gb/s)."""
    return (stages - 1) * hidden_dim * ACTIVATION_BYTES / one_way_bytes_per_s


def request_seconds(
    shape,
    prompt_tokens,
    output_tokens,
    chips,
    peak,
    eta_c,
    comm_per_token,
    prompt_tokens_squared,
    output_squared=None,
    prompt_comm_per_token=None,
):
    """(prefill, decode) replica-seconds of compute one request costs: the matmuls' 2 N_active per token plus
    attention (:mod:`workbook.model.flops`: quadratic in the prompt for prefill, over the mean decode context
    (:func:`decode_context_tokens`) for each decoded token), and the tensor-parallel communication per token.
    ``shape``: (active params, layers, attention dim, decode attention dim: the width a decoded token's attention
    costs, :attr:`workbook.serving.scenario.ServeScenario.decode_attention_dim`); ``prompt_tokens_squared``: E[P^2]
    of the prompt mix; ``output_squared``: E[O^2] of the answers (None: every answer O tokens)."""
    active_params, n_layers, attention_dim, decode_attention_dim = shape
    rate = chips * peak * eta_c
    prefill = (
        FMA_FLOPS * active_params * prompt_tokens
        + flops.prefill_attention_flops(n_layers, attention_dim, prompt_tokens_squared)
    ) / rate + prompt_tokens * (comm_per_token if prompt_comm_per_token is None else prompt_comm_per_token)
    context = decode_context_tokens(prompt_tokens, output_tokens, output_squared)
    decode_attention = flops.decode_attention_flops(n_layers, decode_attention_dim, context)
    decode = output_tokens * ((FMA_FLOPS * active_params + decode_attention) / rate + comm_per_token)
    return prefill, decode


def kv_read_seconds(kv_bytes_per_token_, prompt_tokens, output_tokens, chips, bandwidth, eta_bw, output_squared=None):
    """Replica-seconds a request spends, on average, reading its KV cache over its decode steps: E[O] steps of
    the mean decode context (:func:`decode_context_tokens`)."""
    context = decode_context_tokens(prompt_tokens, output_tokens, output_squared)
    return output_tokens * kv_bytes_per_token_ * context / (chips * bandwidth * eta_bw)


def capacity_requests_per_s(prefill_s, decode_s, kv_read_s):
    """Requests/s at which the replica's steps would be entirely work (rho = 1)."""
    return 1 / (decode_s + kv_read_s + prefill_s)


# The shortfall B - K S is positive only for K < B / S finishing requests: while B / S is at most this many, the
# Poisson sum has every such term (exact at any mean); beyond, where that many requests' footprints fit in one step's
# growth, its normal form.
RECOMPUTE_POISSON_TERMS = 40


def recomputed_prompt_tokens(sequences, output_tokens, footprint_tokens):
    """Prompt tokens an engine prefills again per request while its KV cache is full. Each step the B ``sequences``
    in flight add B tokens to the cache; the K requests that finish in it (Poisson, mean B / O, O the
    ``output_tokens``) free their whole footprint S (``footprint_tokens``: prompt and answer), and new prompts have
    taken what was left. A shortfall, B - K S where positive, is made room for by pausing the youngest sequences
    (TensorRT-LLM's max_utilization scheduler, vLLM's and SGLang's preemption by recompute), whose prompts are
    prefilled again when they resume: E[max(0, B - K S)] tokens a step, over the B / O requests that finish in it.
    The cache's block size cancels out: the sequences paused are the newest, each about one prompt's blocks, and
    the new prompts leave less than one prompt's room free, evenly spread. Checked against a step-by-step
    simulation of TensorRT-LLM's scheduler (its pause rule, 64-token blocks, Llama 2 70B's prompt and answer lengths
    on 8-63 GB of cache: the simulated waste is 0.8-1.0x this)."""
    if isinstance(sequences, pl.Expr):  # per row: the sum as one polars expression is hundreds of nodes deep
        return sequences.map_batches(
            lambda column: pl.Series(
                [None if b is None else recomputed_prompt_tokens(b, output_tokens, footprint_tokens) for b in column],
                dtype=pl.Float64,
            ),
            return_dtype=pl.Float64,
        )
    finishing = sequences / output_tokens
    if sequences > RECOMPUTE_POISSON_TERMS * footprint_tokens:  # the normal form of the same expectation
        mean = sequences - footprint_tokens * finishing
        spread = footprint_tokens * math.sqrt(finishing)
        z = mean / spread
        shortfall = mean * _normal_cdf(z) + spread * math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
        return shortfall / finishing
    shortfall, term = 0.0, math.exp(-finishing)
    for k in range(RECOMPUTE_POISSON_TERMS):
        if k:
            term = term * finishing / k
        shortfall += term * max(sequences - k * footprint_tokens, 0.0)
    return shortfall / finishing


def step_seconds(weights_s, load_fraction):
    """Time per output token at ``load_fraction`` rho of capacity: weights_s / (1 - rho)."""
    return weights_s / (1 - load_fraction)


def sequences_in_flight(requests_per_s, output_tokens, step_s):
    """Little's law: requests/s x O steps x seconds per step."""
    return requests_per_s * output_tokens * step_s


def _sqrt(x):
    return x.sqrt() if isinstance(x, pl.Expr) else math.sqrt(x)


def _exp(x):
    return x.exp() if isinstance(x, pl.Expr) else math.exp(x)


def _normal_cdf(x):
    """Standard normal CDF; for expressions through erf by Abramowitz & Stegun 7.1.26 (error < 1.5e-7)."""
    if not isinstance(x, pl.Expr):
        return NormalDist().cdf(x)
    z = x / math.sqrt(2)
    t = 1 / (1 + 0.3275911 * z.abs())
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf_abs = 1 - poly * (-(z * z)).exp()
    return 0.5 * (1 + pl.when(z >= 0).then(erf_abs).otherwise(-erf_abs))


EXACT_ERLANG_SLOTS = 64  # up to this many slots the probability of waiting is computed exactly


def waiting_probability(sequences, max_sequences):
    """Probability that a request finds every sequence slot busy: Erlang C of an M/M/c queue with c =
    ``max_sequences`` slots (whole ones) at a = ``sequences`` busy. Up to ``EXACT_ERLANG_SLOTS`` slots exactly,
    C = T_c c / (c - a) / (sum_{k<c} T_k + T_c c / (c - a)) with T_k = a^k / k!; above, in Halfin & Whitt's (1981)
    many-server form, C = 1 / (1 + beta Phi(beta) / phi(beta)) with beta = (1 - a / c) sqrt(c): within 0.013 of
    exact at 64 slots and 0.003 at 1,024, at any load, but not zero at zero load for a few slots (0.22 for one
    idle slot, which put a lone request behind a phantom queue). Sakasegawa's power-law form, used before, gives
    0.103 for the exact 0.065 at 1,024 slots 95% busy."""
    if not isinstance(sequences, pl.Expr) and not isinstance(max_sequences, pl.Expr):
        slots = math.floor(max_sequences)
        if slots <= EXACT_ERLANG_SLOTS:
            terms = [sequences**k / math.factorial(k) for k in range(slots + 1)]
            top = terms[slots] * slots / (slots - sequences)
            return top / (sum(terms[:slots]) + top)
        return many_server_waiting_probability(sequences, max_sequences)
    a = sequences if isinstance(sequences, pl.Expr) else pl.lit(sequences)
    c = (max_sequences if isinstance(max_sequences, pl.Expr) else pl.lit(max_sequences)).floor()
    # T_1..T_c as a list per row (at most EXACT_ERLANG_SLOTS long): the running product of a / k
    k = pl.int_ranges(1, c.clip(1, EXACT_ERLANG_SLOTS).cast(pl.Int64) + 1)
    terms = (a * k.list.eval(1.0 / pl.element())).list.eval(pl.element().cum_prod())
    last = terms.list.last()
    top = last * c / (c - a)
    exact = top / (1 + terms.list.sum() - last + top)
    return pl.when(c <= EXACT_ERLANG_SLOTS).then(exact).otherwise(many_server_waiting_probability(a, max_sequences))


def many_server_waiting_probability(sequences, max_sequences):
    """Erlang C in Halfin & Whitt's many-server form (:func:`waiting_probability` above its exact range): cheap at
    any slot count, within 0.013 of exact from 64 slots, too high for a few idle slots."""
    beta = (1 - sequences / max_sequences) * _sqrt(max_sequences)
    exponent = beta * beta / 2
    exponent = exponent.clip(upper_bound=700.0) if isinstance(exponent, pl.Expr) else min(exponent, 700.0)
    return 1 / (1 + beta * _normal_cdf(beta) * math.sqrt(2 * math.pi) * _exp(exponent))


def peakedness(load_fraction, prefill_load):
    """Variance over mean of the sequences in flight. Were each held a fixed time, their count would be Poisson
    (peakedness 1), but a sequence is held for its O steps, and every step lasts longer the more sequences it
    carries: more sequences, slower steps, fewer of them finishing, so more in flight. Linearized (the linear noise
    approximation of the birth-death process, van Kampen), arrivals lambda against finishes B / (O x step(B)),
    with the decode work a share rho_d of each step: **Z = 1 / (1 - rho_d)**, rho_d = load - prefill share of it.
    Checked against the engine's simulation (:mod:`workbook.serving.simulation`, tests/serving/test_simulation.py):
    on Llama 2 70B over two H100s with 92% of the slots busy, the p99 first token is 0.3 s without it, 2.0 s with it
    and 4.0 s simulated."""
    peak = 1 / (1 - load_fraction + prefill_load)
    return peak.clip(lower_bound=1.0) if isinstance(peak, pl.Expr) else max(peak, 1.0)


def peaked_waiting_probability(sequences, max_sequences, peak=1.0):
    """Probability of waiting for a slot when the sequences in flight have peakedness ``peak``
    (:func:`peakedness`): Hayward's approximation, Erlang C of the slots and load both divided by the peakedness
    (Fredericks 1980, "Congestion in blocking systems: a simple approximation technique")."""
    return waiting_probability(sequences / peak, max_sequences / peak)


def slot_wait_seconds(sequences, max_sequences, hold_s, waiting=None, peak=1.0):
    """Mean wait for a free sequence slot: M/M/c with c = ``max_sequences`` slots each held ``hold_s``, at
    ``sequences`` slots busy: Wq = C / (c mu - lambda), with c mu - lambda = (slots - busy) / hold and C the
    probability of waiting (``waiting`` where already computed, else :func:`peaked_waiting_probability`). Under
    Hayward's approximation for a peakedness Z, the slots and the load are divided by Z, so the wait is Z times
    that of the probability C."""
    if waiting is None:
        waiting = peaked_waiting_probability(sequences, max_sequences, peak)
    return waiting * hold_s * peak / (max_sequences - sequences)


def first_token_steps(prefill_load=0.0):
    """Steps around a prompt's first token besides its prefill: the rest of the running step and the step that
    carries the prompt and emits the token. Steps carry the prompts' prefill: a fraction ``prefill_load`` u of the
    replica's time (:func:`prefill_wait_seconds`). The step the prompt joins carries it and the prompts that arrived
    during the running step's rest, whose non-prefill part is step x (1 - u) and whose mean rest is step / 2 (the
    length-biased excess is the prefill wait): 3/2 - u/2 steps in all; 3/2 at u = 0."""
    return 1.5 - prefill_load / 2


def ttft_seconds(prefill_s, step_s, wait_s, prefill_load=0.0):
    """Mean time to first token: the steps around it (:func:`first_token_steps`) + the prompt's prefill +
    ``wait_s`` (for a slot, for the prompts ahead)."""
    return step_s * first_token_steps(prefill_load) + prefill_s + wait_s


def percentile_of_sum(means, percentiles):
    """A percentile of the sum of independent delays, from each one's mean and the same percentile of it: the
    means add and the excesses over them add in quadrature, sum(m) + sqrt(sum((p - m)^2)) (exact for normal
    delays). Adding the percentiles themselves would put every delay at its own tail at once. Checked against a
    simulation of a lognormal prompt's prefill plus an M/G/1 wait (an atom at zero and an exponential tail): within
    -2%..+6% of the simulated 99th percentile, where adding the percentiles overshoots by 9-38%
    (tests/model/test_serving_formulas.py). A delay whose percentile is infinite makes the sum infinite."""
    total = sum(means)
    excess = _sqrt(sum((p - m) ** 2 for m, p in zip(means, percentiles, strict=True)))
    if isinstance(total, pl.Expr) or isinstance(excess, pl.Expr):
        return (total + excess).fill_nan(math.inf)
    value = total + excess
    return math.inf if math.isnan(value) else value


def prefill_wait_seconds(
    prefill_per_token_s, prompt_tokens, prompt_tokens_squared, prefill_load, servers=1.0, waiting=None
):
    """Mean wait for the prefill work ahead of a prompt: the steps that carry prompts last longer, a prompt
    arrives more often during a long one (length-biased), and the prompts that arrived before it are prefilled
    first. The prompts are an M/G/1 queue of prefill work (Pollaczek-Khinchine): u = lambda x prefill of the mean
    prompt, **wait = lambda t^2 E[P^2] / (2 (1 - u))**, with t the prefill seconds per token. Infinite at u >= 1.
    Pooled over ``servers`` replicas by a router that sends each prompt to the least busy one: :func:`pooled_wait`
    (one server: the same)."""
    residual_s = prefill_per_token_s * prompt_tokens_squared / (2 * prompt_tokens)
    return pooled_wait(prefill_load, servers, residual_s, waiting)


def pooled_waiting(load, servers):
    """The chance a prompt waits when ``servers`` replicas at ``load`` each share one queue: Erlang C
    (:func:`waiting_probability`) of c servers at c x load busy; the load itself for one (no Erlang terms to build)."""
    if not isinstance(servers, pl.Expr) and servers == 1:
        return load
    return waiting_probability(load * servers, servers)


def pooled_wait(load, servers, residual_s, waiting=None):
    """Mean wait of an M/G/c queue (the Allen-Cunneen form): P(wait) x residual / (c (1 - load)), ``residual_s`` the
    mean residual service time E[S^2] / (2 E[S]), ``waiting`` P(wait) where already computed (:func:`pooled_waiting`);
    one server gives Pollaczek-Khinchine's. Infinite at load >= 1."""
    if not any(isinstance(x, pl.Expr) for x in (load, servers, residual_s, waiting)) and load >= 1:
        return math.inf
    waiting = pooled_waiting(load, servers) if waiting is None else waiting
    if not any(isinstance(x, pl.Expr) for x in (load, servers, residual_s, waiting)):
        return waiting * residual_s / (servers * (1 - load))
    return pl.when(load < 1).then(waiting * residual_s / (servers * (1 - load))).otherwise(math.inf)


def work_per_sequence_step(prefill_s, decode_s, kv_read_s, output_tokens):
    """Replica-seconds each sequence in the batch adds to a step: one request's work spread over its O steps."""
    return (decode_s + kv_read_s + prefill_s) / output_tokens


def batch_percentile(sequences, max_sequences, percentile=LATENCY_PERCENTILE):
    """Sequences in flight at ``percentile`` of a Poisson count around the mean, at most the slots."""
    return _minimum(_maximum(sequences, sequences + _z(percentile) * sequences**0.5), max_sequences)


def step_percentile_seconds(weights_s, per_sequence_s, sequences, max_sequences, percentile=LATENCY_PERCENTILE):
    """Step time at the batch a request lives with at ``percentile``: weights_s + a x B_p, a the work each sequence
    adds to a step (its decode; the prefill of the prompts arriving meanwhile spreads on its own,
    :func:`prefill_burst_seconds`)."""
    return weights_s + per_sequence_s * batch_percentile(sequences, max_sequences, percentile)


def slot_wait_percentile_seconds(
    sequences, max_sequences, hold_s, percentile=LATENCY_PERCENTILE, waiting=None, peak=1.0
):
    """Wait for a free slot at ``percentile``: M/M/c tail P(W > t) = C exp(-(c mu - lambda) t), with
    C the probability of waiting (``waiting``, else :func:`peaked_waiting_probability`) and c mu - lambda =
    (slots - busy) / (Z hold) under Hayward's approximation (:func:`slot_wait_seconds`); zero while fewer than
    1 - percentile of the requests wait at all."""
    rate = (max_sequences - sequences) / (hold_s * peak)
    if waiting is None:
        waiting = peaked_waiting_probability(sequences, max_sequences, peak)
    return _log(_maximum(waiting / (1 - percentile), 1.0)) / rate


POISSON_QUANTILE_TERMS = 48  # counts tried by :func:`poisson_quantile`; beyond, the normal form is the larger


def _poisson_cdf(k: int, mean: float) -> float:
    term = total = math.exp(-mean)
    for j in range(1, k + 1):
        term *= mean / j
        total += term
    return total


@functools.lru_cache(maxsize=8)
def _poisson_thresholds(percentile: float) -> tuple[float, ...]:
    """The means at which the Poisson quantile at ``percentile`` steps from k - 1 to k, for k = 1 to
    ``POISSON_QUANTILE_TERMS``: P(N <= k - 1) = percentile, by bisection (it falls as the mean grows)."""
    thresholds = []
    for k in range(1, POISSON_QUANTILE_TERMS + 1):
        low, high = 0.0, 10.0 * k + 10.0
        for _ in range(80):
            mid = (low + high) / 2
            low, high = (mid, high) if _poisson_cdf(k - 1, mid) >= percentile else (low, mid)
        thresholds.append(high)
    return tuple(thresholds)


def poisson_quantile(mean, percentile=LATENCY_PERCENTILE, growth=0.0):
    """The smallest count k with P(N <= k) >= ``percentile`` for N Poisson of ``mean`` + k x ``growth``, up to
    ``POISSON_QUANTILE_TERMS`` (zero while exp(-mean) >= percentile: fewer than 1 - percentile see any): the number
    of k whose mean + k x growth is above the mean at which the quantile steps from k to k + 1
    (:func:`_poisson_thresholds`). ``growth`` < 1: a count that draws more of itself, as each long prompt a request
    meets stretches its lifetime and so the prompts it meets (0: a plain Poisson quantile)."""
    thresholds = _poisson_thresholds(percentile)
    if not isinstance(mean, pl.Expr) and not isinstance(growth, pl.Expr):
        return sum(mean + k * growth > m for k, m in enumerate(thresholds))
    return pl.sum_horizontal((mean + k * growth > m).cast(pl.Float64) for k, m in enumerate(thresholds))


def compound_poisson_excess(count_mean, size_mean, size_squared, percentile=LATENCY_PERCENTILE, growth=0.0):
    """Excess over its mean, at ``percentile``, of a sum of N sizes, N Poisson of ``count_mean`` and the sizes
    independent with mean ``size_mean`` and second moment ``size_squared``: the normal form z sqrt(mean E[X^2]),
    but at least the count's own percentile of mean sizes (k_p - mean) E[X], and none where fewer than
    1 - percentile of the sums hold any size at all (k_p = 0). The normal form alone puts a tail on sums that are
    almost always empty (a 100k-token prompt arriving in 0.08% of the steps gave every step's 99th percentile
    a tenth of its prefill) and understates sparse ones (at 0.25 prompts a request's lifetime, a quarter of one
    prompt where 2.5% of requests meet two). ``growth`` u: each size met draws u more on average
    (:func:`poisson_quantile`), so the normal form grows by 1 / (1 - u) and the count's percentile is the
    self-consistent one."""
    k = poisson_quantile(count_mean, percentile, growth)
    normal = _z(percentile) * _sqrt(count_mean * size_squared) / (1 - growth)
    excess = _maximum(normal, (k - count_mean) * size_mean)
    if isinstance(excess, pl.Expr):
        return pl.when(k > 0).then(excess).otherwise(0.0)
    return excess if k > 0 else 0.0


def prefill_burst_seconds(
    prefill_per_token_s,
    prompt_tokens,
    prompt_tokens_squared,
    sequences,
    output_tokens,
    prefill_load,
    percentile=LATENCY_PERCENTILE,
):
    """Excess of a request's time per output token at ``percentile`` over the mean step, from the prompts that
    arrive while it decodes: its O steps carry the prefill of the prompts arriving in its lifetime, about as many
    as the B sequences in flight (Little's law), a compound Poisson sum (:func:`compound_poisson_excess`; normal,
    z t sqrt(B E[P^2]), where many arrive; t the prefill seconds per token). The more of it arrives, the longer the
    request lives and the more arrives still: the excess grows by 1 / (1 - u), u the prefill's share of the time.
    Negligible for Llama 2 70B's 222-token prompts with hundreds in flight; for Llama 3.1 405B's 9,400-token prompts
    with a dozen in flight it doubles the excess of the 99th percentile, toward the engine's simulation
    (:mod:`workbook.serving.simulation`) and the published results (99th percentile 1.2-1.8x the mean)."""
    share = prefill_load.clip(upper_bound=0.99) if isinstance(prefill_load, pl.Expr) else min(prefill_load, 0.99)
    tokens = compound_poisson_excess(sequences, prompt_tokens, prompt_tokens_squared, percentile, share)
    return prefill_per_token_s * tokens / output_tokens


def one_step_percentile_seconds(
    step_s, prefill_per_token_s, requests_per_s, prompt_tokens, prompt_tokens_squared, percentile=LATENCY_PERCENTILE
):
    """One step's length at ``percentile``: the mean step plus the spread of the prompts' prefill it carries, those
    that arrived during the step before it, a compound Poisson sum of lambda x step prompts on average
    (:func:`compound_poisson_excess`). The first token waits out the rest of the running step and the step carrying
    its prompt: single steps, not the average over a request's lifetime that sets the time per output token
    (:func:`step_percentile_seconds`)."""
    tokens = compound_poisson_excess(requests_per_s * step_s, prompt_tokens, prompt_tokens_squared, percentile)
    return step_s + prefill_per_token_s * tokens
