"""Rank the options of ``options.evaluate`` and explain the choice in plain words.

Ranking: feasible options (constraints already applied by ``evaluate``: deadline, budget,
framework lock-in, multi-cloud, cloud filter, job and capacity limits) by central total cost
(for a commitment: the whole-term bill), cheapest first; one option per accelerator, so the
runners-up are different chips. The reasons compare the winner with the runners-up and with the
best option of the other accelerator family (GPU vs TPU vs Trainium), say when the top two are too
close to call on price, name the porting and its delay, a commitment's whole-term bill, the
memory fit, the price's region and age, and the pick's main risk. When nothing meets the deadline,
:func:`shortest_plan` gives the fastest plan and what to relax.
"""

from __future__ import annotations

import dataclasses
import math

import polars as pl

from workbook import catalog as catalog_mod
from workbook.catalog.schemas import PRICING_MODELS
from workbook.model.units import HOURS_PER_MONTH
from workbook.present import (
    UNNAMED_REGIONS,
    count,
    days,
    energy,
    gigabytes,
    instance_place,
    price_basis,
    regions,
    rented_words,
    stale_words,
    typical_words,
    usd,
)
from workbook.training import options
from workbook.training.scenario import PLATFORM_LABELS, Scenario

FRAMEWORK_NAMES = {"pytorch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}
# An option finishing more than this many times later than the pick is no alternative on price: time decides (a chip
# held to its largest documented job can take years where the pick takes weeks).
FAR_LATER = 2.0
# A plan that misses the deadline by at most this share of it, for at most this share of the pick's bill, is named
# beside the pick: within the schedule's own uncertainty, a date that can move a few days may save most of the bill
# (405B on 15T tokens in 80 days: the pick is a $532M TPU term, and 16,384 H100s finish in 82 days for $88M).
NEAR_MISS_DAYS = 0.10
NEAR_MISS_COST = 0.5
BATCH_SAID = 0.10  # a planned batch this far from the one asked for is said (whole micro-batches on each rank)


@dataclasses.dataclass(frozen=True)
class Recommendation:
    """The winner, up to two runners-up, the infeasible options with why, and reasons in plain words."""

    best: dict | None
    runners_up: list[dict]
    infeasible: pl.DataFrame  # accelerator_id, name, reason (one row per accelerator with no feasible option)
    reasons: list[str]
    headline: str


def _porting(option: dict, band: str = "") -> str:
    """ " including 14 days of porting" when porting delays the start (``band``: '', '_low' or '_high')."""
    delay = option[f"start_delay_days{band}"]
    return f" including {delay:.0f} days of porting" if delay > 0 else ""


def _schedule(option: dict) -> str:
    """ "finishes in 47 days including 14 days of porting (33.0 days of training)", or the training days alone."""
    if option["start_delay_days"] > 0:
        return f"finishes in {days(option['finish_days'])}{_porting(option)} ({days(option['train_days'])} of training)"
    return days(option["train_days"])


def _head(option: dict) -> str:
    """Chip on cloud (pricing, region): chips, schedule."""
    region = f", {regions(option['region'])}" if option.get("region") not in UNNAMED_REGIONS else ""
    return (
        f"{option['name']} on {option['cloud']} ({option['pricing_model']}{region}): {count(option['chips'], 'chip')}, "
        f"{_schedule(option)}"
    )


def _range(option: dict) -> str:
    """'range $low-$high' of the option's cost, or '' when both ends round alike."""
    low, high = usd(option["cost_usd_low"]), usd(option["cost_usd_high"])
    return f"range {low}-{high}" if low != high else ""


def terms_billed(option: dict) -> int:
    """Whole terms a commitment bills (``cost.billed_chip_hours``): 1, or more for a run that outlasts one (1 for an
    option with no plan, whose chip-hours are null)."""
    if option["chip_hours"] is None:
        return 1
    return round(option["chip_hours"] / (option["chips"] * option["term_months"] * HOURS_PER_MONTH))


def billed_terms(option: dict) -> str:
    """ "the whole 12-month term is billed", or "2 whole 12-month terms are billed" for a run that outlasts one."""
    terms, months = terms_billed(option), option["term_months"]
    return (
        f"the whole {months:.0f}-month term is billed"
        if terms == 1
        else f"{terms} whole {months:.0f}-month terms are billed"
    )


def rest_of_term(option: dict) -> str:
    """ "the rest of the 12-month term", or of the last one when the run outlasts one."""
    return f"the rest of the {'last ' if terms_billed(option) > 1 else ''}{option['term_months']:.0f}-month term"


def bill_words(option: dict) -> str:
    """ "whole-term bill", or "bill for 2 whole 12-month terms" for a run that outlasts one."""
    terms = terms_billed(option)
    return "whole-term bill" if terms == 1 else f"bill for {terms} whole {option['term_months']:.0f}-month terms"


def describe(option: dict) -> str:
    """One line: chip on cloud (pricing, region): chips, schedule, cost with its range (a commitment: its whole-term
    bill and, when the run leaves part of it unused, the job's share)."""
    bill = f" {bill_words(option)}" if option.get("term_months") else ""
    used = (
        f"; {usd(option['amortised_cost_usd'])} of it for this job's hours if {rest_of_term(option)} is used"
        if _billed_past_job(option)
        else ""
    )
    spread = f" ({spread})" if (spread := _range(option)) else ""
    return f"{_head(option)}, {usd(option['cost_usd'])}{bill}{spread}{used}"


def _framework_reason(option: dict, team_framework: str, platform: str) -> str:
    team = FRAMEWORK_NAMES[team_framework]
    run = FRAMEWORK_NAMES[option["run_framework"]]
    weeks, cost = option["migration_weeks"], option["migration_cost_usd"]
    delay = (
        f" Porting delays the start by about {option['start_delay_days']:.0f} days (in the schedule above)."
        if weeks > 0
        else ""
    )
    if option["framework_switch"]:
        return (
            f"It needs a {team}->{run} move (about {weeks:g} engineer-weeks, {usd(cost)} included in the cost), "
            f"because {team} support on {option['kind_label']} is {option['team_framework_support']}." + delay
        )
    if weeks == 0:
        return f"It runs your {team} code as it is (your team is on {PLATFORM_LABELS[platform]})."
    speed = (
        ""
        if option["framework_efficiency"] >= 1
        else f" ({option['support']} on {option['kind_label']}, about "
        f"{option['framework_efficiency']:.0%} of the native stack's speed)"
    )
    return (
        f"It runs {team}{speed} after about {weeks:g} engineer-weeks of porting from {PLATFORM_LABELS[platform]} "
        f"({usd(cost)} included)." + delay
    )


def _commitment_reason(best: dict, frame: pl.DataFrame) -> str | None:
    """A commitment bills its whole term: say so, give the amortised figure, and, for a run shorter than the term,
    why it still wins: the options billed for the run's hours only (``frame``: every option evaluated) it beat, or
    why each of their pricing models was ruled out, or that none was compared."""
    if not best["term_months"]:
        return None
    text = f"Commitment: {billed_terms(best)} ({usd(best['cost_usd'])}, the figure this was ranked on)"
    if not _billed_past_job(best):
        return text + "."
    text += (
        f"; if other work uses the chips for {rest_of_term(best)}, this run's share is "
        f"{usd(best['amortised_cost_usd'])} (amortised)."
    )
    billed_days = terms_billed(best) * best["term_months"] * HOURS_PER_MONTH / 24
    run = f" The run takes {days(best['train_days'])} of the {billed_days:,.0f} days billed"
    hourly = frame.filter(pl.col("term_months").is_null()).sort("cost_usd", maintain_order=True)
    beaten = hourly.filter(pl.col("feasible"))
    if beaten.height:
        return (
            text + f"{run}, yet it still wins: its {bill_words(best)} is below the cheapest option billed for the "
            f"run's hours only ({describe(beaten.row(0, named=True))})."
        )
    if hourly.height:
        own = hourly.filter(pl.col("accelerator_id") == best["accelerator_id"])
        why = "; ".join(
            f"{r['pricing_model']}: {r['infeasible_reason']}"
            for r in own.unique(subset="pricing_model", keep="first", maintain_order=True).iter_rows(named=True)
        )
        on_chip = f" (on {best['name']}, {why})" if why else ""
        return text + f"{run}; it wins because every option billed for the run's hours only is ruled out{on_chip}."
    return (
        text + f"{run}; it wins because only commitment prices were compared: check on-demand, capacity-block or "
        "contract prices before signing."
    )


def _contract_reason(best: dict, frame: pl.DataFrame) -> str | None:
    """A reserved-contract rate is a 'from' price whose term the rate card does not state (data/prices.csv), billed
    here for the run's hours only: say so, and name the cheapest option sold without a contract, so a lead can
    weigh the two before asking for the contract's terms."""
    if best["pricing_model"] != "reserved-contract":
        return None
    text = (
        f"Contract: {best['cloud']}'s reserved rate is a 'from' price whose term its rate card does not state, billed "
        f"here for the run's {days(best['train_days'])} only; a minimum term longer than that, or a larger minimum "
        "order, bills more: confirm both before relying on this figure."
    )
    others = frame.filter(pl.col("feasible") & (pl.col("pricing_model") != "reserved-contract")).sort(
        "cost_usd", maintain_order=True
    )
    open_market = others.filter(pl.col("term_months").is_null())
    if open_market.height:
        other, words = open_market.row(0, named=True), "The cheapest option without one"
    elif others.height:  # only published commitments, whose terms are known
        other = others.row(0, named=True)
        words = "No option without a contract meets the constraints; the cheapest on a published term"
    else:
        return text + " No other option meets the constraints."
    return text + f" {words}: {describe(other)}; this plan is {_versus(best['cost_usd'], other['cost_usd'])}."


def _block_reason(best: dict) -> str | None:
    """A capacity block is bought whole (whole days to 14, whole weeks beyond: ``cost.capacity_block_hours``)."""
    if best["pricing_model"] != "capacity-block":
        return None
    block_days = best["chip_hours"] / best["rented_chips"] / 24
    return (
        f"Capacity block: {days(best['train_days'])} of training take a {block_days:,.0f}-day block, booked ahead and "
        "billed whole (AWS sells them in whole days up to 14, whole weeks beyond, up to 182 days)."
    )


def _spot_reason(best: dict) -> str | None:
    """Spot chips can be taken back: what the plan assumes for that (``preemption_overhead``, from
    ``cost.preemption_overhead``) and what it means for the team."""
    if best["pricing_model"] != "spot":
        return None
    return (
        f"Spot: {best['cloud']} can take spot chips back at short notice, and each lost node stops the whole job "
        f"until it is replaced; the time and cost above add {best['preemption_overhead']:.0%} to the training time "
        "for that (waits for capacity, checkpoint writes, work redone after restarts). Checkpoint often, and expect "
        "the run to stretch if interruptions come more often than that."
    )


def _close_call(best: dict, other: dict) -> str | None:
    """One line when the two cost ranges overlap: what to decide on instead of price (none when the other finishes
    far later: :func:`_compare` says how much later)."""
    if best["cost_usd_high"] < other["cost_usd_low"] or _far_later(best, other):
        return None
    criteria = []
    if abs(best["finish_days"] - other["finish_days"]) > 0.1 * min(best["finish_days"], other["finish_days"]):
        faster = best if best["finish_days"] < other["finish_days"] else other
        criteria.append(f"time ({faster['name']} finishes first, {days(faster['finish_days'])})")
    if best["migration_weeks"] != other["migration_weeks"]:
        easier = best if best["migration_weeks"] < other["migration_weeks"] else other
        criteria.append(f"porting ({easier['name']} needs {easier['migration_weeks']:g} engineer-weeks)")
    if best["price_secondary_source"] != other["price_secondary_source"]:
        firm = other if best["price_secondary_source"] else best
        criteria.append(f"price certainty ({firm['name']}'s price is from the provider)")
    if not criteria:
        criteria.append("capacity you can actually reserve and your team's experience")
    return (
        f"Too close to call on price against {other['name']} on {other['cloud']} (the cost ranges overlap): decide "
        f"on {', '.join(criteria)}."
    )


def _millions(tokens: float) -> str:
    return f"{tokens / 1e6:.1f}M"


def _batch_line(best: dict) -> str | None:
    """The batch the plan runs where it is not the one asked for, or where it leaves a pipeline idle.

    A pipeline with fewer micro-batches a step than stages cannot interleave (Megatron's interleaved schedule needs
    one per stage: ``forward_backward_pipelining_with_interleaving``), so its idle time is (p - 1) / m of the compute,
    counted in the plan; a default batch is raised (at most ``BATCH_RAISE``-fold) where that feeds the pipeline; any
    batch runs whole micro-batches on each data-parallel rank."""
    stages, micro, planned = (
        best.get("pipeline_parallel") or 1,
        best.get("micro_batches"),
        best.get("planned_batch_tokens"),
    )
    if micro is None or planned is None:
        return None
    asked = best["global_batch_tokens"]
    if micro < stages:
        return (
            f"Batch: the {_millions(planned)}-token global batch gives this layout's {stages}-stage pipeline "
            f"{count(round(micro), 'micro-batch', 'micro-batches')} a step, fewer than its stages, so it cannot "
            f"interleave (Megatron's interleaved schedule needs one per stage): its idle time adds "
            f"{(stages - 1) / micro:.0%} to each step's compute, counted in the times above; a global batch of at "
            f"least {_millions(planned * stages / micro)} tokens would let it interleave."
        )
    if abs(planned / asked - 1) <= BATCH_SAID:
        return None
    per_micro_batch = planned / micro / best["data_parallel"]  # tokens in one rank's micro-batch
    if max(1, round(asked / best["data_parallel"] / per_micro_batch)) < micro:  # raised to feed the stages
        return (
            f"Batch: planned at {_millions(planned)} tokens, not the default {_millions(asked)}: a micro-batch for "
            f"each of the layout's {stages} pipeline stages lets it interleave (Llama 3.1 405B's batch grew from 4M "
            f"to 16M tokens during its run); give your own global batch to plan with it."
        )
    runs = count(round(micro), "whole micro-batch", "whole micro-batches")
    return (
        f"Batch: planned at {_millions(planned)} tokens, not {_millions(asked)}: each of the "
        f"{best['data_parallel']:,} data-parallel ranks runs {runs} a step."
    )


def _late_risk(best: dict) -> str | None:
    """When the slow end of the time range (porting included) passes the deadline: the pick may miss it."""
    deadline = best.get("deadline_days")
    if deadline is None or best["finish_days_high"] <= deadline:
        return None
    ranges = "efficiency and porting ranges" if best["start_delay_days_high"] > 0 else "efficiency range"
    porting = f" ({_porting(best, '_high').strip()})" if best["start_delay_days_high"] > 0 else ""
    return (
        f"Main risk: time. It is planned to finish in {days(best['finish_days'])}, but at the slow end of the "
        f"{ranges} it could take up to {days(best['finish_days_high'])}{porting} against a {deadline:g}-day target; "
        "leave slack in the schedule or plan for more chips."
    )


def _main_risk(best: dict) -> str:
    late = _late_risk(best)
    if late:
        return late
    if best["price_secondary_source"]:
        return (
            f"Main risk: the price comes from a secondary source, not {best['cloud']}'s own price list; "
            "get a quote before committing."
        )
    if _uncalibrated(str(best["mfu_basis"])):
        return (
            f"Main risk: speed. No published training run on {best['name']} calibrates it; its MFU is a proxy "
            f"({best['mfu_basis'].split(' (')[0]}), so time and cost could be off by the range shown."
        )
    why = _capacity_doubts(best)
    if why:
        return (
            f"Main risk: capacity. {best['chips']:,} {best['name']} {best['pricing_model']} on {best['cloud']}: "
            f"{'; '.join(why)}. Confirm the provider can deliver them at once."
        )
    return f"Main risk: the price is as of {best['price_as_of']:%Y-%m}; prices move, confirm it."


def _uncalibrated(mfu_basis: str) -> bool:
    """Whether no published run of the chip calibrates its efficiency: a proxy chip's, or every chip's median
    (``workbook.training.calibration``), directly or under an FP8 / INT8 rate (whose basis names its BF16 base's)."""
    return "proxy: " in mfu_basis or "no published runs" in mfu_basis


def _capacity_doubts(best: dict) -> list[str]:
    """Why the plan's chips may not be there, in words: a large order (``catalog.capacity_to_confirm``), a
    rent-at-once ceiling that is assumed rather than published, a plan near the largest documented single job, or a
    largest single job that is not a documented one; none for a plan within one block of its chip (an 8-GPU node, a
    TPU cube or pod, a Trainium instance: ``workbook.model.sizing``), which a provider rents as one unit."""
    if best["chips"] <= _block_chips(best["accelerator_id"]):
        return []
    why = []
    ceiling = best.get("capacity_max_chips")
    if catalog_mod.capacity_to_confirm(best["chips"], ceiling):
        share = "all" if ceiling is not None and best["chips"] >= ceiling else "over half"
        why.append(
            f"a large order, {share} of the {ceiling:,} chips {best['cloud']} rents at once without a reservation"
            if ceiling is not None
            else "a large order"
        )
    elif best["capacity_basis"] == "assumption":
        why.append(
            f"how many {best['cloud']} rents at once without a reservation is not published (assumed: {ceiling:,})"
        )
    if best["max_job_basis"] == "job" and 2 * best["chips"] > best["max_job_chips"]:
        near = "as large as" if best["chips"] >= best["max_job_chips"] else "near"
        why.append(f"{near} the largest single job documented on them ({best['max_job_chips']:,} chips)")
    elif best["max_job_basis"] != "job":
        article = "an" if best["max_job_basis"][0] in "aeiou" else "a"
        why.append(
            f"the largest single job assumed on them, {best['max_job_chips']:,} chips, is {article} "
            f"{best['max_job_basis']}, not a documented run"
        )
    return why


def _block_chips(accelerator_id: str) -> int:
    """The chips of one block of ``accelerator_id`` (data/accelerators.csv; 0 for an id it does not list)."""
    blocks = catalog_mod.load().accelerators.filter(pl.col("accelerator_id") == accelerator_id)["block_chips"]
    return blocks.item() if blocks.len() == 1 else 0


def _near_miss(best: dict, frame: pl.DataFrame) -> str | None:
    """The cheapest plan that fails only the deadline, by at most :data:`NEAR_MISS_DAYS` of it, for at most
    :data:`NEAR_MISS_COST` of the pick's bill (so also within any budget the pick meets): what moving the date buys."""
    deadline = best.get("deadline_days")
    if deadline is None:
        return None
    late = frame.filter(
        (pl.col("infeasible_code") == "past_deadline")
        & (pl.col("finish_days") <= deadline * (1 + NEAR_MISS_DAYS))
        & (pl.col("cost_usd") <= NEAR_MISS_COST * best["cost_usd"])
    ).sort("cost_usd", maintain_order=True)
    if late.height == 0:
        return None
    other = late.row(0, named=True)
    saving = 1 - other["cost_usd"] / best["cost_usd"]
    return (
        f"Just past the deadline: {describe(other)}, {days(other['finish_days'] - deadline)} after the "
        f"{deadline:g}-day target for {saving:.0%} less. If the date can move that far, it is the cheaper plan."
    )


def _far_later(best: dict, other: dict) -> bool:
    return other["finish_days"] > FAR_LATER * best["finish_days"]


def _versus(cost_usd: float, other_usd: float) -> str:
    saving = 1 - cost_usd / other_usd
    return f"{saving:.0%} cheaper" if saving >= 0 else f"{-saving:.0%} dearer"


def _billed_past_job(option: dict) -> bool:
    """A commitment whose whole-term bill is more than the job's share of it."""
    return bool(option.get("term_months")) and option["amortised_cost_usd"] < option["cost_usd"]


def _compare(best: dict, other: dict, say_overlap: bool = True) -> str:
    """'<best> is X% cheaper than <other>', with time or overlap (``say_overlap``: unless a close-call line follows,
    :func:`_close_call`, which says it). Against a commitment billed for more than the job, first against the job's
    share of it (what a team that uses the rest of the term pays), then its whole-term bill (what a team that does
    not pays)."""
    if _far_later(best, other):  # said as it is: no deadline rules out an option that is still feasible
        deadline = best.get("deadline_days")
        within = f", though within the {deadline:g}-day deadline" if deadline is not None else ""
        tail = f" It would finish {other['finish_days'] / best['finish_days']:.1f} times later{within}."
    else:
        overlap = say_overlap and best["cost_usd_high"] >= other["cost_usd_low"]
        tail = " The cost ranges overlap, so the two are close within the uncertainty." if overlap else ""
    if not _billed_past_job(other):
        return f"{best['name']} is {_versus(best['cost_usd'], other['cost_usd'])} than {describe(other)}.{tail}"
    return (
        f"{best['name']} is {_versus(best['cost_usd'], other['amortised_cost_usd'])} than {_head(other)}, on this "
        f"job's {usd(other['amortised_cost_usd'])} share of a {other['term_months']:.0f}-month commitment (if other "
        f"work uses {rest_of_term(other)}); {_versus(best['cost_usd'], other['cost_usd'])} if the rest goes unused "
        f"({usd(other['cost_usd'])} {bill_words(other)}{', ' + spread if (spread := _range(other)) else ''}).{tail}"
    )


# Options that would do but for the team's own limits: the nearest misses to show first (workbook.training.rules).
NEAR_MISS_CODES = ("past_deadline", "over_budget")


def rank_per_accelerator(frame: pl.DataFrame, cost: str) -> tuple[list[dict], pl.DataFrame]:
    """The cheapest feasible option of each accelerator by ``cost``, cheapest first, and the accelerators with no
    feasible option (``accelerator_id``, ``name``, ``reason``: its nearest miss's infeasibility reason: of the options
    that miss only the deadline or the budget, the one finishing first, then the cheapest; else the first). An A100
    read "finishes in 2,675 days" (256 spot chips) where 4,480 committed ones finish in 142."""
    feasible = frame.filter(pl.col("feasible")).sort(cost, maintain_order=True)
    per_chip = feasible.unique(subset="accelerator_id", keep="first", maintain_order=True)
    # (a serving frame has neither codes nor finishing days: its first option per accelerator)
    near = pl.col("infeasible_code").is_in(NEAR_MISS_CODES) if "infeasible_code" in frame.columns else pl.lit(False)
    keys = [k for k in ("_near", "finish_days", cost) if k == "_near" or k in frame.columns]
    blocked = (
        frame.filter(~pl.col("accelerator_id").is_in(per_chip["accelerator_id"].implode()))
        .with_columns(_near=near.fill_null(False), _order=pl.int_range(pl.len()))
        .with_columns(_first=pl.col("_order").min().over("accelerator_id"))  # accelerators keep the frame's order
        .sort([*keys, "_order"], descending=[True] + [False] * len(keys), nulls_last=True)
        .group_by("accelerator_id")
        .first()
        .sort("_first")
        .select(
            "accelerator_id",
            "name",
            pl.col("infeasible_reason").alias("reason"),
            *(c for c in ("infeasible_code", "train_days", "chips") if c in frame.columns),
        )
    )
    return per_chip.to_dicts(), blocked


def none_feasible(blocked: pl.DataFrame, what: str) -> str:
    """'No option meets the <what>.' and why, for the first four accelerators; for one with no price, how long it
    would train all the same (computed, only not costed), so a price of the team's own completes the answer."""

    def why(r: dict) -> str:
        if r.get("infeasible_code") != "no_price" or r.get("train_days") is None:
            return r["reason"]
        return (
            f"{r['reason']} (it would train in {days(r['train_days'])} on {count(r['chips'], 'chip')}: give your own "
            "price to cost it)"
        )

    return f"No option meets the {what}. " + "; ".join(f"{r['name']}: {why(r)}" for r in blocked.head(4).to_dicts())


def recommend(frame: pl.DataFrame, team_framework: str = "pytorch", platform: str = "nvidia") -> Recommendation:
    """Rank ``frame`` (from ``options.evaluate``) and explain the winner."""
    ranked, blocked = rank_per_accelerator(frame, "cost_usd")
    if not ranked:
        return Recommendation(
            None, [], blocked, [none_feasible(blocked, "constraints")], "No accelerator meets these constraints"
        )
    best, runners = ranked[0], ranked[1:3]
    low, high = usd(best["cost_usd_low"]), usd(best["cost_usd_high"])
    spread = (
        f"its cost could be {low} to {high} (efficiency and price uncertainty)"
        if low != high
        else f"its cost is {low} at either end of the efficiency range"
        + (f" ({billed_terms(best)})" if best["term_months"] else "")
    )
    reasons = [
        f"Cheapest option that meets the constraints; {spread}, training in {days(best['train_days_low'])} "
        f"to {days(best['train_days_high'])}"
        + (
            f" (finishing in {days(best['finish_days_low'])} to {days(best['finish_days_high'])} with porting)"
            if best["start_delay_days_high"] > 0
            else ""
        )
        + f". Energy: {energy(best['energy_kwh'], best['co2e_kg'])}."
    ]
    if runners:  # against the cheapest runner-up that is an alternative on time, else the cheapest
        other = next((o for o in runners if not _far_later(best, o)), runners[0])
        close = _close_call(best, other)
        reasons.extend(line for line in (_compare(best, other, say_overlap=close is None), close) if line)
    rival = next((o for o in ranked if o["kind"] != best["kind"]), None)
    if rival is not None and rival not in runners[:1]:
        reasons.append(f"Best {rival['kind_label']} alternative: {_compare(best, rival)}")
    near = _near_miss(best, frame)
    if near:
        reasons.append(near)
    reasons.append(_framework_reason(best, team_framework, platform))
    reasons.extend(
        line
        for line in (
            _commitment_reason(best, frame),
            _contract_reason(best, frame),
            _block_reason(best),
            _spot_reason(best),
        )
        if line
    )
    reasons.append(
        f"Memory fits: {gigabytes(best['memory_per_chip_gb'])} needed per chip of the "
        f"{gigabytes(best['hbm_gb'])} each reports "
        f"(at least {count(best['min_chips_to_fit'], 'chip')} needed to fit the model)."
    )
    reasons.extend(line for line in [_batch_line(best)] if line)
    age = "about " if best["price_as_of_approx"] else ""
    caveat = (
        " It comes from a secondary source, not the provider's price list: confirm it before committing."
        if best["price_secondary_source"]
        else ""
    )
    reasons.append(
        f"Price: ${best['usd_per_chip_hour']:.2f} per chip-hour, {price_basis(best, 'the cheapest')} "
        f"on {best['cloud']} that can run {count(best['chips'], 'chip')} ({instance_place(best)})"
        f"{typical_words(best)}; as of {age}{best['price_as_of']:%Y-%m}."
        + rented_words(best)
        + stale_words(best)
        + caveat
    )
    reasons.append(_main_risk(best))
    bill = f" ({bill_words(best)})" if best["term_months"] else ""
    mine = ", your price" if best.get("user_price") else ""
    headline = (
        f"Train on {best['name']} ({best['cloud']}, {best['pricing_model']}{mine}): {count(best['chips'], 'chip')}"
        + (f" ({best['layout']})" if best.get("layout") else "")
        + f", {_schedule(best)}, {usd(best['cost_usd'])}{bill}"
    )
    return Recommendation(best, runners, blocked, reasons, headline)


def shortest_plan(
    scenario: Scenario, catalog: catalog_mod.Catalog | None = None, frame: pl.DataFrame | None = None
) -> list[str]:
    """When nothing meets the deadline: the fastest plan without it, and what to relax (days, budget, cloud,
    precision, pricing), each checked by evaluating the relaxed scenario. ``frame``: the scenario's own options
    where the caller has them (else evaluated here)."""
    c = scenario.constraints
    free = dataclasses.replace(scenario, constraints=dataclasses.replace(c, deadline_days=None, budget_usd=None))
    # Without a deadline each accelerator is sized differently (a smaller, slower job can be cheaper), so the plans
    # sized for the deadline that miss only it are candidates too: 70B on Trainium2 in 45 days missed by 1.3 days on
    # 4,096 chips, yet "the fastest plan" was a 1,632-chip one finishing in 73 days.
    own = options.evaluate(scenario, catalog) if frame is None else frame
    late = own.filter(pl.col("infeasible_code") == "past_deadline")
    feasible = pl.concat([options.evaluate(free, catalog).filter(pl.col("feasible")), late], how="diagonal_relaxed")
    if feasible.height == 0:
        return ["No plan exists even without the deadline and budget: see the reasons above."]
    deadline = c.deadline_days if c.deadline_days is not None else math.inf
    quickest = feasible["finish_days"].min()
    # Among the plans within 1% of the quickest, the cheapest (several pricing models reach the same chips).
    fastest = feasible.filter(pl.col("finish_days") <= quickest * 1.01).sort("cost_usd").row(0, named=True)
    lines = []
    if quickest > deadline:
        lines += [
            f"Nothing finishes within {deadline:g} days. The fastest plan: {describe(fastest)}.",
            f"Relax the deadline to about {count(math.ceil(fastest['finish_days']), 'day')} for that plan"
            + (
                f"; {fastest['start_delay_days']:.0f} of them are porting before training can start (start the port "
                "now, or pick a platform your team already runs on, to win them back)."
                if fastest["start_delay_days"] > 0
                else "."
            ),
        ]
    within = feasible.filter(pl.col("finish_days") <= deadline).sort("cost_usd")
    if c.budget_usd is not None and within.height:
        lines.append(f"Raise the budget to {usd(within['cost_usd'][0])}: {describe(within.row(0, named=True))}.")
    probes = []
    if c.clouds:
        probes.append(("allow any cloud", dataclasses.replace(scenario, constraints=dataclasses.replace(c, clouds=()))))
    if scenario.precision == "bf16":
        probes.append(("train in FP8", dataclasses.replace(scenario, precision="fp8")))
    if set(scenario.pricing) != set(PRICING_MODELS):
        probes.append(("reserve capacity (any pricing model)", dataclasses.replace(scenario, pricing=PRICING_MODELS)))
    for label, relaxed in probes:
        found = options.evaluate(relaxed, catalog).filter(pl.col("feasible")).sort("cost_usd")
        if found.height:
            lines.append(f"Or {label}: {describe(found.row(0, named=True))}.")
    return lines
