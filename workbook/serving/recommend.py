"""Rank the options of ``evaluate_serving`` and explain the choice in plain words (the serving counterpart of
:mod:`workbook.training.recommend`; the app card, the CLI and the report all use it).

Ranking: feasible options by USD per million output tokens at the user's traffic, one per accelerator. The
reasons give the replicas and the load each carries against the headroom target, the latencies at that load,
what limits a replica, the software stack whose published results set the efficiency (or its proxy), memory,
the monthly cost and the idle capacity paid for, and the comparison with the runner-up.
"""

from __future__ import annotations

import dataclasses
import math

import polars as pl

from workbook.catalog import capacity_to_confirm
from workbook.model import cost
from workbook.model.units import HOURS_PER_MONTH
from workbook.present import (
    count,
    gigabytes,
    instance_place,
    milliseconds,
    per_million_tokens,
    price_basis,
    rent_words,
    rented_words,
    stale_words,
    token_price,
    typical_words,
    usd,
    whole_instances,
)
from workbook.serving import band, replica
from workbook.serving.scenario import SPOT_WARNING
from workbook.training.recommend import none_feasible, rank_per_accelerator

EDGE_FRACTION = 0.9  # a latency at 90%+ of its target is "at the edge"
COSTLY_TARGETS = 2  # latency targets that at least double the fleet are worth a line on what looser ones save
KIND_WORDS = {"disaggregated": "disaggregated", "moe": "mixture-of-experts"}  # band.KINDS in words


@dataclasses.dataclass(frozen=True)
class ServingRecommendation:
    """The winner, up to two runners-up, the accelerators with no feasible option, reasons and warnings."""

    best: dict | None
    runners_up: list[dict]
    infeasible: pl.DataFrame  # accelerator_id, name, reason
    reasons: list[str]
    warnings: list[str]  # above the headroom target, at the edge of a latency target, near the cloud's capacity
    headline: str
    headroom: float | None
    usd_per_month: float | None
    scenario: object = None  # the ServeScenario answered (its latency targets), for the brief


def replicas_words(o: dict) -> str:
    """The replicas in a few words: "3 independent replicas of 2 chips", or both pools when disaggregated."""
    decode = f"{count(o['replicas'], 'independent replica')} of {count(o['chips_per_replica'], 'chip')}"
    if not o.get("disaggregated"):
        return decode
    prefill = f"{count(o['prefill_replicas'], 'prefill replica')} of {count(o['prefill_chips_per_replica'], 'chip')}"
    return f"{prefill} and {decode.replace('independent replica', 'decode replica')}"


def _replica_line(o: dict) -> str:
    words = [w for w in (_pipeline_words(o), _link_words(o)) if w]
    detail = f" ({'; '.join(words)})" if words else ""
    return f"{replicas_words(o)}{detail}"


def split_words(o: dict) -> str:
    """What disaggregation saves, as a sentence without its full stop ("" for replicas that do both)."""
    if not o.get("disaggregated"):
        return ""
    return (
        f"Prefill and decode run on separate replicas (disaggregated serving): {count(o['chips'], 'chip')} instead "
        f"of {o['chips_without_disaggregation']:,} for replicas that do both"
    )


def _disaggregation_line(o: dict) -> str:
    """Why prefill and decode run apart, what it saves and what it costs."""
    return (
        f"{split_words(o)}. Decode steps no longer carry prompts, "
        "so decode replicas run closer to the per-token target, and prefill replicas batch the waiting prompts into "
        "steps of their own, held only by the first-token target "
        f"(at {o['prefill_utilisation']:.0%} of what they sustain). Each prompt's KV "
        f"cache moves from one to the other over the {o['scaleout_bytes_per_s'] * 8 / 1e9:,.0f} Gb/s network "
        f"({o['kv_transfer_ms']:,.1f} ms, counted in the first token). Two pools to run and scale instead of one."
    )


def _split_weighed_line(o: dict, scenario) -> list[str]:
    """Where separate prefill and decode replicas were asked for and not picked: what they would need, or that they
    could not meet the targets."""
    if not scenario.disaggregation or o.get("disaggregated"):
        return []
    split = o.get("disaggregated_chips")
    if split is None:
        return [
            "Separate prefill and decode replicas (disaggregated serving) were weighed and cannot meet your latency "
            "targets on this chip, so each replica does both."
        ]
    return [
        f"Separate prefill and decode replicas (disaggregated serving) were weighed: they would need "
        f"{count(split, 'chip')}, not fewer than the {count(o['chips'], 'chip')} of replicas that do both, so each "
        "replica does both."
    ]


