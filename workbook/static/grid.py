"""The precomputed scenario grid behind the static page, computed with the same public API as the app.

Training: every combination of :class:`Grid`'s model sizes, tokens per parameter, frameworks, precisions and
target days is evaluated once with ``options.evaluate`` over *every* pricing model and cloud; the page filters the
rows by the reader's pricing and cloud (an option's numbers do not depend on which other options are in the
frame, so the filtered rows are exactly what ``evaluate`` returns for that pricing and cloud; a browser test
checks this at grid points). The cost-vs-time frontier comes from ``options.sweep`` over the app's
``FRONTIER_DAYS``. Serving: ``serving.evaluate_serving`` per model size, weight precision and traffic level.

Per scenario only what the page draws is kept: per option chips, days and cost with its range (training) or
chips and USD per million output tokens (serving), numbers to 4 significant digits; names, clouds, pricing
models, prices and ruled-out reasons are stored once and referred to by index.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import polars as pl

from workbook import catalog as catalog_mod
from workbook import serving
from workbook.catalog.schemas import FRAMEWORKS, PRECISIONS, PRICING_MODELS
from workbook.charts.training import FRONTIER_DAYS
from workbook.errors import InputError
from workbook.serving.scenario import WEIGHT_PRECISIONS
from workbook.training import calibration, options
from workbook.training.scenario import COMPUTE_OPTIMAL_TOKENS_PER_PARAM, Constraints, ModelSpec, Scenario

# Rules that rule out an accelerator whatever its price (training.rules checks them before "no_price"): the page
# uses them to explain an accelerator with no price under the reader's pricing and cloud the way the API does.
PRICE_INDEPENDENT_CODES = ("no_precision", "framework_unsupported", "no_mfu")
DIGITS = 4  # significant digits kept per number (0.05% at most off the API's value)


@dataclasses.dataclass(frozen=True)
class Grid:
    """The scenarios the page can show without a kernel (each axis a slider or a choice on the page)."""

    params_b: tuple[float, ...] = (1, 3, 8, 13, 34, 70, 180, 405, 1000)
    tokens_per_param: tuple[float, ...] = (COMPUTE_OPTIMAL_TOKENS_PER_PARAM, 200, 2000)
    frameworks: tuple[str, ...] = FRAMEWORKS
    precisions: tuple[str, ...] = PRECISIONS
    days: tuple[int, ...] = (7, 14, 30, 60, 120)
    serve_precisions: tuple[str, ...] = WEIGHT_PRECISIONS
    requests_per_s: tuple[float, ...] = (0.1, 0.3, 1, 3, 10, 30, 100)

    def training_scenarios(self):
        """(index tuple, Scenario or None) in the page's order: params, tokens, framework, precision, days (last
        fastest). None where the API refuses the combination (e.g. more than 1e15 tokens)."""
        axes = (self.params_b, self.tokens_per_param, self.frameworks, self.precisions, self.days)
        for index in itertools.product(*(range(len(a)) for a in axes)):
            try:
                yield index, self.scenario(*(axis[i] for axis, i in zip(axes, index, strict=True)))
            except InputError:
                yield index, None

    @staticmethod
    def scenario(params_b, tokens_per_param, framework, precision, days, pricing=PRICING_MODELS, cloud=None):
        """The Scenario the app builds for these control values (pricing and cloud narrow it, as in the app)."""
        return Scenario(
            model=ModelSpec.from_params(params_b * 1e9),
            tokens=tokens_per_param * params_b * 1e9,
            framework=framework,
            precision=precision,
            days=float(days),
            pricing=tuple(pricing),
            constraints=Constraints(deadline_days=float(days), clouds=() if cloud is None else (cloud,)),
        )

    @staticmethod
    def serve_scenario(params_b, precision, requests_per_s, pricing=PRICING_MODELS, cloud=None):
        return serving.ServeScenario(
            model=ModelSpec.from_params(params_b * 1e9),
            weight_precision=precision,
            kv_precision="bf16" if precision == "int4" else precision,  # the app's and CLI's default
            requests_per_s=requests_per_s,
            pricing=tuple(pricing),
            clouds=() if cloud is None else (cloud,),
        )

    def axes(self) -> dict[str, list]:
        return {f.name: list(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def size(self) -> int:
        return math.prod(len(v) for k, v in self.axes().items() if k not in ("serve_precisions", "requests_per_s"))


def sig(value: float | None) -> float | int | None:
    """``value`` to :data:`DIGITS` significant digits; whole numbers as ints (shorter JSON)."""
    if value is None or not math.isfinite(value):
        return None
    if value == 0:
        return 0
    rounded = round(value, DIGITS - 1 - math.floor(math.log10(abs(value))))
    return int(rounded) if rounded == int(rounded) and abs(rounded) < 2**53 else rounded


class _Index:
    """Values seen so far -> their position in a list (names, option keys, reasons stored once)."""

    def __init__(self):
        self.items: list = []
        self._pos: dict = {}

    def __call__(self, item) -> int:
        if item not in self._pos:
            self._pos[item] = len(self.items)
            self.items.append(item)
        return self._pos[item]


def build(grid: Grid, catalog: catalog_mod.Catalog | None = None) -> dict:
    """Everything the page needs, JSON-ready. Training rows: ``[option, chips, days, cost, low, high, finish days]``
    for feasible options, ``[option, reason]`` for ruled-out ones; frontier rows ``[option, day index, chips, days,
    cost, finish days]`` (finish = porting + training); serving rows ``[option, chips, usd per M tokens, low,
    high]`` and ``[option, reason]``."""
    cat = catalog or catalog_mod.load()
    cal = calibration.fit(cat)
    eff = serving.calibrate(cat)
    accelerators = cat.accelerators.select("accelerator_id", "name", "kind", "vendor")
    acc_index = {a: i for i, a in enumerate(accelerators["accelerator_id"])}
    clouds, pricing, reasons, option_keys = _Index(), _Index(), _Index(), _Index()
    for p in PRICING_MODELS:
        pricing(p)
    prices: dict[int, float | None] = {}  # option -> median USD per chip-hour (the same in every scenario)

    def option(row) -> int:
        key = option_keys((acc_index[row["accelerator_id"]], clouds(row["cloud"]), pricing(row["pricing_model"])))
        prices.setdefault(key, sig(row.get("usd_per_chip_hour")))
        return key

    def reason(row) -> int:
        return reasons((row["infeasible_code"] or "", row["infeasible_reason"] or ""))

    train, frontier = [], []
    for index, scenario in grid.training_scenarios():
        if scenario is None:
            train.append(None)
            if index[-1] == 0:
                frontier.append(None)
            continue
        frame = options.evaluate(scenario, cat, cal)
        train.append(_training_rows(frame, option, reason))
        if index[-1] == 0:  # the frontier does not depend on the target days: once per (model, tokens, ...)
            sweep = options.sweep(scenario, frame, cat, cal, days=FRONTIER_DAYS)  # every option, feasible or not
            frontier.append(_frontier_rows(sweep, option))
    serve = []
    for params_b, precision, rps in itertools.product(grid.params_b, grid.serve_precisions, grid.requests_per_s):
        frame = serving.evaluate_serving(grid.serve_scenario(params_b, precision, rps), cat, eff)
        serve.append(_serving_rows(frame, option, reason))
    return {
        "axes": grid.axes(),
        "accelerators": accelerators.select("name", "kind", "vendor").rows(),
        "clouds": clouds.items,
        "pricing": pricing.items,
        "options": [[*key, prices[i]] for i, key in enumerate(option_keys.items)],
        "reasons": reasons.items,  # (rule code, plain words); serving has no codes
        "price_independent_codes": PRICE_INDEPENDENT_CODES,
        "train": train,
        "frontier": frontier,
        "serve": serve,
        "as_of": {
            "prices": f"{cat.prices_as_of:%Y-%m-%d}",
            "specs": f"{cat.accelerators['as_of'].max():%Y-%m-%d}",
        },
    }


def _training_rows(frame: pl.DataFrame, option, reason) -> list:
    rows = []
    for r in frame.iter_rows(named=True):
        if r["feasible"]:
            numbers = (r["train_days"], r["cost_usd"], r["cost_usd_low"], r["cost_usd_high"], r["finish_days"])
            rows.append([option(r), r["chips"], *(sig(v) for v in numbers)])
        else:
            rows.append([option(r), reason(r)])
    return rows


def _frontier_rows(sweep: pl.DataFrame, option) -> list:
    day_index = {float(d): i for i, d in enumerate(FRONTIER_DAYS)}
    return [
        [
            option(r),
            day_index[r["target_days"]],
            r["chips"],
            *(sig(r[k]) for k in ("train_days", "cost_usd", "finish_days")),
        ]
        for r in sweep.filter(pl.col("feasible")).iter_rows(named=True)
    ]


def _serving_rows(frame: pl.DataFrame, option, reason) -> list:
    rows = []
    for r in frame.iter_rows(named=True):
        if r["feasible"]:
            numbers = (r["usd_per_million_tokens"], r["usd_per_million_tokens_low"], r["usd_per_million_tokens_high"])
            rows.append([option(r), r["chips"], *(sig(v) for v in numbers)])
        else:
            rows.append([option(r), reason({"infeasible_code": "", **r})])
    return rows
