"""Table schemas, declared once (pandera's polars API) and used by the catalog loader.

Every table in ``data/`` has one schema class here. The loader first casts each
column to the schema's dtype (so a bad cell is reported with its file, CSV line
and column), then pandera checks the values (ranges, allowed values, uniqueness).
Columns listed in ``OPTIONAL_DEFAULTS`` may be left out of a user's file and take
the stated default.
"""

from __future__ import annotations

from typing import Optional

import pandera.polars as pa
import polars as pl

PRICING_MODELS = ("on-demand", "spot", "commit-1y", "commit-3y", "capacity-block", "reserved-contract")
FRAMEWORKS = ("pytorch", "jax", "tensorflow")
SUPPORT_LEVELS = ("native", "first-class", "supported", "limited", "unsupported")
PRECISIONS = ("bf16", "fp8", "int8")
SLUG = r"^[a-z0-9][a-z0-9.-]*$"
HEX_COLOUR = r"^#[0-9a-fA-F]{6}$"
# What ``max_job_chips`` rests on: a documented single training job, the largest configuration a vendor documents
# for one workload (no public job found), or our stated assumption.
MAX_JOB_BASES = ("job", "configuration", "assumption")
CAPACITY_BASES = ("documented", "assumption")


def band(stem: str):
    """Row check that a value lies within its own range: ``{stem}_low <= {stem} <= {stem}_high``."""

    @pa.dataframe_check(error=f"{stem}_low <= {stem} <= {stem}_high")
    def ordered(cls, data) -> pl.LazyFrame:
        central = pl.col(stem)
        return data.lazyframe.select((pl.col(f"{stem}_low") <= central) & (central <= pl.col(f"{stem}_high")))

    return ordered


class Kinds(pa.DataFrameModel):
    """Accelerator kinds (GPU, TPU, Trainium...): label, native framework.

    A new kind is a row here plus its rows in frameworks.csv; no code change. ``chart_color`` colours the kind's
    chips in charts where their family (vendor and kind) has no row of its own in palette.csv."""

    kind: str = pa.Field(unique=True, str_matches=SLUG)
    label: str = pa.Field(str_length={"min_value": 1})
    native_framework: str = pa.Field(isin=FRAMEWORKS)
    chart_color: Optional[str] = pa.Field(nullable=True, str_matches=HEX_COLOUR)
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date

    class Config:
        strict = True


class Palette(pa.DataFrameModel):
    """Chart families (vendor and kind: NVIDIA GPU, AMD GPU, Google TPU, AWS Trainium): legend label and the one
    colour each family has in every chart."""

    vendor: str = pa.Field(str_matches=SLUG)
    kind: str = pa.Field(str_matches=SLUG)
    label: str = pa.Field(str_length={"min_value": 1})
    color: str = pa.Field(unique=True, str_matches=HEX_COLOUR)
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date

    class Config:
        strict = True
        unique = ["vendor", "kind"]


class Accelerators(pa.DataFrameModel):
    """One row per chip; dense peak rates; TPU and Trainium counted per chip."""

    accelerator_id: str = pa.Field(unique=True, str_matches=SLUG)
    name: str
    vendor: str = pa.Field(isin=("nvidia", "amd", "google", "aws", "intel"))
    kind: str = pa.Field(str_matches=SLUG)  # one of data/kinds.csv (checked by the loader)
    family: str = pa.Field(str_length={"min_value": 2})  # architecture generation, for charts and leave-one-out checks
    offered: bool
    release_year: int = pa.Field(ge=2015, le=2035)
    bf16_flops_per_s: float = pa.Field(gt=0)
    fp8_flops_per_s: Optional[float] = pa.Field(nullable=True, gt=0)
    int8_ops_per_s: Optional[float] = pa.Field(nullable=True, gt=0)
    fp4_flops_per_s: Optional[float] = pa.Field(nullable=True, gt=0)  # dense FP4 (NVFP4 / MXFP4) tensor rate
    hbm_bytes: float = pa.Field(gt=0)  # the total the device reports (nvidia-smi, rocm-smi), not the datasheet name
    hbm_basis: str = pa.Field(str_length={"min_value": 10})
    hbm_bytes_per_s: float = pa.Field(gt=0)
    scaleup_bytes_per_s: float = pa.Field(gt=0)
    scaleup_domain_chips: int = pa.Field(ge=1)
    # Network between scale-up domains, per chip, one direction, bytes/s (NIC per GPU; DCN per TPU chip) and its source.
    scaleout_bytes_per_s: float = pa.Field(gt=0)
    scaleout_basis: str = pa.Field(str_length={"min_value": 3})
    block_chips: int = pa.Field(ge=1)
    # TPU: the fewest chips a slice holds (1 where single-chip slices exist, else one 4-chip VM host); null elsewhere,
    # where an instance's quote says what is rented
    smallest_slice_chips: Optional[int] = pa.Field(nullable=True, ge=1)
    max_job_chips: int = pa.Field(ge=1)
    max_job_note: str
    max_job_basis: str = pa.Field(isin=MAX_JOB_BASES)
    watts: float = pa.Field(gt=0)
    watts_basis: str
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date
    notes: Optional[str] = pa.Field(nullable=True)

    class Config:
        strict = True


