"""A published serving result (one row of ``data/inference_runs.csv``) as the model sees it: its scenario and
what the model predicts for it, given a stack's efficiencies. Calibration and validation both use these."""

from __future__ import annotations

import math

import polars as pl

from workbook.model.spec import ModelSpec
from workbook.serving import disaggregated, replica
from workbook.serving.scenario import ServeAssumptions, ServeScenario

NEAR_MAX_LOAD = 0.99  # a server result's latencies are also read at 1% less traffic than the model's most
# Where a server latency is matched: loads from half the model's most to 15% past it, in steps of 0.5% of it
MATCH_SHARES = tuple(i / 200 for i in range(100, 231))


def _slots(run: dict) -> int | None:
    """Sequences a replica may hold: the engine's batch limit per micro-batch, times the micro-batches a pipeline
    keeps in flight (TensorRT-LLM's in-flight batcher runs one micro-batch per pipeline stage)."""
    if run.get("max_seqs") is None:
        return None
    return run["max_seqs"] * (run.get("pipeline_parallel") or 1)


# A published run's capacity policy (data/inference_runs.csv, as the engine's settings name it) as the scenario's
# (workbook.serving.scenario.CAPACITY_POLICIES); unread, the engine preempts.
CAPACITY_POLICY = {
    "max_utilization": "preempt",
    "recompute": "preempt",
    "guaranteed_no_evict": "reserve",
    None: "preempt",
}


def scenario(run: dict) -> ServeScenario:
    """The published run's model, precisions, request shape (its answers' spread where known) and latency limits. A
    model with latent attention (``kv_lora_rank``) states its heads on the model, so that its cache is the latent's."""
    latent = run.get("kv_lora_rank")
    model = ModelSpec(
        params=run["params"],
        active_params=run["active_params"],
        n_layers=run["n_layers"],
        hidden_dim=run["hidden_dim"],
        attention_dim=run.get("attention_dim") or run["hidden_dim"],
        n_kv_heads=run["n_kv_heads"] if latent else None,
        kv_lora_rank=latent,
        qk_rope_dim=run.get("qk_rope_dim") or 0,
    )
    output_tokens = max(1, int(round(run["output_tokens"])))
    return ServeScenario(
        model=model,
        weight_precision=run["weight_precision"],
        kv_precision=run["kv_precision"],
        prompt_tokens=run["prompt_tokens"],
        output_tokens=output_tokens,
        output_tokens_p99=max(output_tokens, run["output_tokens_p99"]) if run.get("output_tokens_p99") else None,
        ttft_ms=run["ttft_limit_ms"],
        tpot_ms=run["tpot_limit_ms"],
        n_kv_heads=None if latent else run["n_kv_heads"],
        accelerators=(run["accelerator_id"],),
        max_batch=(None if run["scenario"] == "concurrency" else run["batch"]) or _slots(run),  # clients: no limit
        prompt_tokens_p99=run["prompt_tokens_p99"],
        router="round-robin",  # a replica's own results: its own queue (its share of the harness's queries)
        attention_data_parallel=bool(run.get("attention_data_parallel")),
        capacity_policy=CAPACITY_POLICY[run.get("capacity_policy")],
        assumptions=_assumptions(run),
    )


def _assumptions(run: dict) -> ServeAssumptions:
    """The defaults, with the engine's memory share for its KV cache where the submitter published it."""
    if run.get("memory_fraction") is None:
        return ServeAssumptions()
    return ServeAssumptions(hbm_usable_fraction=run["memory_fraction"])


