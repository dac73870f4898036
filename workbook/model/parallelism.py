"""Parallel layout of a training job: tensor x pipeline x context x data (x expert) degrees and recompute.

For every option the planner tries a small grid of layouts (cross join, all polars expressions) and keeps
the fastest one that fits in memory and respects the global batch:

* **tensor (TP)** t in 1..64, powers of two, at most the scale-up domain (NVLink node/rack; on a TPU the ICI
  slice) and the head count; with sequence parallelism (Korthikanti 2022) each layer does 2 all-gathers +
  2 reduce-scatters of s*b*h*2 B forward and as many backward (plus the forward ones again under full
  recompute), over the scale-up links, not overlapped;
* **pipeline (PP)** p: 1F1B with v interleaved chunks of ``LAYERS_PER_CHUNK`` layers, bubble = (p-1)/(v*m) of
  the compute for m micro-batches per step (Narayanan et al. 2021, Sec. 2.2); interleaved only with at least one
  micro-batch per stage (m >= p, as Megatron's interleaved schedule requires), else v = 1; stages of whole layers,
  the pipeline running at its fullest stage's pace (ceil(layers / p)); point-to-point sends of one micro-batch's
  activations per chunk boundary;
* **context (CP)** c: each chip holds s/c of the sequence; ring attention passes the keys and values of the
  other c-1 blocks per layer (forward once, backward twice);
* **expert (EP)** e = min(experts, data x context ranks): routed experts split e ways; each token's hidden
  state goes to ``experts_per_token`` experts and back, forward and backward (all-to-all);
* **data (DP)** d = chips / (t*p*c), with ZeRO-1 (Megatron's distributed optimizer) or, without pipeline,
  ZeRO-3 (FSDP): gradients reduce-scattered and weights all-gathered (twice under ZeRO-3) once per step, in two
  stages: among the group's ranks in one scale-up domain, then across domains with 1/k of the buffer per chip for
  k ranks per domain (NCCL's rings over one NIC per GPU; a TPU slice reduces over ICI before the DCN);
* **recompute** none / selective (attention scores recomputed, + their forward FLOPs) / full (the whole
  forward again: 4/3 of the compute).

Global batch: each rank runs m whole micro-batches of b sequences, m = G / (d*b*s) to the nearest whole one (at
least 1), so the batch planned (``planned_batch_tokens``) is m*d*b*s, within half a micro-batch per rank of G.
Step time = compute x recompute x (1 + bubble) + TP traffic + exposed traffic, where compute = model FLOPs /
(chips x peak x kernel efficiency) and the other traffic hides behind the pass it runs in, as Megatron overlaps it:
the weights' all-gather behind the forward pass (a third of the compute without recompute), the gradients'
reduce-scatter (and, under ZeRO-3, the weights' second all-gather) behind the backward pass, the CP, PP and EP
traffic in proportion to each pass; exposed = what exceeds its pass, summed over the two. Kernel efficiency is
calibrated on published runs through this same function (``workbook.training.calibration``). Ring collectives:
each chip sends (n-1)/n of the buffer per all-gather/reduce-scatter. Link speeds: the accelerator table's scale-up
figure is bidirectional, so a ring uses half; the scale-out figure per chip (NIC per GPU, DCN per TPU chip) is the
table's sourced ``scaleout_bytes_per_s`` column.
"""

from __future__ import annotations

import functools

import polars as pl

from workbook.model import memory
from workbook.model.units import HEAD_DIM

TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
PP_DEGREES = (1, 2, 4, 8, 16, 32)
CP_DEGREES = (1, 2, 4, 8, 16, 32)
RECOMPUTE = ("none", "selective", "full")
ZERO_STAGES = (1, 3)  # distributed optimizer (any layout) or FSDP (no pipeline)
MIN_TOKENS_PER_CP_RANK = 4096  # NVIDIA recipes split 8k sequences at most 2 ways (DGXC Llama 3.1 70B/405B: CP2)
LAYERS_PER_CHUNK = 2  # interleaved pipeline chunk: NVIDIA DGXC Llama 3.1 405B recipe, PP9 x VP7 for 126 layers
GCD_STEPS = 30  # Euclid's steps for the expert-parallel degree: enough for any two numbers below 2**20
ACTIVATION_BYTES = 2  # bf16 activations on the wire
SP_COLLECTIVES = 8  # per layer per micro-batch: (2 all-gather + 2 reduce-scatter) x (forward + backward)
SP_COLLECTIVES_FULL_RECOMPUTE = 12  # the forward ones run again
CP_PASSES = 3  # keys/values forward, keys/values and their gradients backward
A2A_PASSES = 4  # dispatch + combine, forward + backward
FULL_RECOMPUTE_FACTOR = 4 / 3  # forward (2 of 6 FLOPs per parameter per token) runs twice
# A few thousand candidate rows per plan: polars' streaming engine (its default since 2.0) spends more setting up a
# query than running it; the in-memory engine, the one eager DataFrame methods use, takes about half the time.
ENGINE = "in-memory"

LAYOUT_COLUMNS = ("tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel", "expert_parallel")
STEP_PARTS = ("compute_s", "bubble_s", "tp_comm_s", "exposed_comm_s")
PLAN_COLUMNS = (
    *LAYOUT_COLUMNS,
    "recompute",
    "zero_stage",
    "micro_batches",
    "planned_batch_tokens",
    "step_s",
    *STEP_PARTS,
    "mfu_planned",
    *(f"{k}_bytes" for k in memory.COMPONENTS),
    "memory_per_chip_bytes",
    "fits_in_memory",
)


def scaleout_bytes_per_s() -> pl.Expr:
    """Scale-out bandwidth per chip: the accelerator table's sourced ``scaleout_bytes_per_s`` column."""
    return pl.col("scaleout_bytes_per_s")


@functools.lru_cache(maxsize=32)
def _layouts(recompute: str | None, zero_stage: int | None) -> pl.DataFrame:
    """Every layout of the grid: ``_t``, ``_p``, ``_c``, ``recompute``, ``zero_stage``, in grid order (at most
    7 x 6 x 6 x 3 x 2 rows). ``recompute``/``zero_stage`` fix those choices (None: the planner picks); ZeRO-3 (FSDP)
    only without a pipeline unless the stage is fixed.
    """
    layouts = (
        pl.DataFrame({"_t": TP_DEGREES})
        .join(pl.DataFrame({"_p": PP_DEGREES}), how="cross")
        .join(pl.DataFrame({"_c": CP_DEGREES}), how="cross")
        .join(pl.DataFrame({"recompute": RECOMPUTE if recompute is None else (recompute,)}), how="cross")
        .join(pl.DataFrame({"zero_stage": ZERO_STAGES if zero_stage is None else (zero_stage,)}), how="cross")
    )
    if zero_stage is None:
        layouts = layouts.filter((pl.col("zero_stage") < 3) | (pl.col("_p") == 1))
    return layouts.with_columns(pl.col("_t", "_p", "_c").cast(pl.Float64))


def _cap(limit: pl.Expr, degrees: tuple[int, ...]) -> pl.Expr:
    """The largest of ``degrees`` (powers of two from 1) not above ``limit`` (1 when the limit is below 2)."""
    return (2 ** (limit.clip(lower_bound=1).log(2) + 1e-9).floor()).clip(upper_bound=max(degrees)).cast(pl.Int64)


