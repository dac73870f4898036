"""Rank the options of ``options.evaluate`` and explain the choice in plain words.

Ranking: feasible options (constraints already applied by ``evaluate``: deadline, budget,
framework lock-in, multi-cloud, cloud filter) by central total cost, cheapest first; one
option per accelerator, so the runners-up are different chips. The reasons compare the winner
with the runners-up and with the best option of the other accelerator family (GPU vs TPU vs
Trainium), name the framework move if any, the memory fit, the uncertainty, and the price's age.
"""

from __future__ import annotations

import dataclasses

import polars as pl

FRAMEWORK_NAMES = {"pytorch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}
KIND_NAMES = {"gpu": "GPU", "tpu": "TPU", "trainium": "Trainium"}


@dataclasses.dataclass(frozen=True)
class Recommendation:
    """The winner, up to two runners-up, the infeasible options with why, and reasons in plain words."""

    best: dict | None
    runners_up: list[dict]
    infeasible: pl.DataFrame  # accelerator_id, name, reason (one row per accelerator with no feasible option)
    reasons: list[str]
    headline: str


def usd(value: float) -> str:
    """$1.2M, $850k, $4,200: money for people."""
    if value is None:
        return "n/a"
    if abs(value) >= 1e9:
        return f"${value / 1e9:.1f}B"
    if abs(value) >= 1e6:
        return f"${value / 1e6:.1f}M"
    if abs(value) >= 1e4:
        return f"${value / 1e3:.0f}k"
    return f"${value:,.0f}"


def days(value: float) -> str:
    return f"{value:.1f} days" if value < 100 else f"{value:,.0f} days"


def describe(option: dict) -> str:
    """One line: chip on cloud (pricing): chips, days, cost with its range."""
    return (
        f"{option['name']} on {option['cloud']} ({option['pricing_model']}): {option['chips']:,} chips, "
        f"{days(option['train_days'])}, {usd(option['cost_usd'])} "
        f"(range {usd(option['cost_usd_low'])}-{usd(option['cost_usd_high'])})"
    )


def _framework_reason(option: dict, team_framework: str) -> str | None:
    team = FRAMEWORK_NAMES[team_framework]
    run = FRAMEWORK_NAMES[option["run_framework"]]
    weeks, cost = option["migration_weeks"], option["migration_cost_usd"]
    if option["framework_switch"]:
        return (
            f"It needs a {team}->{run} move (about {weeks:g} engineer-weeks, {usd(cost)} included in the cost), "
            f"because {team} support on {KIND_NAMES[option['kind']]} is {option['team_framework_support']}."
        )
    if weeks > 0 and option["framework_efficiency"] >= 1:
        return (
            f"It runs {team} after about {weeks:g} engineer-weeks of porting to this platform ({usd(cost)} included)."
        )
    if weeks > 0:
        return (
            f"It runs {team} ({option['support']} on {KIND_NAMES[option['kind']]}, about "
            f"{option['framework_efficiency']:.0%} of the native stack's speed) after about {weeks:g} engineer-weeks "
            f"of porting ({usd(cost)} included)."
        )
    return f"It runs your {team} code as it is."


def _compare(best: dict, other: dict) -> str:
    saving = 1 - best["cost_usd"] / other["cost_usd"]
    overlap = best["cost_usd_high"] >= other["cost_usd_low"]
    tail = " The cost ranges overlap, so the two are close within the uncertainty." if overlap else ""
    return f"{saving:.0%} cheaper than {describe(other)}.{tail}"


def recommend(frame: pl.DataFrame, team_framework: str = "pytorch") -> Recommendation:
    """Rank ``frame`` (from ``options.evaluate``) and explain the winner."""
    feasible = frame.filter(pl.col("feasible")).sort("cost_usd")
    per_chip = feasible.unique(subset="accelerator_id", keep="first", maintain_order=True)
    ranked = per_chip.to_dicts()
    blocked = (
        frame.filter(~pl.col("accelerator_id").is_in(per_chip["accelerator_id"].implode()))
        .group_by("accelerator_id", maintain_order=True)
        .first()
        .select("accelerator_id", "name", pl.col("infeasible_reason").alias("reason"))
    )
    if not ranked:
        why = "; ".join(f"{r['name']}: {r['reason']}" for r in blocked.head(4).to_dicts())
        return Recommendation(
            None, [], blocked, [f"No option meets the constraints. {why}"], "No accelerator meets these constraints"
        )
    best, runners = ranked[0], ranked[1:3]
    reasons = [f"Cheapest option that meets the constraints: {describe(best)}."]
    if runners:
        reasons.append(f"{best['name']} is {_compare(best, runners[0])}")
    rival = next((o for o in ranked if o["kind"] != best["kind"]), None)
    if rival is not None and rival not in runners[:1]:
        reasons.append(f"Best {KIND_NAMES[rival['kind']]} alternative: {best['name']} is {_compare(best, rival)}")
    framework = _framework_reason(best, team_framework)
    if framework:
        reasons.append(framework)
    reasons.append(
        f"Memory fits: {best['memory_per_chip_gb']:.0f} GB needed per chip of {best['hbm_gb']:.0f} GB "
        f"(at least {best['min_chips_to_fit']:,} chips needed to fit the model)."
    )
    age = "about " if best["price_as_of_approx"] else ""
    caveat = (
        " It comes from a secondary source, not the provider's price list: confirm it before committing."
        if best["price_secondary_source"]
        else ""
    )
    reasons.append(
        f"Price: median of {best['price_rows']} quote(s) on {best['cloud']}, as of {age}{best['price_as_of']:%Y-%m}."
        + caveat
    )
    headline = (
        f"Train on {best['name']} ({best['cloud']}, {best['pricing_model']}): {best['chips']:,} chips"
        + (f" ({best['layout']})" if best.get("layout") else "")
        + f", {days(best['train_days'])}, {usd(best['cost_usd'])}"
    )
    return Recommendation(best, runners, blocked, reasons, headline)