class Prices(pa.DataFrameModel):
    """One row per (accelerator, cloud, region, instance, pricing model), USD per chip-hour."""

    accelerator_id: str = pa.Field(str_matches=SLUG)
    cloud: str = pa.Field(str_matches=SLUG)
    region: str = pa.Field(str_length={"min_value": 1})
    instance_type: str = pa.Field(str_length={"min_value": 1})
    pricing_model: str = pa.Field(isin=PRICING_MODELS)
    usd_per_chip_hour: float = pa.Field(gt=0, le=1000)
    chips_per_instance: int = pa.Field(ge=1)
    price_basis: str
    excluded: bool
    flag: Optional[str] = pa.Field(nullable=True)
    as_of: pl.Date
    as_of_approx: bool
    secondary_source: bool  # quoted second-hand (a blog, a guide), not from the provider's own price list
    source: str = pa.Field(str_length={"min_value": 3})
    notes: Optional[str] = pa.Field(nullable=True)

    class Config:
        strict = True
        unique = ["accelerator_id", "cloud", "region", "instance_type", "pricing_model", "as_of"]


class Capacity(pa.DataFrameModel):
    """Chips one buyer can rent per cloud and pricing model without a negotiated reservation.

    ``cloud`` and ``kind`` may be ``any``; the most specific row wins (cloud first, then kind).
    """

    cloud: str = pa.Field(str_matches=SLUG)
    pricing_model: str = pa.Field(isin=PRICING_MODELS)
    kind: str = pa.Field(str_matches=SLUG)  # a kind in kinds.csv, or any (checked on load)
    max_chips: int = pa.Field(ge=1)
    basis: str = pa.Field(isin=CAPACITY_BASES)
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date
    notes: Optional[str] = pa.Field(nullable=True)

    class Config:
        strict = True
        unique = ["cloud", "pricing_model", "kind"]


class Frameworks(pa.DataFrameModel):
    """Framework x accelerator kind: support, efficiency vs the native stack, porting effort."""

    framework: str = pa.Field(isin=FRAMEWORKS)
    kind: str = pa.Field(str_matches=SLUG)  # one of data/kinds.csv (checked by the loader)
    support: str = pa.Field(isin=SUPPORT_LEVELS)
    efficiency: float = pa.Field(ge=0, le=1.2)
    efficiency_low: float = pa.Field(ge=0, le=1.2)
    efficiency_high: float = pa.Field(ge=0, le=1.2)
    port_weeks: float = pa.Field(ge=0, le=200)
    port_weeks_low: float = pa.Field(ge=0, le=200)
    port_weeks_high: float = pa.Field(ge=0, le=200)
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date

    efficiency_band = band("efficiency")
    port_weeks_band = band("port_weeks")

    class Config:
        strict = True
        unique = ["framework", "kind"]


class FrameworkSwitches(pa.DataFrameModel):
    """Engineer-weeks to rewrite a training codebase from one framework to another."""

    from_framework: str = pa.Field(isin=FRAMEWORKS)
    to_framework: str = pa.Field(isin=FRAMEWORKS)
    weeks: float = pa.Field(ge=0, le=200)
    weeks_low: float = pa.Field(ge=0, le=200)
    weeks_high: float = pa.Field(ge=0, le=200)
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date

    weeks_band = band("weeks")

    class Config:
        strict = True
        unique = ["from_framework", "to_framework"]


CHIP_HOURS_BASES = ("job_total", "wall_clock")