def _candidates(rows: pl.LazyFrame, settings: dict, n: pl.Expr | None = None) -> pl.LazyFrame:
    """Every applicable layout of each row (``_row``): ``rows`` with ``_t``, ``_p``, ``_c``, ``recompute``,
    ``zero_stage``.

    Tensor parallelism inside the scale-up domain and at most one head per rank; at most one layer per pipeline
    stage; a context-parallel rank keeps at least ``MIN_TOKENS_PER_CP_RANK`` tokens. With a chip count ``n``,
    also d = n / (t*p*c) >= 1 and m = G / (d*b*s) >= 1. Built on the row index and the caps only (the grid is a
    few hundred layouts; the inputs are joined to the survivors).
    """
    heads = pl.col("attention_dim") / HEAD_DIM
    caps = rows.select(
        "_row",
        _t_cap=_cap(pl.min_horizontal(pl.col("scaleup_domain_chips"), heads), TP_DEGREES),
        _p_cap=_cap(pl.col("n_layers").cast(pl.Float64), PP_DEGREES),
        _c_cap=_cap(pl.col("seq_len") / MIN_TOKENS_PER_CP_RANK, CP_DEGREES),
        _n=pl.lit(None, pl.Float64) if n is None else n,
        _most=pl.col("global_batch_tokens") / (settings["micro_batch"] * pl.col("seq_len")),  # d at m = 1
    )
    layouts = _layouts(settings.get("recompute"), settings.get("zero_stage")).lazy()
    under_caps = pl.all_horizontal(pl.col(k) <= pl.col(f"{k}_cap") for k in ("_t", "_p", "_c"))
    candidates = caps.join(layouts, how="cross", maintain_order="left_right").filter(under_caps)
    if n is not None:
        model_parallel = pl.col("_t") * pl.col("_p") * pl.col("_c")
        n = pl.col("_n")
        candidates = candidates.filter((model_parallel <= n) & (model_parallel * pl.col("_most") >= n))
    layout = candidates.select("_row", "_t", "_p", "_c", "recompute", "zero_stage")
    return layout.join(rows, on="_row", maintain_order="left")


def _memory(s: dict, d: pl.Expr, m: pl.Expr, shared: dict[str, pl.Expr] | None = None) -> dict[str, pl.Expr]:
    """Bytes per chip by component for the layout columns and ``d`` data-parallel ranks (``shared``:
    :func:`_shared` as columns, where the caller has added them)."""
    t, p, c = pl.col("_t"), pl.col("_p"), pl.col("_c")
    shared = shared or _shared(d, m)
    v, e = shared["_chunks"], shared["expert_parallel"]
    # ZeRO shards a dense parameter's states over the d x c data-parallel ranks, an expert's over the ranks that
    # hold the same experts, d x c / EP (Megatron's expert data-parallel group)
    dense = memory.model_state_bytes(shared["_dense_slice"], d * c, pl.col("zero_stage"))
    experts = memory.model_state_bytes(shared["_expert_slice"], d * c / e, pl.col("zero_stage"))
    parts = {k: dense[k] + experts[k] for k in dense}
    in_flight = pl.min_horizontal(p, m) * pl.when(v > 1).then(1 + (p - 1) / (p * v)).otherwise(1.0)
    live = shared["_stage_layers"] * in_flight
    seq = pl.col("seq_len") / c
    b = s["micro_batch"]
    act = pl.lit(0.0)
    for r in RECOMPUTE:
        stored = memory.activation_bytes(seq, b, pl.col("hidden_dim"), pl.col("attention_dim"), live, t, r)
        act = pl.when(pl.col("recompute") == r).then(stored).otherwise(act)
    parts["activations"] = act + memory.logits_bytes(seq, b, pl.col("vocab_size"), t)
    layer = pl.col("active_params") / pl.col("n_layers")
    fsdp = memory.FSDP_PREFETCH_LAYERS * memory.WEIGHT_BYTES * layer / t
    parts["overhead"] = s["framework_overhead_bytes"] + pl.when(pl.col("zero_stage") >= 3).then(fsdp).otherwise(0.0)
    return parts


def _shared(d: pl.Expr, m: pl.Expr, e: pl.Expr | None = None) -> dict[str, pl.Expr]:
    """What memory and step time both read: expert-parallel degree (``e``, default as many ways as there are experts
    or data x context ranks), layers and parameters of the fullest pipeline stage's rank, pipeline chunks."""
    t, p = pl.col("_t"), pl.col("_p")
    e = pl.min_horizontal(pl.col("n_experts").cast(pl.Float64), d * pl.col("_c")) if e is None else e
    stage = (pl.col("n_layers") / p).ceil()
    fullest = stage / pl.col("n_layers")  # the share of the layers on the fullest stage
    dense = (pl.col("params") - pl.col("expert_params")) * fullest / t
    experts = pl.col("expert_params") * fullest / (t * e)
    return {
        "expert_parallel": e,
        "_stage_layers": stage,
        "_dense_slice": dense,
        "_expert_slice": experts,
        "_slice_params": dense + experts,
        "_chunks": _chunks(stage, m),
    }