def _pipeline_words(o: dict) -> str:
    """A replica spread over nodes: how many, and what the pipeline costs."""
    stages = o.get("pipeline_parallel") or 1
    if stages == 1:
        return ""
    return (
        f"a pipeline of {stages} nodes of {o['chips_per_replica'] // stages} over the "
        f"{o['scaleout_bytes_per_s'] * 8 / 1e9:,.0f} Gb/s network, as the model does not fit in one node: each "
        "token passes every stage in turn, so each stage's weight read adds to the time per token"
    )


def _link_words(o: dict) -> str:
    """How the replica's tensor-parallel all-reduces are charged, if it has any."""
    if o.get("allreduce_efficiency") is None:
        return ""
    link = " over PCIe" if o["over_pcie"] else ""
    where = " within each node" if (o.get("pipeline_parallel") or 1) > 1 else ""
    if o.get("allreduce_latency_us") is not None:
        latency = o["allreduce_latency_us"]
        return (
            f"tensor parallel{link}{where}: its all-reduces cost {latency:.0f} µs each in every step, carry a decode "
            f"step's tokens at {o['allreduce_efficiency']:.0%} of the link's one-way speed (as measured on MLPerf) "
            "and a long prompt's at its full speed"
        )
    speed = "the link's full one-way speed (the compiler overlaps collectives with the matmuls)"
    return f"tensor parallel{link}{where}: its all-reduces are charged at {speed}"


def _warnings(o: dict, scenario) -> list[str]:
    out = [SPOT_WARNING] if o["pricing_model"] == "spot" else []
    if o["pricing_model"] == "capacity-block":
        out.append(
            f"Capacity blocks last at most {cost.CAPACITY_BLOCK_MAX_DAYS} days: a fleet that serves longer must book "
            "new blocks as they end, at that day's price and availability, or move to a reservation."
        )
    if o["utilisation"] > o["headroom"] + 1e-9:
        out.append(
            f"Each replica runs at {o['utilisation']:.0%} of its capacity, above the {o['headroom']:.0%} load "
            "ceiling: traffic peaks will queue and latency will grow."
        )
    for label, value, target in (
        ("p99 time per token", o["tpot_ms"], scenario.tpot_ms),
        ("p99 time to first token", o["ttft_ms"], scenario.ttft_ms),
    ):
        if target is not None and value >= EDGE_FRACTION * target:
            out.append(
                f"At the edge: the {label} ({milliseconds(value)} ms) is within 10% of the {milliseconds(target)} ms "
                "target."
            )
    out += _memory_edge_words(o)
    ceiling = o.get("capacity_max_chips")
    if capacity_to_confirm(o["chips"], ceiling):
        out.append(
            f"Capacity: {o['chips']:,} chips on {o['cloud']} {o['pricing_model']} is {o['chips'] / ceiling:.0%} of the "
            f"{ceiling:,} one buyer can rent there at once without a reservation ({o['capacity_basis']}): confirm the "
            "provider can deliver them, or reserve them."
            if ceiling is not None
            else f"Capacity: {o['chips']:,} chips on {o['cloud']} {o['pricing_model']} is a large order: confirm the "
            "provider can deliver them all before you commit."
        )
    return out


def _memory_edge_words(o: dict) -> list[str]:
    """Where the weights leave a chip less room beside the engine's runtime than engines have been logged to keep
    beyond it (:data:`workbook.serving.replica.MEMORY_EDGE_GB`), the answer rests on that runtime: said, with what
    to do (the fleet picks such a replica only where none with room needs as few chips)."""
    room = o["memory_room_gb"]
    if room >= replica.MEMORY_EDGE_GB:
        return []
    return [
        f"Memory at the edge: the weights take {gigabytes(o['weights_gb'])} of the {gigabytes(o['hbm_gb'])} each chip "
        f"reports, leaving {gigabytes(max(room, 0.0))} beside the {gigabytes(o['overhead_gb'])} kept for the "
        f"engine's own use, where engines have been measured to keep up to {gigabytes(replica.MEMORY_EDGE_GB)} more "
        "(activations, workspaces; a mixture of experts' can take several GB): the engine may not start, or hold "
        "fewer sequences. A replica of more chips, or a smaller weight precision, leaves room."
    ]