class ReferenceRuns(pa.DataFrameModel):
    """Published training runs and throughput benchmarks used for calibration and backtests."""

    run_id: str = pa.Field(unique=True, str_matches=SLUG)
    model: str
    kind_of_run: str = pa.Field(isin=("full_run", "throughput_benchmark", "mlperf"))
    params: float = pa.Field(gt=0)
    active_params: float = pa.Field(gt=0)
    tokens: Optional[float] = pa.Field(nullable=True, gt=0)
    seq_len: Optional[int] = pa.Field(nullable=True, gt=0)
    n_layers: Optional[int] = pa.Field(nullable=True, gt=0)
    attention_dim: Optional[int] = pa.Field(nullable=True, gt=0)
    accelerator_id: str = pa.Field(str_matches=SLUG)
    chips: Optional[int] = pa.Field(nullable=True, gt=0)
    # Where the chip count is not published: the count the backtest assumes, and why (a stated source).
    chips_assumed: Optional[int] = pa.Field(nullable=True, gt=0)
    chips_assumed_basis: Optional[str] = pa.Field(nullable=True)
    # Why a full run is left out of the time backtest (its published hours include work the model does not count).
    backtest_exclusion: Optional[str] = pa.Field(nullable=True)
    framework: str = pa.Field(isin=FRAMEWORKS)
    precision: str = pa.Field(isin=PRECISIONS)
    reported_chip_hours: Optional[float] = pa.Field(nullable=True, gt=0)
    reported_days: Optional[float] = pa.Field(nullable=True, gt=0)
    reported_mfu: Optional[float] = pa.Field(nullable=True, gt=0, lt=1)
    reported_tokens_per_s_per_chip: Optional[float] = pa.Field(nullable=True, gt=0)
    source: str = pa.Field(str_length={"min_value": 3})
    notes: Optional[str] = pa.Field(nullable=True)
    # Tokens per optimizer step as published (the run's own batch); empty: the default rule of the training scenario.
    global_batch_tokens: Optional[float] = pa.Field(nullable=True, gt=0)
    # How a full run's chip-hours were counted: the job's own run time ("job_total": a GPU-hour total, iteration time
    # x iterations, a timed run, or a runtime defined as job start to finish) or chips x a duration stated in calendar
    # days or weeks of the project or stage ("wall_clock": "~2 weeks on 96 GPUs", "42 days", access windows; gaps,
    # setup and idle chips may be inside). Full runs with chip-hours need one.
    chip_hours_basis: Optional[str] = pa.Field(nullable=True, isin=CHIP_HOURS_BASES)
    # The run's published architecture: a preset of workbook.model.spec (layers, hidden, KV heads, experts, vocab;
    # checked by the loader); empty: the stated layers and attention width over the shape derived from the counts.
    model_shape: Optional[str] = pa.Field(nullable=True, str_matches=SLUG)

    @pa.dataframe_check(error="a full run with reported_chip_hours needs chip_hours_basis (job_total or wall_clock)")
    def basis_stated(cls, data) -> pl.LazyFrame:
        timed = (pl.col("kind_of_run") == "full_run") & pl.col("reported_chip_hours").is_not_null()
        return data.lazyframe.select(~timed | pl.col("chip_hours_basis").is_not_null())

    class Config:
        strict = True


class PriceEvents(pa.DataFrameModel):
    """Published list-price changes: rows of ``instance_prefix`` dated before ``effective`` are superseded and a
    derived row at ``new_over_old`` x the old price is added (see ``pricebuild``)."""

    cloud: str = pa.Field(str_matches=SLUG)
    instance_prefix: str = pa.Field(str_length={"min_value": 1})
    pricing_model: str = pa.Field(isin=PRICING_MODELS)
    effective: pl.Date
    new_over_old: float = pa.Field(gt=0, le=2)
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date

    class Config:
        strict = True
        unique = ["cloud", "instance_prefix", "pricing_model", "effective"]


# Columns a user's file may omit (price overrides are the usual case), with their default.
OPTIONAL_DEFAULTS: dict[type[pa.DataFrameModel], dict[str, object]] = {
    Kinds: {"chart_color": None},
    Prices: {
        "region": "any",
        "instance_type": "negotiated",
        "chips_per_instance": 1,
        "price_basis": "user override",
        "excluded": False,
        "flag": None,
        "as_of_approx": False,
        "secondary_source": False,
        "notes": None,
    },
}


class MfuProxies(pa.DataFrameModel):
    """MFU for chips with no published runs: another chip's calibrated MFU x factor, with a reason."""

    accelerator_id: str = pa.Field(unique=True, str_matches=SLUG)
    proxy_of: str = pa.Field(str_matches=SLUG)
    factor: float = pa.Field(gt=0, le=3)
    factor_low: float = pa.Field(gt=0, le=3)
    factor_high: float = pa.Field(gt=0, le=3)
    reason: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date

    factor_band = band("factor")

    class Config:
        strict = True