def _with_expert_parallel(frame: pl.LazyFrame, d: pl.Expr) -> pl.LazyFrame:
    """``frame`` with ``_e``, the expert-parallel degree of a whole layout: the greatest common divisor of the
    experts and the data x context ranks (Megatron's expert groups tile the data-parallel ranks, each holding the
    same share of the experts: 128 experts over 468 ranks split 4 ways, not 128), by Euclid's steps, one column
    each."""
    frame = frame.with_columns(_e=pl.col("n_experts").cast(pl.Int64), _r=(d * pl.col("_c")).round().cast(pl.Int64))
    for _ in range(GCD_STEPS):
        done = pl.col("_r") == 0
        frame = frame.with_columns(
            _e=pl.when(done).then(pl.col("_e")).otherwise(pl.col("_r")),
            _r=pl.when(done).then(0).otherwise(pl.col("_e") % pl.col("_r").clip(lower_bound=1)),
        )
    return frame.with_columns(pl.col("_e").cast(pl.Float64)).drop("_r")


def _chunks(stage_layers: pl.Expr, m: pl.Expr) -> pl.Expr:
    """Interleaved pipeline chunks per stage: 1 without a pipeline, and 1 where a step has fewer micro-batches than
    the pipeline has stages (Megatron's interleaved schedule needs at least one per stage:
    ``forward_backward_pipelining_with_interleaving``), so its bubble is the plain 1F1B one, (p - 1) / m."""
    interleaved = (pl.col("_p") > 1) & (m >= pl.col("_p"))
    return pl.when(interleaved).then((stage_layers / LAYERS_PER_CHUNK).floor().clip(lower_bound=1)).otherwise(1.0)


def _link(group: pl.Expr) -> pl.Expr:
    """Per-chip bandwidth for a collective over ``group`` chips: scale-up inside the domain, else scale-out."""
    return (
        pl.when(group <= pl.col("scaleup_domain_chips"))
        .then(pl.col("scaleup_bytes_per_s") / 2)
        .otherwise(pl.col("scaleout_bytes_per_s"))
    )


def _data_parallel_seconds(buffer: pl.Expr, ranks: pl.Expr) -> pl.Expr:
    """Seconds for one reduce-scatter or all-gather of ``buffer`` bytes over the ``ranks`` chips that hold the same
    slice (data x context parallel), done in two stages: over the scale-up links among the k of them that share a
    domain (tensor-parallel groups are innermost, so k = domain / t, at most ``ranks``), then over the scale-out
    network among the r = ranks / k domains, each chip carrying 1/k of the buffer (NCCL's rings over one NIC per
    GPU, or a TPU slice's reduction before the data-centre network's across slices)."""
    inner = (pl.col("scaleup_domain_chips") / pl.col("_t")).clip(lower_bound=1.0)
    inner = pl.min_horizontal(inner, ranks)
    domains = ranks / inner
    within = (inner - 1) / inner / (pl.col("scaleup_bytes_per_s") / 2)
    across = (domains - 1) / domains / inner / pl.col("scaleout_bytes_per_s")
    return buffer * (within + across)


