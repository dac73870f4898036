"""Prefill/decode disaggregation: prompts are prefilled on one pool of replicas and their KV cache moves to a
second pool that only decodes (DistServe, Zhong et al., OSDI 2024; Splitwise, Patel et al., ISCA 2024; NVIDIA
Dynamo; llm-d). Considered when the scenario asks for it (``ServeScenario.disaggregation``) and chosen, per
accelerator, only where it needs fewer chips than replicas that do both.

Why it can pay: a replica that does both carries prefill chunks in its decode steps, so with the per-token target
T and its weight read w it may carry at most rho = 1 - w / T of (prefill + decode) work. Split, the decode pool
carries only decode work at that load, and the prefill pool carries the prompts at its own limit, set by the
first-token target alone (usually much higher). The tighter the per-token target and the longer the prompts, the
more it saves; at low traffic the second pool's whole replicas cost more than they save.

Per replica of t chips (request costs from :mod:`workbook.model.serving`):
* a prefill replica is the shared replica's engine (its token budget per step, chunking: :mod:`replica`) whose
  requests end at their first token: its work per request is the prompt's prefill and that token, and its first
  token comes from the same formulas (the prompts ahead, the budget's queue, the steps around it), so prompts
  batched in one step share its weights read and fixed cost. Until MLPerf v6.0 published NVIDIA's pools, the pool
  charged each prompt a step of its own, max(prefill work, one read of the weights) + the fixed cost: on those
  results (Llama 2 70B on 28 + 44 GB200/GB300, Llama 3.1 405B on 56 + 16 and 52 + 20) that read 0.48-0.78x of
  the published throughput;
* KV transfer = prompt tokens x KV bytes per token over the replica's t network links (the pools sit on different
  nodes; within one node NVLink would be faster: conservative);
* first token = the prefill replica's first token + the transfer (the prefill replica emits it);
* a decode replica runs the shared-replica formulas with no prefill work and no prompt queue; its sequence slots
  must admit a request without a wait at the 99th percentile (probability of waiting under 1%), as a wait there
  would hold back the second token.

A published disaggregated result is predicted on its own pools (:func:`pools_requests_per_s`).
"""

from __future__ import annotations

import dataclasses

import polars as pl

from workbook.model import serving as sv
from workbook.serving import replica
from workbook.serving.scenario import ServeScenario

KEYS = replica.KEYS
# Columns of a disaggregated answer that a shared-replica answer leaves null (``disaggregated`` false).
PREFILL_COLUMNS = [
    "chips_without_disaggregation",  # what replicas that do both would need
    "disaggregated_chips",  # what separate pools would need, where they were weighed and not picked (null: none met)
    "prefill_replicas",
    "prefill_chips_per_replica",
    "prefill_layout",
    "prefill_utilisation",
    "kv_transfer_ms",
    "prefill_chip_seconds_per_request",  # prefill chips x seconds a request needs at the prefill pool's limit
]


def _prefill_scenario(s: ServeScenario) -> ServeScenario:
    """The prefill replicas' scenario: every request is its prompt and the one token its prefill emits."""
    return dataclasses.replace(s, output_tokens=1, output_tokens_p99=None, tpot_ms=None)


def prefill_replicas(reps: pl.DataFrame, s: ServeScenario) -> pl.DataFrame:
    """``reps`` (:func:`replica.replicas`) as prefill-only replicas: a request's work is its prefill and its first
    token (a 1 / O share of its decode work and KV reads), the capacity that work allows."""
    o = s.output_tokens
    answered = {"decode_s": pl.col("decode_s") / o, "kv_read_s": pl.col("kv_read_s") / o}
    # a prompt's cache leaves for the decode pool after its first token: a prefill replica's cache never fills
    answered |= {"recomputed_prompt_tokens": pl.lit(0.0), "recompute_s": pl.lit(0.0)}
    return reps.with_columns(**answered).with_columns(
        capacity_rps=sv.capacity_requests_per_s(pl.col("prefill_s"), pl.col("decode_s"), pl.col("kv_read_s"))
    )