class PlatformPorts(pa.DataFrameModel):
    """Extra engineer-weeks to move a stack written for NVIDIA GPUs to another vendor's GPUs (e.g. CUDA -> ROCm)."""

    vendor: str = pa.Field(isin=("nvidia", "amd", "google", "aws", "intel"))
    kind: str = pa.Field(str_matches=SLUG)  # one of data/kinds.csv (checked by the loader)
    weeks: float = pa.Field(ge=0, le=200)
    weeks_low: float = pa.Field(ge=0, le=200)
    weeks_high: float = pa.Field(ge=0, le=200)
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date

    weeks_band = band("weeks")

    class Config:
        strict = True
        unique = ["vendor", "kind"]


# Serving software stacks with published results (trtllm-static: TensorRT-LLM before in-flight batching).
SERVING_STACKS = ("trtllm", "trtllm-static", "vllm-cuda", "vllm-rocm", "jetstream", "vllm-tpu", "neuron")


SUSTAINED_BASES = ("measured", "estimated")


class SustainedCompute(pa.DataFrameModel):
    """Dense matrix-multiply rates a chip sustains (max-achievable FLOPs: the best large GEMM at the clock the chip
    holds under that load, below the boost clock its datasheet peak assumes), measured by its vendor, or, for a
    power-limited sibling of a chip (``relative_to``), by one source on both with the same benchmark, or estimated
    (``basis``) from such a sibling of the same die at the same watts per SM."""

    accelerator_id: str = pa.Field(str_matches=SLUG)  # one of accelerators.csv (checked on load)
    precision: str = pa.Field(isin=("fp16", "bf16", "fp8", "fp4"))
    max_achievable_flops_per_s: float = pa.Field(gt=0)
    median_clock_mhz: Optional[float] = pa.Field(nullable=True, gt=0)  # where the source gives it
    watts: float = pa.Field(gt=0)  # the power limit the chip ran at
    # the chip this one is measured against (its row of the same precision, from the same source): the factor is
    # that chip's times the ratio of their fractions of peak (null: a vendor's measurement, against its other chips)
    relative_to: Optional[str] = pa.Field(nullable=True, str_matches=SLUG)
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date
    notes: Optional[str] = pa.Field(nullable=True)
    # measured: a benchmark ran on this chip; estimated: no measurement found, the rate derived from a measured
    # sibling of the same die at the same watts per SM (the derivation in notes)
    basis: str = pa.Field(isin=SUSTAINED_BASES)

    class Config:
        strict = True
        unique = ["accelerator_id", "precision"]


class ServingEngineDefaults(pa.DataFrameModel):
    """Each serving stack's documented default engine settings (per replica), used when a scenario is evaluated.

    ``accelerator_id`` ``any`` is the stack's default; a row naming an accelerator replaces it there (vLLM's
    defaults depend on the device). A stack with no row runs an unlimited engine (no verified default).
    """

    stack: str = pa.Field(isin=SERVING_STACKS)
    accelerator_id: str = pa.Field(str_matches=SLUG)  # one of accelerators.csv, or any (checked on load)
    max_tokens_per_step: Optional[int] = pa.Field(nullable=True, ge=1)  # max_num_tokens / max_num_batched_tokens
    max_seqs: Optional[int] = pa.Field(nullable=True, ge=1)  # max_batch_size (TRT-LLM) / max_num_seqs (vLLM)
    chunked_prefill: bool  # a prompt may be split over several steps
    # the next batch is scheduled while the GPU runs the current one (TensorRT-LLM's overlap scheduler, vLLM's async
    # scheduling; null: not)
    schedule_ahead: Optional[bool] = pa.Field(nullable=True)
    engine: str = pa.Field(str_length={"min_value": 3})  # the engine and entry point the defaults belong to
    source: str = pa.Field(str_length={"min_value": 3})
    as_of: pl.Date
    notes: Optional[str] = pa.Field(nullable=True)

    class Config:
        strict = True
        unique = ["stack", "accelerator_id"]