def _step(
    chips: pl.Expr, d: pl.Expr, m: pl.Expr, efficiency: pl.Expr, shared: dict[str, pl.Expr]
) -> dict[str, pl.Expr]:
    """Seconds per optimizer step by part, for the layout columns (``shared``: :func:`_shared`)."""
    t, p, c = pl.col("_t"), pl.col("_p"), pl.col("_c")
    e, slice_params, v = shared["expert_parallel"], shared["_slice_params"], shared["_chunks"]
    g = pl.col("_batch")
    layers = shared["_stage_layers"]
    h = pl.col("hidden_dim")
    flops = pl.col("flops_per_token") * g
    recompute = (
        pl.when(pl.col("recompute") == "full")
        .then(FULL_RECOMPUTE_FACTOR)
        .when(pl.col("recompute") == "selective")
        .then(1 + pl.col("attention_flops_per_token") / 3 / pl.col("flops_per_token"))
        .otherwise(1.0)
    )
    # the pipeline runs at its fullest stage's pace (126 layers on 8 stages: 16 on the fullest, not 15.75)
    imbalance = layers * p / pl.col("n_layers")
    compute = flops / (chips * pl.col("peak_flops_per_s") * efficiency) * recompute * imbalance
    bubble = compute * (p - 1) / (v * m)
    tokens_per_rank = g / (d * c)  # tokens one tensor-parallel group processes per step
    sp = pl.when(pl.col("recompute") == "full").then(SP_COLLECTIVES_FULL_RECOMPUTE).otherwise(SP_COLLECTIVES)
    tp_bytes = sp * ACTIVATION_BYTES * h * tokens_per_rank * layers * (t - 1) / t
    one_collective = _data_parallel_seconds(memory.WEIGHT_BYTES * slice_params, d * c)
    # ZeRO-1: weights gathered behind the forward pass, gradients reduced behind the backward; ZeRO-3 also gathers
    # the weights again behind the backward pass.
    backward_collectives = pl.when(pl.col("zero_stage") >= 3).then(2).otherwise(1)
    kv = pl.col("kv_dim") / t
    cp_bytes = CP_PASSES * 2 * kv * ACTIVATION_BYTES * tokens_per_rank * (c - 1) / c * layers
    pp_bytes = pl.when(p > 1).then(2 * v * m * pl.col("seq_len") / c * h / t * ACTIVATION_BYTES).otherwise(0.0)
    routed = pl.col("n_experts") > 1
    ep_bytes = pl.when(routed).then(
        A2A_PASSES * pl.col("experts_per_token") * h * ACTIVATION_BYTES * tokens_per_rank / t * layers * (e - 1) / e
    )
    others = cp_bytes / _link(t * c) + pp_bytes / _link(t * c * p) + ep_bytes.fill_null(0.0) / _link(e * t)
    forward = compute / recompute / 3  # 2 of the 6 FLOPs per parameter per token; recompute runs in the backward
    backward = compute - forward
    exposed = (one_collective + others * forward / compute - forward).clip(lower_bound=0.0) + (
        one_collective * backward_collectives + others * backward / compute - backward
    ).clip(lower_bound=0.0)
    return {
        "compute_s": compute,
        "bubble_s": bubble,
        "tp_comm_s": tp_bytes / (pl.col("scaleup_bytes_per_s") / 2),
        "exposed_comm_s": exposed,
    }


INPUT_COLUMNS = (
    "params",
    "active_params",
    "expert_params",
    "n_layers",
    "hidden_dim",
    "attention_dim",
    "kv_dim",
    "n_experts",
    "experts_per_token",
    "vocab_size",
    "seq_len",
    "global_batch_tokens",
    "max_global_batch_tokens",
    "flops_per_token",
    "attention_flops_per_token",
    "hbm_bytes",
    "peak_flops_per_s",
    "scaleup_domain_chips",
    "scaleup_bytes_per_s",
    "scaleout_bytes_per_s",
)  # what the planner reads from a row, besides the chip count and the efficiency


def plan(frame: pl.DataFrame, chips: str, efficiency: str, settings: dict, exact: bool = True) -> pl.DataFrame:
    """The fastest layout per row of ``frame`` at ``chips`` (column name) chips.

    ``frame`` needs the :data:`INPUT_COLUMNS` (model shape, ``global_batch_tokens``, ``flops_per_token``,
    ``attention_flops_per_token``, the accelerator's ``hbm_bytes``, ``peak_flops_per_s``, scale-up and
    scale-out bandwidth) and the ``efficiency`` column (kernel efficiency). ``settings``: micro_batch,
    hbm_usable_fraction, framework_overhead_bytes, recompute (None = choose), zero_stage (None = choose).
    ``exact``: the data-parallel degree must be a whole number (False while sizing on fractional chips).
    Adds the layout columns, ``step_s`` and its parts, ``mfu_planned`` (model FLOPs / peak), per-component
    bytes (``<component>_bytes``), ``memory_per_chip_bytes`` and ``fits_in_memory``. Rows where no layout fits
    keep the layout with the least memory (``fits_in_memory`` false); rows where none is allowed by the batch
    or the chip count get null layout columns. Rows with the same inputs are planned once.
    """
    keys = [*INPUT_COLUMNS, chips, efficiency]
    base = frame.drop([c for c in PLAN_COLUMNS if c in frame.columns])
    distinct = base.select(keys).unique(maintain_order=True).with_row_index("_row")
    best = _best_layouts(distinct, chips, efficiency, settings, exact)
    planned = distinct.join(best, on="_row", how="left", maintain_order="left").drop("_row")
    return base.join(planned, on=keys, how="left", nulls_equal=True, maintain_order="left")