def _prefill_at(frame: pl.DataFrame, s: ServeScenario, rho: pl.Expr) -> pl.DataFrame:
    """Prefill replicas (:func:`prefill_replicas`) at load ``rho`` of their capacity, under their engine
    (:func:`replica.per_engine`: its token budget per step, chunking): the shared replica's formulas with one-token
    answers (the prompts ahead, the steps around the first token, the step budget's queue), plus the KV cache's
    transfer to the decode pool. Requests/s, the transfer and the first token's mean and 99th percentile (ms).
    The prefill pool makes the first token, so it does not schedule a step ahead (``schedule_ahead``: a prompt would
    wait a whole prefill step more): NVIDIA's disaggregated configs switch TensorRT-LLM's overlap scheduler off on
    their context workers only (MLPerf v6.0 ``scripts/slurm_llm/disagg_trtllm_llama2_70b/scripts/gen_worker_config.py``,
    v5.1 ``run_disagg_405B/gen_yaml.py``)."""
    frame = frame.with_columns(schedule_ahead=pl.lit(False))
    link = pl.col("tensor_parallel") * pl.col("scaleout_bytes_per_s")
    transfer = s.kv_bytes_per_token * s.prompt_tokens / link
    transfer_tail = s.kv_bytes_per_token * s.prompt_tokens_tail / link
    p = _prefill_scenario(s)
    at = replica.per_engine(frame.with_columns(_rho=rho), lambda part, e: replica.at_load(part, p, pl.col("_rho"), e))
    return at.with_columns(
        prefill_load=pl.col("_rho"),
        prefill_rps=pl.col("requests_per_s_per_replica"),
        kv_transfer_ms=transfer * 1000,
        prefill_ttft_mean_ms=pl.col("ttft_mean_ms") + transfer * 1000,
        prefill_ttft_ms=pl.col("ttft_ms") + transfer_tail * 1000,  # the longest prompts' prefill and transfer
    ).drop("_rho")


def _sized(frame: pl.DataFrame, capacity_within: pl.Expr, demand_rps: float, s: ServeScenario) -> pl.DataFrame:
    """Replicas of each configuration for the traffic at the headroom target, and the fewest chips per
    accelerator (ties: the most capacity per chip)."""
    return (
        frame.with_columns(_within=capacity_within)
        .filter(pl.col("_within") > 0)
        .with_columns(
            _replicas=(demand_rps / (s.headroom * pl.col("_within"))).ceil().clip(lower_bound=1).cast(pl.Int64)
        )
        .with_columns(
            _chips=pl.col("_replicas") * pl.col("tensor_parallel"),
            _per_chip=pl.col("_within") / pl.col("tensor_parallel"),
        )
        .pipe(replica.fewest_chips_first, "_chips", "_per_chip")
        .unique("accelerator_id", keep="first", maintain_order=True)
        .drop("_per_chip")
    )


def _prefill_limits(frame: pl.DataFrame, s: ServeScenario) -> pl.DataFrame:
    """Per prefill configuration, the highest load of the grid whose first token meets the target (``_limit``)."""
    grid = pl.DataFrame({"_grid": replica.LOAD_GRID})
    curve = _prefill_at(frame.join(grid, how="cross"), s, pl.col("_grid"))
    ok = pl.lit(True) if s.ttft_ms is None else pl.col("prefill_ttft_ms") <= s.ttft_ms
    return curve.filter(ok).group_by(KEYS).agg(pl.col("prefill_load").max().alias("_limit"))