class InferenceRuns(pa.DataFrameModel):
    """Published serving measurements, each with its software stack and publication date.

    ``calibrate`` rows fit the stack's efficiencies (batch-1 latencies: HBM bandwidth; offline throughputs:
    compute, the newest round of each stack); ``validate`` rows (server throughput, TTFT/TPOT at the published
    load ``load_tokens_per_s``, or at a client concurrency) are only predicted. The backtest predicts every row
    from the other systems' results (workbook.serving.validation)."""

    run_id: str = pa.Field(unique=True, str_matches=SLUG)
    role: str = pa.Field(isin=("calibrate", "validate"))
    stack: str = pa.Field(isin=SERVING_STACKS)
    round: str = pa.Field(str_length={"min_value": 2})
    published: pl.Date
    accelerator_id: str = pa.Field(str_matches=SLUG)
    chips: int = pa.Field(ge=1)
    tensor_parallel: Optional[int] = pa.Field(nullable=True, ge=1)  # chips per replica: tensor x pipeline degree
    model: str
    params: float = pa.Field(gt=0)
    active_params: float = pa.Field(gt=0)
    n_layers: int = pa.Field(gt=0)
    n_kv_heads: int = pa.Field(gt=0)
    head_dim: int = pa.Field(gt=0)
    hidden_dim: int = pa.Field(gt=0)
    # heads x head size where it is not hidden_dim (DeepSeek-V3: 128 x 128 = 16,384; null: hidden_dim)
    attention_dim: Optional[int] = pa.Field(nullable=True, gt=0)
    # multi-head latent attention (DeepSeek-V2/V3): the cached latent's width and its rotary key's (null: none); the
    # row's n_kv_heads are then the model's heads, and the cache holds the latent (workbook.serving.scenario)
    kv_lora_rank: Optional[int] = pa.Field(nullable=True, gt=0)
    qk_rope_dim: Optional[int] = pa.Field(nullable=True, ge=0)
    weight_precision: str = pa.Field(isin=("bf16", "fp8", "fp4", "int8", "int4"))
    kv_precision: str = pa.Field(isin=("bf16", "fp8", "int8"))
    # latency: a lone request (or a fixed batch); offline: all queries at once; server: Poisson arrivals (MLPerf);
    # concurrency: a closed loop of ``batch`` clients, each sending its next request when the last one ends.
    scenario: str = pa.Field(isin=("latency", "offline", "server", "concurrency"))
    batch: Optional[int] = pa.Field(nullable=True, ge=1)  # the batch (latency, offline) or the clients (concurrency)
    prompt_tokens: int = pa.Field(ge=1)  # mean prompt length
    prompt_tokens_p99: Optional[int] = pa.Field(nullable=True, ge=1)  # 99th percentile (null: not known)
    prompt_basis: str = pa.Field(isin=("stated", "assumed"))
    output_tokens: float = pa.Field(gt=0)
    # 99th-percentile answer length (null: every answer output_tokens long). A longer answer stays in flight longer,
    # so the decode steps' mean context is prompt + E[O^2] / (2 E[O]) (workbook.model.serving.decode_context_tokens).
    # Given where the run's answers' p99 is known (MLPerf's DeepSeek-R1: the benchmark's 20,000-token cap, which more
    # than 1% of its answers reach); MLPerf's other sets publish only their reference answers', not the runs'.
    output_tokens_p99: Optional[int] = pa.Field(nullable=True, ge=1)
    ttft_limit_ms: Optional[float] = pa.Field(nullable=True, gt=0)
    tpot_limit_ms: Optional[float] = pa.Field(nullable=True, gt=0)
    load_tokens_per_s: Optional[float] = pa.Field(nullable=True, gt=0)
    # request_ms_per_token: a lone request's time from sending it to its last token over its output tokens (what a
    # batch-1 latency benchmark's output tokens/s gives: 1000 / tokens/s), first token included
    measure: str = pa.Field(isin=("tpot_ms", "ttft_ms", "tokens_per_s", "request_ms_per_token"))
    # latencies: which statistic the source states (MLPerf logs give the mean and percentiles); null for throughput
    latency_statistic: Optional[str] = pa.Field(nullable=True, isin=("mean", "p99", "unstated"))
    value: float = pa.Field(gt=0)
    # The submitter's scheduler settings (null: not published; the unlimited engine's value applies, see
    # workbook.serving.published.scheduler). Per replica (tensor_parallel chips: tensor x pipeline degree):
    pipeline_parallel: Optional[int] = pa.Field(nullable=True, ge=1)  # pipeline stages (micro-batches in flight)
    max_tokens_per_step: Optional[int] = pa.Field(nullable=True, ge=1)  # max_num_tokens / max_num_batched_tokens
    max_seqs: Optional[int] = pa.Field(nullable=True, ge=1)  # max_batch_size (TRT-LLM) / max_num_seqs (vLLM)
    chunked_prefill: Optional[bool] = pa.Field(nullable=True)  # a prompt may be split over several steps
    dispatch_window_ms: Optional[float] = pa.Field(nullable=True, ge=0)  # harness holds queries to batch them
    scheduler_steps: Optional[int] = pa.Field(nullable=True, ge=1)  # vLLM num_scheduler_steps: steps per schedule
    # TensorRT-LLM attention-DP balancing (adp_balancing_timeout_iters, adp_balancing_batching_wait_iters): a new
    # prompt is held until every rank has one, then the wait's steps more, or at most the timeout's
    balance_timeout_steps: Optional[int] = pa.Field(nullable=True, ge=1)
    balance_wait_steps: Optional[int] = pa.Field(nullable=True, ge=0)
    # The next batch scheduled while the GPU runs the current one, so a new prompt misses the batch already made:
    # TensorRT-LLM's overlap scheduler (PyTorch backend, on unless disable_overlap_scheduler), vLLM's async_scheduling
    # (null: not run)
    schedule_ahead: Optional[bool] = pa.Field(nullable=True)
    # Prefill/decode disaggregation: the prefill pool's chips and chips per replica (null: one pool does both); the
    # columns above (tensor_parallel, max_seqs, max_tokens_per_step) then describe the decode pool, of the other chips.
    prefill_chips: Optional[int] = pa.Field(nullable=True, ge=1)
    prefill_tensor_parallel: Optional[int] = pa.Field(nullable=True, ge=1)
    # A system whose cards have no NVLink between them though the accelerator's row assumes some (H100 PCIe: bridged
    # pairs): tensor parallel crosses PCIe at this rate, both directions together (null: the accelerator's own link)
    pcie_bytes_per_s: Optional[float] = pa.Field(nullable=True, gt=0)
    # The engine that ran, where the stack has had more than one and it was not the stack's current one: vLLM's V0,
    # before V1 became the default (vLLM 0.8, March 2025) and, in 0.8-0.10, wherever V1 lacked a feature the run used
    # (null: the stack's current engine). A result is predicted from its engine's results (workbook.serving.validation).
    engine: Optional[str] = pa.Field(nullable=True, eq="vllm-v0")  # the one engine so far (pandera: isin of one fails)
    # What the engine did with a full KV cache, as its settings name it (workbook.serving.published.CAPACITY_POLICY:
    # the scenario's "preempt" or "reserve"); null: not read, the engine preempts (the default of the model)
    capacity_policy: Optional[str] = pa.Field(
        nullable=True, isin=("max_utilization", "guaranteed_no_evict", "recompute")
    )
    # The share of memory the engine gave its KV cache, as the submitter set it (vLLM gpu_memory_utilization, of the
    # total; TensorRT-LLM free_gpu_memory_fraction, of what the weights leave free: workbook.serving.replica
    # .kv_room_bytes); null: not published, the engines' default 0.9 (the model's hbm_usable_fraction)
    memory_fraction: Optional[float] = pa.Field(nullable=True, gt=0.5, le=1.0)
    scheduler_source: Optional[str] = pa.Field(nullable=True)  # where the settings above are published
    # Attention run data-parallel: each chip of the replica decodes its own sequences and holds their KV cache
    # (TensorRT-LLM enable_attention_dp, in every MLPerf DeepSeek-R1 config: scheduler_source); null: tensor-parallel
    # attention, every engine's default (workbook.serving.scenario.ServeScenario.attention_data_parallel)
    attention_data_parallel: Optional[bool] = pa.Field(nullable=True)
    source: str = pa.Field(str_length={"min_value": 3})
    notes: Optional[str] = pa.Field(nullable=True)

    @pa.dataframe_check(
        error="prefill_chips needs prefill_tensor_parallel dividing it, a decode pool's tensor_parallel dividing "
        "chips - prefill_chips, and no pipeline stages"
    )
    def pools_whole(cls, data) -> pl.LazyFrame:
        pools = pl.col("prefill_chips").is_not_null() | pl.col("prefill_tensor_parallel").is_not_null()
        decode_chips = pl.col("chips") - pl.col("prefill_chips")
        whole = (
            (pl.col("prefill_chips") % pl.col("prefill_tensor_parallel") == 0)
            & (decode_chips > 0)
            & (decode_chips % pl.col("tensor_parallel") == 0)
            & (pl.col("pipeline_parallel") == 1)
        )
        return data.lazyframe.select(~pools | whole.fill_null(False))

    class Config:
        strict = True