def _targets_cost_line(o: dict) -> list[str]:
    """Where the latency targets at least double the fleet (the replicas held far below the headroom target), what
    looser targets would save (:func:`workbook.serving.options.what_targets_cost`)."""
    needed = o.get("chips_needed", o["chips"])
    if o.get("relaxed_chips") is None or needed < COSTLY_TARGETS * o["relaxed_chips"]:
        return []
    monthly = whole_instances(o["relaxed_chips"], o) * o["usd_per_chip_hour"] * HOURS_PER_MONTH
    if monthly >= o["usd_per_month"]:  # the instances rented whole are no fewer: looser targets would save nothing
        return []
    prompt = (
        f" (the 99th-percentile prompt alone takes {o['prefill_tail_ms']:,.0f} ms to prefill)"
        if o.get("relaxed_ttft_ms") is not None
        else ""
    )
    sized_load = o["load_fraction"] * o["chips"] / needed  # the load of the replicas the traffic needs
    return [
        f"Your latency targets set the fleet's size: they hold each replica to {sized_load:.0%} of what it "
        f"could serve without them{prompt}. Allowing {o['relaxed_targets']}, what these replicas give at the load "
        f"that many would carry, at most {count(o['relaxed_chips'], 'chip')} would serve this traffic "
        f"({usd(monthly)} a month)."
    ]


def _commitment_line(o: dict) -> list[str]:
    """A commitment bills its whole term whatever the traffic (as a training commitment does)."""
    term = cost.TERM_MONTHS.get(o["pricing_model"])
    if term is None:
        return []
    text = (
        f"Commitment: the {term}-month term bills {usd(o['usd_per_month'] * term)} in all, whatever the traffic does; "
        "serving for fewer months still pays the whole term."
    )
    hourly = o.get("on_demand_usd_per_chip_hour")
    if hourly is not None and hourly < o["usd_per_chip_hour"]:
        text += (
            f" It is no discount here: on-demand, {o['on_demand_cloud']} lists this chip from ${hourly:.2f} per "
            f"chip-hour against this commitment's ${o['usd_per_chip_hour']:.2f}, with no term: price the fleet on "
            "demand before committing."
        )
    return [text]


def _quote_words(o: dict) -> str:
    """The quote a fleet is priced at: an instance rented whole that can hold a replica, a TPU's rate per chip (the
    same for every slice size) or a rate per chip."""
    if o["kind"] == "tpu":
        return f", billed per chip of its slices (quoted for {instance_place(o)}; the same per chip at every size)"
    if (o.get("rent_unit") or 1) > 1:
        return f" that can hold a replica, {instance_place(o)}"
    return f", billed per chip ({instance_place(o)})"


def _rented_head(o: dict) -> str:
    """ " (8 rented)" where the fleet's instances are rented whole and it does not fill them."""
    return f" ({o['rented_chips']:,} rented)" if (o.get("rented_chips") or 0) > o["chips"] else ""


def _all_rented_words(o: dict) -> str:
    """Where the fleet runs on more chips than its traffic needs, because its instances are rented whole: why."""
    needed = o.get("chips_needed")
    if needed is None or o["chips"] <= needed:
        return ""
    return (
        f" {count(needed, 'chip')} would carry this traffic; {rent_words(o)}, so the fleet runs on all "
        f"{o['chips']:,} it pays for, each replica at less load."
    )


def _latency_line(o: dict, scenario) -> str:
    """The p99 latencies (the statistic targets set) against the targets, and the means."""

    def target(value):
        return "" if value is None else f", target {milliseconds(value)} ms"

    return (
        f"At this load: p99 time per token {o['tpot_ms']:,.1f} ms{target(scenario.tpot_ms)} (mean "
        f"{o['tpot_mean_ms']:,.1f} ms); p99 time to first token {o['ttft_ms']:,.0f} ms{target(scenario.ttft_ms)} "
        f"(mean {o['ttft_mean_ms']:,.0f} ms). {_interference_words(o)}"
    )


def _interference_words(o: dict) -> str:
    if o.get("disaggregated"):
        return (
            "The first token includes the queue for a prefill replica and the KV cache's transfer; the time per "
            "token is the decode replicas' alone."
        )
    return "Prefill is interleaved with decode steps, so both include its interference and the queueing."


def _mean_count(value: float) -> str:
    """A mean count in words: 19, 1,240; 0.3 where it is under ten (a lightly loaded replica, not "0")."""
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def _spread_words(scenario) -> str:
    """The answers' spread where the user gave one: their long tail holds the cache longer."""
    if not scenario.output_tokens_p99:
        return ""
    return (
        f"; answers average {scenario.output_tokens:,} tokens and reach {scenario.output_tokens_p99:,} at the 99th "
        "percentile, and a long one holds its cache longer"
    )