def _prefill_pool(reps: pl.DataFrame, s: ServeScenario, demand_rps: float) -> pl.DataFrame:
    """Per accelerator: the prefill replicas (fewest chips) and their first token at the load they carry."""
    frame = prefill_replicas(reps.filter(pl.col("max_sequences") >= 1), s)
    limit = _prefill_limits(frame, s)
    best = _sized(frame.join(limit, on=KEYS), pl.col("_limit") * pl.col("capacity_rps"), demand_rps, s)
    at = _prefill_at(best, s, demand_rps / pl.col("_replicas") / pl.col("capacity_rps"))
    return at.select(
        "accelerator_id",
        pl.col("_replicas").alias("prefill_replicas"),
        pl.col("tensor_parallel").alias("prefill_chips_per_replica"),
        replica.layout().alias("prefill_layout"),
        (pl.col("prefill_rps") / pl.col("_within")).alias("prefill_utilisation"),
        (pl.col("tensor_parallel") / pl.col("_within")).alias("_prefill_chip_s"),
        pl.col("_chips").alias("_prefill_chips"),
        "kv_transfer_ms",
        "prefill_ttft_ms",
        "prefill_ttft_mean_ms",
    )


def _decode_scenario(s: ServeScenario) -> ServeScenario:
    """The decode replicas' scenario: no first-token target of their own (the prefill pool emits the first token)."""
    return dataclasses.replace(s, ttft_ms=None)


def _by_stages(frame: pl.DataFrame, run) -> pl.DataFrame:
    """``run(part, scheduler)`` per pipeline depth: decode replicas take no prompts, so no token budget applies."""
    parts = [
        run(part, replica.Scheduler(pipeline_stages=stages))
        for (stages,), part in frame.group_by(["pipeline_parallel"], maintain_order=True)
    ]
    return pl.concat(parts, how="diagonal_relaxed")


def decode_replicas(reps: pl.DataFrame) -> pl.DataFrame:
    """``reps`` (:func:`replica.replicas`) as decode-only replicas: no prefill work, capacity from decode alone (and
    the prompts a full cache that preempts prefills again, ``recompute_s``: a decode replica recomputes them)."""
    return reps.with_columns(prefill_s=pl.lit(0.0), prefill_tail_s=pl.lit(0.0)).with_columns(
        capacity_rps=sv.capacity_requests_per_s(pl.col("recompute_s"), pl.col("decode_s"), pl.col("kv_read_s"))
    )


def decode_curve(frame: pl.DataFrame, s: ServeScenario) -> pl.DataFrame:
    """Decode replicas (:func:`decode_replicas`) at every load of the grid; ``meets_ttft`` says whether their slots
    admit a request without a wait at the 99th percentile."""
    slots = pl.col("max_sequences").floor().clip(lower_bound=1)
    busy = pl.min_horizontal(pl.col("sequences"), slots * replica.SLOTS_FULL)
    admits = sv.waiting_probability(busy, slots) <= 1 - sv.LATENCY_PERCENTILE
    d = _decode_scenario(s)
    return _by_stages(frame, lambda part, sched: replica.load_curve(part, d, sched)).with_columns(meets_ttft=admits)


def _decode_pool(reps: pl.DataFrame, s: ServeScenario, demand_rps: float) -> pl.DataFrame:
    """Per accelerator: the decode replicas (fewest chips) at the load they carry, as :func:`replica.at_load` rows."""
    d = _decode_scenario(s)
    frame = decode_replicas(reps)
    curve = decode_curve(frame, s)
    lim = (
        replica.limits(curve)
        .filter(pl.col("max_load_fraction").is_not_null())
        .with_columns(limit=pl.col("limit").replace("first-token target", "sequence slots"))
    )
    best = _sized(frame.join(lim, on=KEYS), pl.col("max_load_fraction") * pl.col("capacity_rps"), demand_rps, s)
    rho = demand_rps / pl.col("_replicas") / pl.col("capacity_rps")
    at = _by_stages(best, lambda part, sched: replica.at_load(part, d, rho, sched))
    return at.with_columns(
        capacity_within_targets_rps=pl.col("_within"),
        replicas=pl.col("_replicas"),
        _decode_chips=pl.col("_chips"),
        _decode_chip_s=pl.col("tensor_parallel") / pl.col("_within"),
    ).drop("_within", "_replicas", "_chips")


