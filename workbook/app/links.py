"""Scenario links: every control of both tabs <-> a URL query string. Pure functions; bad values become messages.

A link carries every Train control under its own name (``params_b``, ``budget_musd``, ``mfu_override``...), every
Serve control under ``serve_<name>`` once the Serve tab has been opened, and ``mode`` (train | serve), the tab that
was showing. What each value may be (range, choices) is read from the controls themselves by :func:`fields_of`, so
a new control is in the link with no change here. Older links still open: without ``moe``, ``active_params_b``
implies a mixture of experts; without ``tokens_preset``, ``tokens_b`` is a token count of your own; ``platform`` and
``tokens`` are the older names of ``current_platform`` and ``tokens_preset``; without ``model``, the sizes set the
model (any size). A link naming an architecture (``model``) takes the sizes from it, and a size that contradicts it
is reported (:func:`workbook.app.state.set_by_model`). Outside Voila (the dashboard in
JupyterLab) links point at the published app (:func:`app_url`), never at the Lab page.
"""

from __future__ import annotations

import dataclasses
import math
import os
from urllib.parse import parse_qs, urlencode, urlsplit

from workbook.errors import InputError

SERVE_PREFIX = "serve_"
MODES = ("train", "serve")
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
ALIASES = {"platform": "current_platform", "tokens": "tokens_preset"}  # older links
APP_URL_VARIABLE = "WORKBOOK_APP_URL"  # the published app's address, for links made outside Voila
DEFAULT_APP_URL = "http://localhost:8866/"  # where `workbook app` and `make app` serve it


@dataclasses.dataclass(frozen=True)
class Field:
    """What one control accepts: ``kind`` is number, integer, bool or choice."""

    kind: str
    low: float = -math.inf
    high: float = math.inf
    choices: tuple = ()

    def read(self, name: str, raw: str) -> tuple[object, str | None]:
        """(value, None) or (None, a message naming the parameter and what it accepts)."""
        if self.kind == "bool":
            if raw.lower() in TRUE + FALSE:
                return raw.lower() in TRUE, None
            return None, f"{name}={raw!r} is not 1 or 0"
        if self.kind == "choice":
            if raw in self.choices:
                return raw, None
            return None, f"{name}={raw!r} is not one of {', '.join(map(str, self.choices))}"
        try:
            number = float(raw)
        except ValueError:
            return None, f"{name}={raw!r} is not a number"
        if not math.isfinite(number) or not self.low <= number <= self.high:
            return None, f"{name}={raw} is outside {self.low:g}-{self.high:g}"
        if self.kind == "integer":
            if number != int(number):
                return None, f"{name}={raw} is not a whole number"
            return int(number), None
        return number, None

    def write(self, value: object) -> str:
        if self.kind == "bool":
            return "1" if value else "0"
        if self.kind == "number":
            return repr(float(value))  # the shortest text that reads back as exactly this float
        return str(value)


def fields_of(controls: dict) -> dict[str, Field]:
    """Describe widget-like controls (duck-typed: ``options``, ``min``/``max``, ``base`` of a log slider).
    Free number boxes (no bounds) accept 0 or more: every such control here is a money amount or a rate."""
    fields = {}
    for name, control in controls.items():
        value = control.value
        if hasattr(control, "options"):
            choices = tuple(o[1] if isinstance(o, tuple) else o for o in control.options)
            fields[name] = Field("choice", choices=choices)
        elif isinstance(value, bool):
            fields[name] = Field("bool")
        else:
            kind = "integer" if isinstance(value, int) else "number"
            low, high = getattr(control, "min", 0.0), getattr(control, "max", math.inf)
            base = getattr(control, "base", None)
            if base is not None:  # a log slider's min and max are exponents
                low, high = base**low, base**high
            fields[name] = Field(kind, low, high)
    return fields


def parse(query: str | None, train: dict[str, Field], serve: dict[str, Field]) -> tuple[dict, dict, str, list[str]]:
    """(Train values, Serve values, mode, one message per parameter that was not accepted) from ``query``."""
    train_values: dict = {}
    serve_values: dict = {}
    mode = "train"
    problems: list[str] = []
    for name, items in parse_qs((query or "").lstrip("?"), keep_blank_values=True).items():
        raw = items[-1]
        name = ALIASES.get(name, name) if ALIASES.get(name) in train else name
        if name == "mode":
            field, target, key = Field("choice", choices=MODES), None, name
        elif name.startswith(SERVE_PREFIX) and name.removeprefix(SERVE_PREFIX) in serve:
            key = name.removeprefix(SERVE_PREFIX)
            field, target = serve[key], serve_values
        elif name in train:
            field, target, key = train[name], train_values, name
        else:
            problems.append(f"unknown link parameter {name!r} ignored")
            continue
        value, problem = field.read(name, raw)
        if problem:
            problems.append(problem + "; using the default")
        elif target is None:
            mode = value
        else:
            target[key] = value
    if "active_params_b" in train_values and "moe" in train and "moe" not in train_values:
        train_values["moe"] = True
    if "tokens_b" in train_values and "tokens_preset" in train and "tokens_preset" not in train_values:
        train_values["tokens_preset"] = "custom"
    return train_values, serve_values, mode, problems


def build(train_values: dict, train: dict[str, Field], mode: str, serve_values: dict | None = None, serve=None) -> str:
    """The query string (without '?') that reopens these values on the ``mode`` tab. The token count is left out
    while a preset derives it; Serve values only when given (the Serve tab was opened)."""
    query = {
        name: field.write(train_values[name])
        for name, field in train.items()
        if not (name == "tokens_b" and train_values.get("tokens_preset", "custom") != "custom")
    }
    if serve_values is not None:
        query |= {SERVE_PREFIX + name: field.write(serve_values[name]) for name, field in serve.items()}
    query["mode"] = mode
    return urlencode(query)


def under_voila() -> bool:
    """The kernel was started by Voila (the app page), not by JupyterLab or a notebook server."""
    return "VOILA_KERNEL_ID" in os.environ or "VOILA_PREHEAT" in os.environ


def app_url() -> str:
    """Where a scenario link points. Under Voila '' (the link is relative: it reopens the page it is on, behind any
    proxy or URL prefix). Elsewhere (the dashboard shown in JupyterLab) a Lab URL would open the notebook, not the
    scenario, so the link points at the published app: ``WORKBOOK_APP_URL``, else :data:`DEFAULT_APP_URL`."""
    if under_voila():
        return ""
    url = os.environ.get(APP_URL_VARIABLE, DEFAULT_APP_URL)
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise InputError(APP_URL_VARIABLE, f"must be the app's http(s) address, like {DEFAULT_APP_URL}, got {url!r}")
    return url


def voila_query_string() -> str:
    """The visitor's query string under Voila (waits for the visitor when the kernel was preheated), else ''."""
    if not under_voila():
        return os.environ.get("QUERY_STRING", "")
    from voila.utils import get_query_string

    return get_query_string() or ""