def _full_cache_words(best: dict, scenario) -> str:
    """What the engine does where its KV cache, not its batch limit, caps the sequences
    (``ServeScenario.capacity_policy``): the prompts it prefills again, or the whole answers it reserves."""
    if not best.get("cache_bound"):
        return ""
    if scenario.capacity_policy == "reserve":
        return (
            f"; the engine reserves room for each request's prompt and whole answer "
            f"up front ({replica.reserved_answer_tokens(scenario):,} answer tokens) and never pauses one"
        )
    tokens = best["recomputed_tokens_per_request"]
    if tokens < 1:
        return ""
    return (
        f"; the cache fills at times at this load, and to make room the engine pauses its newest sequences and "
        f"prefills their prompts again: about {tokens:,.0f} tokens a request, {tokens / scenario.prompt_tokens:.0%} "
        "more prompt work"
    )


def range_line(o: dict) -> str:
    """The cost's range: the price quotes' spread and how far the model's throughput has been from published
    results of the stack within latency limits (:mod:`workbook.serving.band`)."""
    fewer, more = math.exp(-o["model_error_low"]), math.exp(-o["model_error_high"])
    results = f"{o['model_error_results']}, each predicted without its own system's results"
    kind = "".join(f" {KIND_WORDS[key]}" for key in band.KINDS if o.get(key))  # the kind of results the range takes
    where = {
        "chip": f"published{kind} results of {o['stack_name']} on this chip within latency limits ({results})",
        "stack and chip": f"this chip has no published{kind} result of {o['stack_name']} within latency limits; "
        f"{o['stack_name']}'s on other chips and other stacks' on this chip ({results})",
        "stack": f"this chip has no published{kind} result within latency limits; {o['stack_name']}'s on other chips "
        f"({results})",
        "all": f"{o['stack_name']} has no published{kind} result within latency limits; those of every stack "
        f"({results})",
    }[o["model_error_scope"]]
    # whole replicas (chips one at a time for split pools, whose two kinds of replica differ)
    per = 1 if o.get("disaggregated") else o.get("chips_per_replica", 1)
    low, high = (per * max(1, round(o.get("chips_needed", o["chips"]) / per / ratio)) for ratio in (fewer, more))
    chips = f"about {low:,} to {high:,} chips may be needed" if low < high else f"about {count(low, 'chip')} either way"
    return (
        f"Range {token_price(o['usd_per_million_tokens_low'])} to "
        f"{per_million_tokens(o['usd_per_million_tokens_high'])} ({usd(o['usd_per_month_low'])} to "
        f"{usd(o['usd_per_month_high'])} a month): the price quotes' spread, and {where} served {more:.2f}x to "
        f"{fewer:.2f}x the throughput the model predicts for them: {chips}."
    )


def _stack_line(o: dict, scenario) -> str:
    note = o["stack_note"] or ""
    said = [o.get("stack_comparison"), o.get("stack_excluded")]
    comparison = f" ({'; '.join(w for w in said if w)})" if any(said) else ""
    return (
        f"Software: {o['stack_name']}{comparison}; its efficiency is "
        f"{note[0].lower() + note[1:] if note else 'not sourced'}"
        + _fixed_cost_words(o)
        + ". "
        + _sustained_words(o)
        + _matmul_words(o, scenario)
        + _engine_words(o)
    )


def _fixed_cost_words(o: dict) -> str:
    """The engine's fixed cost a step and where it comes from: stacks' sources differ in date, which the reader
    comparing two of them should see."""
    if o.get("layer_overhead_s") is None or not o.get("overhead_basis"):
        return ""
    per_layer_us = o["layer_overhead_s"] * 1e6
    return f"; its fixed step cost, {per_layer_us:.0f} µs a layer, {o['overhead_basis']}"


def _sustained_words(o: dict) -> str:
    """Where the chip's matmuls run at a clock of their own, measured or estimated (:mod:`workbook.model.sustained`)."""
    factor = o.get("sustained_compute_factor")
    if factor is None or factor == 1.0:
        return ""
    basis = (
        "estimated: no measurement of this chip was found, so it is the clock a sibling of the same die was "
        "measured to hold at the same watts per SM, an upper bound"
        if o.get("sustained_compute_basis") == "estimated"
        else "as measured: a vendor's max-achievable FLOPs, or the same benchmarks run on this chip and its "
        "full-power sibling"
    )
    return (
        f"Per unit of datasheet peak, this chip sustains {factor:.2f}x the matmul rate of its vendor's measured chips "
        f"on average (the clock it holds under a dense GEMM at its power limit, {basis}). "
    )