def best_pools(reps: pl.DataFrame, s: ServeScenario, demand_rps: float) -> pl.DataFrame:
    """Per accelerator where both pools can meet the targets: the decode replicas' row (replicas, layout, per-token
    latency, memory) with the prefill pool's columns (:data:`PREFILL_COLUMNS`), the first token from the prefill
    pool, ``chips`` of both pools and ``chip_seconds_per_request`` at the headroom target."""
    pools = _decode_pool(reps, s, demand_rps).join(_prefill_pool(reps, s, demand_rps), on="accelerator_id")
    meets = pl.lit(True) if s.ttft_ms is None else pl.col("prefill_ttft_ms") <= s.ttft_ms
    return pools.with_columns(
        disaggregated=pl.lit(True),
        chips=pl.col("_decode_chips") + pl.col("_prefill_chips"),
        chip_seconds_per_request=pl.col("_decode_chip_s") + pl.col("_prefill_chip_s"),
        prefill_chip_seconds_per_request=pl.col("_prefill_chip_s"),
        ttft_ms=pl.col("prefill_ttft_ms"),
        ttft_mean_ms=pl.col("prefill_ttft_mean_ms"),
        meets_ttft=meets,
        utilisation=pl.max_horizontal(
            pl.col("requests_per_s_per_replica") / pl.col("capacity_within_targets_rps"), "prefill_utilisation"
        ),
    ).drop(
        "_decode_chips",
        "_prefill_chips",
        "_decode_chip_s",
        "_prefill_chip_s",
        "prefill_ttft_ms",
        "prefill_ttft_mean_ms",
    )


def cheaper(shared: pl.DataFrame, pools: pl.DataFrame) -> pl.DataFrame:
    """``shared`` (one row per accelerator, replicas that do both) with the disaggregated answer in place of each
    accelerator's row where it needs fewer chips; a row kept says what the pools would need
    (``disaggregated_chips``). An accelerator whose shared replicas meet the targets at no load
    keeps that answer: the pools hold the same weights and prefill the same prompts, so they could gain at most the
    decode steps' share of a lone request's first token."""
    shared_chips = shared.select("accelerator_id", pl.col("chips").alias("chips_without_disaggregation"))
    wins = pools.join(shared_chips, on="accelerator_id").filter(
        pl.col("chips") < pl.col("chips_without_disaggregation")
    )
    pool_chips = pools.select("accelerator_id", pl.col("chips").alias("disaggregated_chips"))
    keep = shared.join(wins.select("accelerator_id"), on="accelerator_id", how="anti").join(
        pool_chips, on="accelerator_id", how="left"
    )
    columns = [*shared.columns, *(c for c in PREFILL_COLUMNS if c not in shared.columns)]
    return pl.concat([keep, wins], how="diagonal_relaxed").select(columns)


def pools_requests_per_s(
    prefill: pl.DataFrame, decode: pl.DataFrame, s: ServeScenario, prefill_count: int, decode_count: int
) -> float:
    """Requests/s that given pools sustain within the scenario's limits: the lower of the prefill pool's (each
    replica at its highest load whose first token meets the target) and the decode pool's (each at its highest load
    meeting the per-token target, its slots admitting a request without a wait at the 99th percentile), times their
    replicas (``prefill_count``, ``decode_count``). ``prefill`` and ``decode``: one configuration each
    (:func:`replica.replicas`). How a published disaggregated result is predicted
    (:func:`workbook.serving.published.predict_detail`), with the submitter's pools."""
    prefill = prefill_replicas(prefill, s)
    limit = _prefill_limits(prefill, s).join(prefill.select(*KEYS, "capacity_rps"), on=KEYS)
    prefill_rps = (limit["_limit"] * limit["capacity_rps"]).max() or 0.0
    frame = decode_replicas(decode)
    lim = replica.limits(decode_curve(frame, s)).join(frame.select(*KEYS, "capacity_rps"), on=KEYS)
    decode_rps = (lim["max_load_fraction"] * lim["capacity_rps"]).max() or 0.0
    return min(prefill_rps * prefill_count, decode_rps * decode_count)