def _micro_batches(d: pl.Expr, micro_batch_tokens: pl.Expr) -> pl.Expr:
    """Micro-batches per data-parallel rank and step, whole: the requested batch's share to the nearest whole one
    (at least one), raised to one per pipeline stage where the batch may grow that far (``max_global_batch_tokens``:
    a default batch, not one the user or the run's paper gave), so that the pipeline interleaves."""
    share = pl.col("global_batch_tokens") / (d * micro_batch_tokens)
    m = share.round().clip(lower_bound=1.0)
    most = (pl.col("max_global_batch_tokens") / (d * micro_batch_tokens)).floor()
    fed = pl.min_horizontal(pl.col("_p"), most)
    return pl.when(m < pl.col("_p")).then(pl.max_horizontal(m, fed)).otherwise(m)


def _best_layouts(rows: pl.DataFrame, chips: str, efficiency: str, settings: dict, exact: bool) -> pl.DataFrame:
    """:data:`PLAN_COLUMNS` of the best layout for each ``_row`` of ``rows`` (rows with no layout left out)."""
    n = pl.col(chips).cast(pl.Float64)
    model_parallel = pl.col("_t") * pl.col("_p") * pl.col("_c")
    d = n / model_parallel
    m = _micro_batches(d, settings["micro_batch"] * pl.col("seq_len"))
    expanded = _candidates(rows.lazy(), settings, n).with_columns(_d=d).with_columns(_m=m)
    if exact:
        expanded = expanded.filter(pl.col("_d").floor() == pl.col("_d"))
    d, m = pl.col("_d"), pl.col("_m")
    expanded = expanded.with_columns(_batch=m * d * settings["micro_batch"] * pl.col("seq_len"))
    if exact:
        expanded = _with_expert_parallel(expanded, d)
    shared = _shared(d, m, pl.col("_e") if exact else None)
    expanded = expanded.with_columns(**shared)  # computed once, read by memory and step time
    shared = {k: pl.col(k) for k in shared}
    parts = _memory(settings, d, m, shared)
    usable = pl.col("hbm_bytes") * settings["hbm_usable_fraction"]
    step = _step(n, d, m, pl.col(efficiency), shared)
    expanded = (
        expanded.with_columns(
            **{f"{k}_bytes": v for k, v in parts.items()},
            **step,
            data_parallel=d,
            micro_batches=m,
            planned_batch_tokens=pl.col("_batch"),
        )
        .with_columns(
            memory_per_chip_bytes=pl.sum_horizontal([f"{k}_bytes" for k in parts]),
            step_s=pl.sum_horizontal(list(step)),
        )
        .with_columns(fits_in_memory=pl.col("memory_per_chip_bytes") <= usable)
    )
    # The fastest layout that fits (per token: layouts plan slightly different batches); where none does, the one
    # with the least memory (the first in order on ties).
    fastest = pl.when(pl.col("fits_in_memory")).then(pl.col("step_s") / pl.col("_batch")).arg_min()
    return (
        expanded.group_by("_row")
        .agg(pl.all().get(pl.coalesce(fastest, pl.col("memory_per_chip_bytes").arg_min())))
        .with_columns(
            tensor_parallel=pl.col("_t").cast(pl.Int64),
            pipeline_parallel=pl.col("_p").cast(pl.Int64),
            context_parallel=pl.col("_c").cast(pl.Int64),
            data_parallel=pl.col("data_parallel").round().cast(pl.Int64),
            expert_parallel=pl.col("expert_parallel").round().cast(pl.Int64),
            mfu_planned=pl.col("flops_per_token")
            * pl.col("_batch")
            / (n * pl.col("step_s") * pl.col("peak_flops_per_s")),
        )
        .select("_row", *PLAN_COLUMNS)
        .collect(engine=ENGINE)
    )