def _matmul_words(o: dict, scenario) -> str:
    """How the weights are multiplied on the chip: what FP4 matmuls gain, or, on a chip without matmuls of the
    weights' precision (FP4 on H100, FP8 on A100), the rate they are multiplied at instead
    (:func:`workbook.serving.scenario.matmul_precision`)."""
    if o.get("fp4_factor") is not None:
        return (
            f"FP4 matmuls speed up {o['fp4_fraction']:.0%} of this model's compute time (the rest, attention and"
            f" the passes over each token's activations, runs as with FP8), so FP4 weights reach"
            f" {o['fp4_factor']:.0%} of that efficiency, of the chip's FP4 peak ({o['fp4_basis']}). "
        )
    weights, used = scenario.weight_precision.upper(), (o.get("matmul_precision") or scenario.weight_precision).upper()
    if used == weights:
        return ""
    return (
        f"This chip has no {weights} matmuls: its {weights} weights are dequantised to {used} as they are read and "
        f"multiplied at the {used} rate (weight-only {weights}: the smaller weights speed up reading them, not the "
        "arithmetic). "
    )


def _engine_words(o: dict) -> str:
    """The engine's default scheduler settings that set the queueing of prompts, or that none is known."""
    if o["max_tokens_per_step"] is None:
        return "Engine: no verified default settings for this stack, so prompts are not queued for a token budget."
    limits = [f"{o['max_tokens_per_step']:,} tokens per step"]
    if o["max_seqs"] is not None:
        limits.append(f"at most {o['max_seqs']:,} sequences")
    limits.append("chunked prefill" if o["chunked_prefill"] else "prompts not chunked")
    if o.get("schedule_ahead") and o.get("disaggregated"):  # the prefill pool, which makes the first token, does not
        limits.append("decode replicas schedule the next batch while the current one runs (prefill replicas do not)")
    elif o.get("schedule_ahead"):
        limits.append("the next batch scheduled while the current one runs, so a first token waits a step more")
    return f"Engine defaults: {', '.join(limits)} ({o['engine']})."


def _compare(best: dict, other: dict) -> str:
    saving = 1 - best["usd_per_million_tokens"] / other["usd_per_million_tokens"]
    return (
        f"{saving:.0%} cheaper per token than {other['name']} on {other['cloud']} with {other['stack_name']} "
        f"({per_million_tokens(other['usd_per_million_tokens'])}, "
        f"{count(other['chips'], 'chip')}{_rented_head(other)})."
    )


def close_call(best: dict, other: dict) -> str | None:
    """One line when the two cost ranges overlap (prices and the model's error): what to decide on instead."""
    if best["usd_per_million_tokens_high"] < other["usd_per_million_tokens_low"]:
        return None
    criteria = []
    if abs(best["tpot_ms"] - other["tpot_ms"]) > 0.1 * min(best["tpot_ms"], other["tpot_ms"]):
        criteria.append(
            f"latency (p99 per token {best['tpot_ms']:,.0f} ms here, {other['tpot_ms']:,.0f} ms on {other['name']})"
        )
    if best["price_secondary_source"] != other["price_secondary_source"]:
        firm = other if best["price_secondary_source"] else best
        criteria.append(f"price certainty ({firm['name']}'s price is from the provider)")
    if best["stack"] != other["stack"]:
        criteria.append(f"the software your team can run ({best['stack_name']} or {other['stack_name']})")
    if not criteria:
        criteria.append("capacity you can actually get")
    return (
        f"Too close to call against {other['name']} on {other['cloud']} within the ranges: decide on "
        f"{', '.join(criteria)}, or measure both on your traffic."
    )


def ceiling_words(o: dict) -> str:
    """The sizing rule in words: the headroom target is a ceiling on each replica's load, the rest left for peaks."""
    return f"sized to at most {o['headroom']:.0%} of it, {1 - o['headroom']:.0%} left for traffic peaks"


def _limit_cause_words(best: dict) -> str:
    """What breaks the first-token target past the replica's limit, where it is that target: a lone request's first
    token can be far inside it at the chosen load and still be what stops the load rising
    (:func:`workbook.serving.replica.limits`)."""
    if best["limit"] != "first-token target" or not best.get("limit_cause"):
        return ""
    full = "its KV cache is full" if best.get("cache_bound") else "the engine's batch limit is reached"
    return {
        "slot": f": beyond it, new requests wait for a free sequence slot ({full})",
        "queue": ": beyond it, prompts wait too long behind the prompts queued ahead of them",
        "prefill": ": beyond it, the longest prompts' own prefill, in steps shared with decoding, takes too long",
    }[best["limit_cause"]]