def scheduler(run: dict) -> replica.Scheduler:
    """The engine settings the submitter published (``data/inference_runs.csv``: ``max_tokens_per_step``,
    ``chunked_prefill``, ``pipeline_parallel``, ``dispatch_window_ms``, ``scheduler_steps``, ``balance_timeout_steps``,
    ``balance_wait_steps``, ``schedule_ahead``, with ``scheduler_source``). A setting left
    unpublished keeps the unlimited engine's value: no token budget, no dispatch window (stated, not a stack
    default: the defaults move between releases and the submissions do not all name theirs)."""
    tokens = run.get("max_tokens_per_step")
    return replica.engine(
        run["stack"],
        None if tokens is None else float(tokens),
        run.get("chunked_prefill"),
        pipeline_stages=run.get("pipeline_parallel") or 1,
        dispatch_window_s=(run.get("dispatch_window_ms") or 0.0) / 1000,
        steps_per_schedule=run.get("scheduler_steps") or 1,
        balance_timeout_steps=run.get("balance_timeout_steps") or 0,
        balance_wait_steps=run.get("balance_wait_steps") or 0,
        schedule_ahead=bool(run.get("schedule_ahead")),
        replicas_per_dispatcher=max(1, run["chips"] // (run["tensor_parallel"] or 1)),
    )


def predicted_column(run: dict) -> str:
    """The load-curve column holding ``run``'s statistic: p99 latencies are ``tpot_ms`` / ``ttft_ms`` (the
    statistic targets set), means (and single-request figures whose statistic is unstated) ``*_mean_ms``."""
    if run["measure"] == "tokens_per_s" or run["latency_statistic"] == "p99":
        return run["measure"]
    return run["measure"].replace("_ms", "_mean_ms")


def _replicas(
    accelerators: pl.DataFrame, run: dict, eta_bw: float, eta_c: float, factors: replica.Factors
) -> pl.DataFrame:
    acc = accelerators.filter(pl.col("accelerator_id") == run["accelerator_id"]).with_columns(
        eta_bw=pl.lit(eta_bw), eta_c=pl.lit(eta_c), stack=pl.lit(run["stack"])
    )
    if run.get("pcie_bytes_per_s"):  # no NVLink in this system: its cards' tensor parallel crosses PCIe
        acc = acc.with_columns(scaleup_domain_chips=pl.lit(1), scaleup_bytes_per_s=pl.lit(run["pcie_bytes_per_s"]))
    frame = replica.configs(acc).filter(
        (pl.col("pipeline_parallel") == 1)
        & (pl.col("tensor_parallel") <= run["chips"])
        & (run["chips"] % pl.col("tensor_parallel") == 0)
    )
    if run["tensor_parallel"]:
        frame = frame.filter(pl.col("tensor_parallel") == run["tensor_parallel"])
    frame = frame.with_columns(pipeline_parallel=pl.lit(run.get("pipeline_parallel") or 1))
    return replica.replicas(frame, scenario(run), factors)


def predict(accelerators: pl.DataFrame, run: dict, eta_bw: float, eta_c: float, factors: replica.Factors) -> float:
    """The model's figure for ``run``'s measure (:func:`predict_detail`)."""
    return predict_detail(accelerators, run, eta_bw, eta_c, factors)["value"]


def predict_detail(
    accelerators: pl.DataFrame, run: dict, eta_bw: float, eta_c: float, factors: replica.Factors
) -> dict:
    """The model's figure for ``run``'s measure (``value``) on the configuration with the most throughput: system
    tokens/s at the highest load within the limits (offline: memory only); TTFT / TPOT (ms), in the row's statistic
    (mean or p99), of a lone request (latency scenario) or, for a server result, at that same highest load within
    the server's p99 limits (``max_load_fraction``). A server result's load is, by MLPerf's rules, the most its
    system sustained within the limits: its counterpart is the model's own most. At that edge the limit that binds
    sits at its value (a queue there grows as 1 / (1 - load)), so the same figure is also read at ``NEAR_MAX_LOAD``
    of that load (``value_near_max``): how much one percent of traffic moves it, and the load at which the model
    gives the published figure (:func:`matching_load_share`). For server latencies with a
    published load, also the reading at that load (:func:`at_published_load`): ``published_load_fraction`` and
    ``value_at_published_load`` (measured, not used: read at the published load, TPOT ~ 1 / (1 - load) turns the
    model's capacity error on the run's system into a several-fold latency error; see the validation module)."""
    detail = {"value": math.nan, "max_load_fraction": None, "published_load_fraction": None}
    if run.get("prefill_chips"):
        return {**detail, "value": _pools_tokens_per_s(accelerators, run, eta_bw, eta_c, factors)}
    s = scenario(run)
    sched = scheduler(run)
    reps = _replicas(accelerators, run, eta_bw, eta_c, factors)
    if reps.height == 0:
        return detail
    lim = replica.refined_limits(reps, s, sched, replica.limits(replica.load_curve(reps, s, sched)))
    best = (
        reps.join(lim, on=replica.KEYS)
        .filter(pl.col("max_load_fraction").is_not_null())
        .with_columns(
            tokens_per_s=pl.col("max_load_fraction")
            * pl.col("capacity_rps")
            * s.output_tokens
            * run["chips"]
            / pl.col("tensor_parallel")
        )
        .sort("tokens_per_s", descending=True)
        .head(1)
    )
    if best.height == 0:
        return detail
    if run["measure"] == "tokens_per_s":
        return {**detail, "value": best["tokens_per_s"].item()}
    if run["scenario"] == "concurrency":
        return {**detail, **at_concurrency(best, s, sched, run["batch"], predicted_column(run))}
    if run["measure"] == "request_ms_per_token":
        return {**detail, "value": lone_request_ms_per_token(best, s, sched)}
    server = run["scenario"] == "server"
    rho = pl.col("max_load_fraction") if server else pl.lit(0.0)
    detail = {
        **detail,
        "value": replica.at_load(best, s, rho, sched)[predicted_column(run)].item(),
        "max_load_fraction": best["max_load_fraction"].item() if server else None,
    }
    if server:
        near = replica.at_load(best, s, rho * NEAR_MAX_LOAD, sched)
        detail["value_near_max"] = near[predicted_column(run)].item()
        detail["matching_load_share"] = matching_load_share(best, s, sched, predicted_column(run), run["value"])
    if server and run["load_tokens_per_s"] is not None:
        detail |= at_published_load(best, run, s, sched)
    return detail


def _pools_tokens_per_s(
    accelerators: pl.DataFrame, run: dict, eta_bw: float, eta_c: float, factors: replica.Factors
) -> float:
    """System tokens/s of a disaggregated result on its published pools (``prefill_chips`` of
    ``prefill_tensor_parallel`` chips per prefill replica; the rest decode, ``tensor_parallel`` each, a step holding
    at most max_seqs sequences and max_tokens_per_step tokens): :func:`disaggregated.pools_requests_per_s`."""
    decode_chips = run["chips"] - run["prefill_chips"]
    slots = min(v for v in (run["max_seqs"], run["max_tokens_per_step"]) if v is not None)
    decode_run = {**run, "chips": decode_chips, "max_seqs": slots}
    prefill_run = {**run, "chips": run["prefill_chips"], "tensor_parallel": run["prefill_tensor_parallel"]}
    decode = _replicas(accelerators, decode_run, eta_bw, eta_c, factors)
    prefill = _replicas(accelerators, prefill_run, eta_bw, eta_c, factors)
    if decode.height == 0 or prefill.height == 0:
        return math.nan
    s = scenario(decode_run)
    rps = disaggregated.pools_requests_per_s(
        prefill,
        decode,
        s,
        run["prefill_chips"] // run["prefill_tensor_parallel"],
        decode_chips // run["tensor_parallel"],
    )
    return rps * s.output_tokens


def at_concurrency(best: pl.DataFrame, s: ServeScenario, sched: replica.Scheduler, clients: int, column: str) -> dict:
    """``column`` of a replica driven by a closed loop of ``clients``, each sending its next request when the last
    one ends (benchmark clients such as AIPerf / genai-perf at a concurrency). Little's law fixes the load: the
    requests in the system are lambda x (TTFT + (O - 1) x TPOT), read off the load curve where they equal the
    clients (interpolated between its loads). Beyond the most the replica holds in memory, the extra clients
    queue: the first token waits (clients - held) / lambda longer and the step stays the full replica's.
    ``value`` and ``load_fraction`` (the load it is read at)."""
    o = s.output_tokens
    curve = (
        replica.load_curve(best, s, sched)
        .filter(pl.col("fits_in_memory"))
        .with_columns(
            in_system=pl.col("requests_per_s_per_replica")
            * (pl.col("ttft_mean_ms") + (o - 1) * pl.col("tpot_mean_ms"))
            / 1000
        )
        .filter(pl.col("in_system").is_finite())
    )
    if curve.height == 0:
        return {"value": math.nan, "load_fraction": None}
    held, values, loads = curve["in_system"], curve[column], curve["load_fraction"]
    if clients > held[-1]:
        extra_s = (clients - held[-1]) / curve["requests_per_s_per_replica"][-1]
        queued = extra_s * 1000 if column.startswith("ttft") else 0.0
        return {"value": values[-1] + queued, "load_fraction": loads[-1]}
    i = max(int((held < clients).sum()), 1)  # first load holding at least the clients (the lowest if all do)
    if i >= curve.height or held[i] == held[i - 1]:
        return {"value": values[min(i, curve.height - 1)], "load_fraction": loads[min(i, curve.height - 1)]}
    w = (clients - held[i - 1]) / (held[i] - held[i - 1])
    w = min(max(w, 0.0), 1.0)
    return {
        "value": values[i - 1] + w * (values[i] - values[i - 1]),
        "load_fraction": loads[i - 1] + w * (loads[i] - loads[i - 1]),
    }


def lone_request_ms_per_token(best: pl.DataFrame, s: ServeScenario, sched: replica.Scheduler) -> float:
    """A lone request's time from sending it to its last token over its O output tokens: (TTFT + (O - 1) TPOT) / O,
    the means on an idle replica."""
    row = replica.at_load(best, s, pl.lit(0.0), sched).row(0, named=True)
    o = s.output_tokens
    return (row["ttft_mean_ms"] + (o - 1) * row["tpot_mean_ms"]) / o


def matching_load_share(
    best: pl.DataFrame, s: ServeScenario, sched: replica.Scheduler, column: str, published: float
) -> float | None:
    """The load, as a share of the model's highest within the limits (``max_load_fraction``), at which the model's
    ``column`` equals ``published``: interpolated on :data:`MATCH_SHARES` (half that load to 15% past it, below
    the replica's capacity), where latency climbs with load. None where the published figure is outside what the
    model gives over that span. A server result's load is where its submitter stopped; near it a queue grows as
    1 / (1 - load), so a latency the model misses by half at its own edge may be its figure at 2% less traffic:
    this says how far along the load the miss is, where the error says how far along the latency."""
    ceiling = best["max_load_fraction"].item()
    shares = [x for x in MATCH_SHARES if x * ceiling < 1]
    grid = best.join(pl.DataFrame({"_share": shares}), how="cross")
    curve = replica.at_load(grid, s, pl.col("_share") * ceiling, sched).select(
        lo=pl.col("_share"), hi=pl.col("_share").shift(-1), a=pl.col(column), b=pl.col(column).shift(-1)
    )
    # a figure that leaps past every value (a queue whose slots run out: infinite) crosses it at the first such load
    crossing = curve.filter(
        pl.col("a").is_finite() & pl.col("b").is_not_nan() & (pl.col("a") <= published) & (pl.col("b") >= published)
    ).filter(pl.col("a") < pl.col("b"))
    if crossing.height == 0:
        return None
    lo, hi, a, b = crossing.row(0)
    return hi if math.isinf(b) else lo + (published - a) / (b - a) * (hi - lo)


def at_published_load(best: pl.DataFrame, run: dict, s: ServeScenario, sched: replica.Scheduler) -> dict:
    """``run``'s latency read at its published load as a fraction of the model's capacity of one replica (system
    tokens/s / output tokens / replicas, over ``capacity_rps``): ``published_load_fraction``; read at the model's
    highest load within the limits where the published load is above it (``published_load_above_max``)."""
    per_replica_rps = run["load_tokens_per_s"] / s.output_tokens / (run["chips"] / best["tensor_parallel"].item())
    fraction = per_replica_rps / best["capacity_rps"].item()
    ceiling = best["max_load_fraction"].item()
    rho = pl.lit(min(fraction, ceiling))
    return {
        "published_load_fraction": fraction,
        "published_load_above_max": fraction > ceiling,
        "value_at_published_load": replica.at_load(best, s, rho, sched)[predicted_column(run)].item(),
    }


def fit_compute_efficiency(
    accelerators: pl.DataFrame,
    run: dict,
    eta_bw: float,
    factors: replica.Factors,
    low: float = 0.02,
    high: float = 1.0,
) -> float:
    """The compute efficiency at which the model reproduces ``run``'s published throughput: the smallest one whose
    prediction reaches it, to 1e-6 (the prediction rises with the efficiency). Regula falsi with the Illinois
    rule (Dowell & Jarratt 1971): it keeps the root bracketed like bisection but needs about a third of the
    predictions. NaN when even 100% of the peak falls short."""

    def short(eta: float) -> float:  # < 0 below the published figure
        return predict(accelerators, run, eta_bw, eta, factors) / run["value"] - 1

    f_high = short(high)
    if not f_high >= 0:
        return math.nan
    f_low, kept = short(low), 0
    if f_low >= 0:
        return low
    while high - low > 1e-6:
        mid = min(max(high - f_high * (high - low) / (f_high - f_low), low + 1e-7), high - 1e-7)
        f_mid = short(mid)
        if f_mid >= 0:
            high, f_high = mid, f_mid
            f_low, kept = (f_low / 2, kept) if kept == -1 else (f_low, -1)  # the low end kept twice: halve it
        else:
            low, f_low = mid, f_mid
            f_high, kept = (f_high / 2, kept) if kept == 1 else (f_high, 1)
        if f_high == 0:
            break
    return high