def min_chips(frame: pl.DataFrame, settings: dict) -> pl.DataFrame:
    """Per row: the fewest chips at which some layout fits (``min_chips_to_fit``, fractional, null when none
    does) and the most the global batch allows (``max_chips_for_batch``).

    Memory per chip = fixed + sharded / (d*c) for a layout, so d >= sharded / (c * (usable - fixed)), with the
    pipeline taken full (m >= p). ZeRO's share of every parameter, dense or expert, falls as 1 / (d*c) (an expert's
    states are sharded over d*c / EP ranks, each holding 1 / EP of the experts); the rest of an expert's states falls
    with EP = min(experts, d*c): as 1 / (d*c) too while d*c <= experts, then fixed (counted in ``fixed``).
    """
    t, p, c = pl.col("_t"), pl.col("_p"), pl.col("_c")
    big = pl.lit(1e12)
    parts = _memory(settings, big, big)
    fullest = (pl.col("n_layers") / p).ceil() / pl.col("n_layers")  # the fullest stage's share of the layers
    experts = pl.col("expert_params") * fullest / t
    per_param = pl.col("zero_stage").replace_strict({z: memory.sharded_bytes_per_param(z) for z in range(4)})
    kept = memory.STATE_BYTES - per_param  # bytes a parameter keeps on every rank that holds it
    sharded = per_param * pl.col("params") * fullest / t
    fixed = pl.sum_horizontal(list(parts.values()))  # what is left per chip with unboundedly many ranks
    usable = pl.col("hbm_bytes") * settings["hbm_usable_fraction"]
    d_wide = sharded / (c * (usable - fixed))  # every expert split (d*c >= experts)
    unsplit = fixed - kept * experts / pl.col("n_experts")  # without the experts' kept states
    d_narrow = (sharded + kept * experts) / (c * (usable - unsplit))  # experts split d*c ways (d*c < experts)
    narrow = (d_narrow * c <= pl.col("n_experts")) & (usable > unsplit)
    d_min = pl.when(narrow).then(d_narrow).otherwise(d_wide).clip(lower_bound=1.0)
    d_max = (pl.col("global_batch_tokens") / (settings["micro_batch"] * pl.col("seq_len"))).floor()
    distinct = frame.select(INPUT_COLUMNS).unique(maintain_order=True).with_row_index("_row")
    agg = (
        _candidates(distinct.lazy(), settings)
        .with_columns(
            _fit=pl.when((usable > fixed) & (d_min <= d_max)).then(t * p * c * d_min),
            _allowed=t * p * c * d_max,
        )
        .group_by("_row")
        .agg(pl.col("_fit").min().alias("min_chips_to_fit"), pl.col("_allowed").max().alias("max_chips_for_batch"))
    )
    limits = distinct.join(agg.collect(engine=ENGINE), on="_row", how="left", maintain_order="left").drop("_row")
    return frame.join(limits, on=list(INPUT_COLUMNS), how="left", nulls_equal=True, maintain_order="left")


def layout_words(prefix: str = "") -> pl.Expr:
    """'TP8 x PP16 x CP2 x DP128 (EP8)', degrees of 1 left out; null where there is no layout."""
    col = lambda name: pl.col(f"{prefix}{name}")  # noqa: E731
    parts = [
        pl.when(col(name) > 1).then(pl.format(f"{label}{{}}", col(name)))
        for name, label in (("tensor_parallel", "TP"), ("pipeline_parallel", "PP"), ("context_parallel", "CP"))
    ]
    dp = pl.format("DP{}", col("data_parallel"))
    ep = pl.when(col("expert_parallel") > 1).then(pl.format(" (EP{})", col("expert_parallel"))).otherwise(pl.lit(""))
    text = pl.concat_str([*parts, dp], separator=" x ", ignore_nulls=True)
    return pl.when(col("tensor_parallel").is_not_null()).then(pl.concat_str([text, ep]))