def _router_words(best: dict, scenario) -> str:
    """Where the prompts' wait sizes a fleet of several replicas (the first-token target binds, not for a free
    sequence slot, which each replica has its own of), how requests reach them: it decides how long a prompt waits
    (``ServeScenario.router``: :func:`workbook.serving.replica.router_pool`)."""
    if best["limit"] != "first-token target" or best["replicas"] == 1 or best.get("limit_cause") == "slot":
        return ""
    if scenario.router == "round-robin":
        return "; requests are spread round-robin, so each replica queues its own prompts"
    return (
        "; a router sends each request to the least busy replica (as vLLM's production-stack router, llm-d and NVIDIA "
        "Dynamo do), so the prompts share one queue: behind a round-robin load balancer each replica would queue its "
        "own, and more would be needed"
    )


def recommend_serving(frame: pl.DataFrame, scenario) -> ServingRecommendation:
    """Rank ``frame`` (from ``evaluate_serving(scenario)``) and explain the winner."""
    ranked, blocked = rank_per_accelerator(frame, "usd_per_million_tokens")
    if not ranked:
        return ServingRecommendation(
            None,
            [],
            blocked,
            [none_feasible(blocked, "targets with this pricing and cloud")],
            [],
            "No accelerator meets these targets with this pricing and cloud",
            None,
            None,
            scenario,
        )
    best, runners = ranked[0], ranked[1:3]
    one = best["replicas"] == 1
    reasons = [
        f"{_replica_line(best)} {'serves' if one else 'serve'} {scenario.output_tokens_per_s:,.0f} output "
        f"tokens/s; {'it runs' if one else 'each runs'} at "
        f"{best['utilisation']:.0%} of the load your latency targets allow it ({ceiling_words(best)}; a replica's "
        f"limit is its {best['limit']}{_limit_cause_words(best)})"
        f"{_router_words(best, scenario)}.{_all_rented_words(best)}",
        *([_disaggregation_line(best)] if best.get("disaggregated") else []),
        *_split_weighed_line(best, scenario),
        _latency_line(best, scenario),
        _stack_line(best, scenario),
        f"Memory per chip: {gigabytes(best['memory_per_chip_gb'])} of the {gigabytes(best['hbm_gb'])} it reports "
        f"(weights {gigabytes(best['weights_gb'])}, the engine's runtime {gigabytes(best['overhead_gb'])}, KV cache "
        f"{gigabytes(best['kv_cache_gb'])}: its share of the "
        f"{_mean_count(best['sequences'])} sequences in flight on average in each replica{_spread_words(scenario)})"
        f"{_full_cache_words(best, scenario)}.",
        f"{usd(best['usd_per_month'])} a month ({best['pricing_model']} at ${best['usd_per_chip_hour']:.2f} per "
        f"chip-hour: {price_basis(best, 'the cheapest')}{_quote_words(best)}, as of {best['price_as_of']:%Y-%m}"
        f"{typical_words(best)}); run at the {best['headroom']:.0%} load ceiling, the same replicas "
        f"would cost {per_million_tokens(best['usd_per_million_tokens_at_ceiling'])}.{rented_words(best)}"
        f"{stale_words(best)}",
        range_line(best),
        *_targets_cost_line(best),
        *_commitment_line(best),
    ]
    if best["price_secondary_source"]:
        reasons.append(
            "The price comes from a secondary source, not the provider's list: confirm it before committing."
        )
    if runners:
        reasons.append(_compare(best, runners[0]))
        reasons.extend(line for line in [close_call(best, runners[0])] if line)
    mine = ", your price" if best.get("user_price") else ""
    headline = (
        f"Serve on {best['name']} ({best['cloud']}, {best['pricing_model']}{mine}) with {best['stack_name']}: "
        f"{count(best['chips'], 'chip')}{_rented_head(best)}, {per_million_tokens(best['usd_per_million_tokens'])}, "
        f"{usd(best['usd_per_month'])} a month"
    )
    return ServingRecommendation(
        best,
        runners,
        blocked,
        reasons,
        _warnings(best, scenario),
        headline,
        best["headroom"],
        best["usd_per_month"],
        scenario,
    )
