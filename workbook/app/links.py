"""Scenario links: the app's state <-> a URL query string. Pure functions; invalid values become messages.

Parameter names (stable, used in shared links): params_b, active_params_b, tokens_b, tokens (a preset),
framework, platform (the team's current platform), days, precision, pricing, cloud, mode (train | serve).
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlencode

from workbook.app.state import TOKEN_PRESETS
from workbook.catalog.schemas import FRAMEWORKS, PRECISIONS, PRICING_MODELS
from workbook.training.scenario import PLATFORMS

NUMBERS = {  # name -> (control, low, high)
    "params_b": ("params_b", 0.1, 2000.0),
    "active_params_b": ("active_params_b", 0.1, 2000.0),
    "tokens_b": ("tokens_b", 1.0, 100_000.0),
    "days": ("days", 1, 365),
}
CHOICES = {
    "framework": FRAMEWORKS,
    "precision": PRECISIONS,
    "pricing": PRICING_MODELS,
    "mode": ("train", "serve"),
    "platform": tuple(PLATFORMS),
    "tokens": tuple(p for p in TOKEN_PRESETS if p != "custom"),
}
CONTROL = {"platform": "current_platform", "tokens": "tokens_preset"}  # link name -> control name where they differ


def parse(query: str | None, clouds: list[str]) -> tuple[dict, list[str]]:
    """Control values found in ``query`` and one message per value that was not accepted."""
    values: dict = {}
    problems: list[str] = []
    for name, items in parse_qs((query or "").lstrip("?"), keep_blank_values=True).items():
        raw = items[-1]
        if name in NUMBERS:
            control, low, high = NUMBERS[name]
            try:
                number = float(raw)
            except ValueError:
                problems.append(f"{name}={raw!r} is not a number; using the default")
                continue
            if not low <= number <= high:
                problems.append(f"{name}={raw} is outside {low:g}-{high:g}; using the default")
                continue
            values[control] = int(number) if name == "days" else number
        elif name in CHOICES or name == "cloud":
            allowed = ("any", *clouds) if name == "cloud" else CHOICES[name]
            if raw not in allowed:
                problems.append(f"{name}={raw!r} is not one of {', '.join(allowed)}; using the default")
                continue
            values[CONTROL.get(name, name)] = raw
        else:
            problems.append(f"unknown link parameter {name!r} ignored")
    if "active_params_b" in values:
        values["moe"] = True
    if "tokens_b" in values:
        values["tokens_preset"] = "custom"
    return values, problems


def build(values: dict, mode: str) -> str:
    """The query string (without '?') that reopens these control values."""
    query = {
        "params_b": f"{values['params_b']:.4g}",
        "framework": values["framework"],
        "platform": values["current_platform"],
        "days": values["days"],
        "precision": values["precision"],
        "pricing": values["pricing"],
        "cloud": values["cloud"],
        "mode": mode,
    }
    if values.get("moe"):
        query["active_params_b"] = f"{values['active_params_b']:.4g}"
    preset = values.get("tokens_preset", "compute_optimal")
    if preset == "custom":
        query["tokens_b"] = f"{values['tokens_b']:.4g}"
    elif preset != "compute_optimal":
        query["tokens"] = preset
    return urlencode(query)


def voila_query_string() -> str:
    """The visitor's query string under Voila (waits for the visitor when the kernel was preheated), else ''."""
    if "VOILA_KERNEL_ID" not in os.environ and "VOILA_PREHEAT" not in os.environ:
        return os.environ.get("QUERY_STRING", "")
    from voila.utils import get_query_string

    return get_query_string() or ""
