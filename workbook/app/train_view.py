"""The "Train" view: model, job and constraints -> training options, recommendation card, charts, table."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Callable

import ipywidgets as w
import polars as pl

from workbook import catalog as catalog_mod
from workbook import present
from workbook.app import stale, state, views
from workbook.app.chartgrid import ChartGrid
from workbook.app.controls import log_slider, page_columns, set_values, slider, syncing
from workbook.app.upload import PriceUpload, mib
from workbook.catalog.schemas import FRAMEWORKS, PRECISIONS, PRICING_MODELS
from workbook.charts import training as charts
from workbook.charts.common import template_specs
from workbook.errors import DataError, InputError
from workbook.training import options
from workbook.training.recommend import recommend, shortest_plan
from workbook.training.scenario import PLATFORM_LABELS

LABELS = {"pytorch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}


class TrainView:
    """Controls -> Scenario -> ``options.evaluate_full`` -> card, charts, table; recomputed on every change.

    ``on_result`` is called after each new result; ``brief_extras`` gives the one-page brief's scenario link and
    serving answer (keyword arguments of :func:`workbook.report.render`).
    """

    def __init__(
        self,
        catalog: catalog_mod.Catalog,
        on_result: Callable[[], None],
        brief_extras: Callable[[], dict] = dict,
    ):
        self.catalog = catalog
        self.brief_extras = brief_extras
        self.on_result = on_result
        self.controls = self._controls()
        self.status = w.HTML()
        self.card = w.HTML()
        self.table = w.HTML()
        self.charts = ChartGrid(template_specs(charts.TEMPLATES), layout=w.Layout(width="100%"))
        self.frame: pl.DataFrame | None = None
        self.scenario = None
        self.stale = False  # the inputs are invalid: no answer is shown
        self.notices: dict[str, str] = {}  # messages that outlive one computation ("link", "prices"), as HTML
        self.prices_name: str | None = None  # the accepted price upload in use
        self._prepared_for: tuple[pl.DataFrame, dict] | None = None  # the result and extras of the downloads shown
        self._syncing = False
        self.widget = self._layout()
        for control in self.controls.values():
            if not isinstance(control, PriceUpload):
                control.observe(self._on_change, names="value")
        self.controls["price_file"].observe(self._on_price_file, names="value")
        self.controls["price_file"].observe(self._on_price_file_too_large, names="rejected")

    def _controls(self) -> dict[str, w.Widget]:
        d = state.DEFAULTS
        style = {"description_width": "150px"}
        tick = {"indent": False, "layout": w.Layout(width="auto", margin="2px 0 2px 154px")}
        clouds = ["any"] + sorted(self.catalog.usable_prices()["cloud"].unique())
        return {
            "model": w.Dropdown(
                options=state.model_choices(),
                value=d["model"],
                description="Model",
                style=style,
                layout=w.Layout(width="420px"),
            ),
            "params_b": log_slider("Model size (B params)", d["params_b"], 0.1, 2000),
            "moe": w.Checkbox(value=d["moe"], description="Mixture of experts", **tick),
            "active_params_b": log_slider("Active params (B)", d["active_params_b"], 0.1, 2000, disabled=True),
            "tokens_preset": w.Dropdown(
                options=[(label, key) for key, label in state.TOKEN_PRESETS.items()],
                value=d["tokens_preset"],
                description="Tokens",
                style=style,
                layout=w.Layout(width="420px"),
            ),
            "tokens_b": log_slider("Training tokens (B)", d["tokens_b"], 1, 100_000, disabled=True),
            "framework": w.ToggleButtons(
                options=[(LABELS[f], f) for f in FRAMEWORKS],
                value=d["framework"],
                description="Framework",
                style={**style, "button_width": "90px"},
            ),
            "current_platform": w.Dropdown(
                options=[(label, key) for key, label in PLATFORM_LABELS.items()],
                value=d["current_platform"],
                description="We run today on",
                style=style,
            ),
            "days": slider("Target days", d["days"], 1, 365, layout=w.Layout(width="420px")),
            "precision": w.ToggleButtons(
                options=[(p.upper(), p) for p in PRECISIONS],
                value=d["precision"],
                description="Precision",
                style={**style, "button_width": "60px"},
            ),
            "pricing": w.Dropdown(options=list(PRICING_MODELS), value=d["pricing"], description="Pricing", style=style),
            "cloud": w.Dropdown(options=clouds, value=d["cloud"], description="Cloud", style=style),
            "multi_cloud": w.Checkbox(value=d["multi_cloud"], description="Must run on 2+ clouds", **tick),
            "lock_in": w.Checkbox(value=d["lock_in"], description="Stay on our framework", **tick),
            "budget_musd": w.FloatText(value=d["budget_musd"], description="Budget cap ($M, 0 = none)", style=style),
            "use_mfu_override": w.Checkbox(value=d["use_mfu_override"], description="Override MFU", **tick),
            "mfu_override": slider("MFU", d["mfu_override"], 0.05, 0.9, 0.01),
            "use_goodput_override": w.Checkbox(value=d["use_goodput_override"], description="Override goodput", **tick),
            "goodput_override": slider("Goodput", d["goodput_override"], 0.1, 1.0, 0.01),
            "include_migration_cost": w.Checkbox(
                value=d["include_migration_cost"], description="Count migration cost", **tick
            ),
            "usd_per_engineer_week": w.FloatText(
                value=d["usd_per_engineer_week"], description="$ per engineer-week", style=style
            ),
            "price_file": PriceUpload(description="Price overrides CSV"),
        }

    def _layout(self) -> w.Widget:
        c = self.controls
        advanced = w.VBox(
            [
                c["use_mfu_override"],
                c["mfu_override"],
                c["use_goodput_override"],
                c["goodput_override"],
                c["include_migration_cost"],
                c["usd_per_engineer_week"],
                w.HTML(
                    "<small>Your negotiated prices: a CSV with columns accelerator_id, cloud, pricing_model, "
                    "usd_per_chip_hour, as_of, source (optional: region). Each row replaces the list prices of that "
                    "accelerator, cloud and pricing model (in every region unless you name one) and is marked "
                    '"your price" (see README).</small>'
                ),
                c["price_file"],
            ]
        )
        accordion = w.Accordion(children=[advanced], titles=("Advanced: MFU, goodput, engineering cost, prices",))
        accordion.selected_index = None
        left = [
            w.HTML("<b>Model</b>"),
            c["model"],
            c["params_b"],
            c["moe"],
            c["active_params_b"],
            c["tokens_preset"],
            c["tokens_b"],
            w.HTML("<b>Job</b>"),
            c["framework"],
            c["current_platform"],
            c["days"],
            c["precision"],
            c["pricing"],
            w.HTML("<b>Constraints</b>"),
            c["cloud"],
            c["multi_cloud"],
            c["lock_in"],
            c["budget_musd"],
            accordion,
        ]
        self.downloads = w.HTML()
        self.prepare = w.Button(description="Prepare downloads", tooltip="table CSV, charts PNG/SVG, one-page brief")
        self.prepare.on_click(lambda _: self.prepare_downloads())
        share = w.HBox([self.prepare, self.downloads], layout=w.Layout(align_items="center", flex_flow="row wrap"))
        heading = w.HTML(views.table_heading("All options", "options"))
        return page_columns(left, [self.status, self.card, share, self.charts], [heading, self.table])

    def set_values(self, values: dict) -> None:
        """Set several controls at once (a scenario link), then recompute once."""
        set_values(self, values)
        self._on_change(None)

    def prepare_downloads(self) -> None:
        """Table as CSV, each chart as PNG and SVG, and the one-page report, as data links (offline).

        Once per result (and per scenario link and serving answer, which the brief shows): the button shows
        "Preparing..." and is disabled meanwhile, and clicks queued while the kernel worked (measured before: ten
        clicks held the kernel for 19 s) find the downloads already there."""
        extras = self.brief_extras()
        if self.stale or self.frame is None or self._prepared(extras):
            return
        self.prepare.disabled, self.prepare.description = True, "Preparing..."
        try:
            self.downloads.value = views.downloads(
                self.frame.select(options.OUTPUT_COLUMNS), self.scenario, self.catalog, **extras
            )
            self._prepared_for = (self.frame, extras)
        finally:
            self.prepare.disabled, self.prepare.description = False, "Prepare downloads"

    def _prepared(self, extras: dict) -> bool:
        """The downloads on the page are of this result, link and serving answer (compared by identity)."""
        if self._prepared_for is None:
            return False
        frame, done = self._prepared_for
        return frame is self.frame and done["link"] == extras.get("link") and done["serving"] is extras.get("serving")

    def link_controls(self) -> dict[str, w.Widget]:
        """The controls a scenario link carries: all but the price file upload."""
        return {k: c for k, c in self.controls.items() if not isinstance(c, PriceUpload)}

    def values(self) -> dict:
        return {k: c.value for k, c in self.link_controls().items()}

    def _on_change(self, change) -> None:
        if self._syncing:
            return
        if change is not None:  # the user moved on from the link they opened: its notes no longer apply
            self.notices.pop("link", None)
        c = self.controls
        preset = state.preset_model(self.values())
        if preset is not None:  # a published architecture: its sizes are shown, not set here
            with syncing(self):
                for name, value in state.preset_sizes(preset).items():
                    c[name].value = value
        c["params_b"].disabled = c["moe"].disabled = preset is not None
        c["active_params_b"].disabled = preset is not None or not c["moe"].value
        c["tokens_b"].disabled = c["tokens_preset"].value != "custom"
        if c["tokens_preset"].value != "custom":
            with syncing(self):  # showing the derived token count is not a user change
                c["tokens_b"].value = state.tokens_b(self.values())
        self.update()

    def _prices_in_use(self) -> str:
        return f"your prices from {self.prices_name}" if self.prices_name else "the shipped prices"

    def _on_price_file(self, change) -> None:
        """A rejected file is reported and changes nothing: the prices in use stay, and the page says which."""
        files = change["new"]
        if not files:
            return
        upload = files[0]
        with tempfile.TemporaryDirectory() as folder:
            target = Path(folder) / "price_overrides.csv"
            target.write_bytes(bytes(upload["content"]))
            try:
                self.catalog = catalog_mod.load(price_overrides=target)
                self.prices_name = upload["name"]
                mine = self.catalog.prices.filter(pl.col("user_price")).height
                self.notices["prices"] = views.message(
                    f"Using your prices from {upload['name']}: {present.count(mine, 'row')} replacing the list "
                    "prices of the same accelerator, cloud and pricing model.",
                    "info",
                )
            except DataError as err:
                problem = str(err).replace(str(target), upload["name"])
                self.notices["prices"] = views.message(
                    f"Price overrides CSV: {problem}. The file was not used; still using {self._prices_in_use()}."
                )
        self.update()

    def _on_price_file_too_large(self, change) -> None:
        if not change["new"]:
            return
        name, size = change["new"]["name"], change["new"]["size"]
        limit = self.controls["price_file"].max_bytes
        self.notices["prices"] = views.message(
            f"Price overrides CSV: {name} is {mib(size)}, above the {mib(limit)} limit, so it was not used; "
            f"still using {self._prices_in_use()}."
        )
        self.update()

    def _label(self, field: str) -> str:
        """The control's label as the page shows it, units included ("Budget cap ($M, 0 = none)")."""
        control = self.controls.get(field)
        return control.description if control is not None else field.replace("_", " ").capitalize()

    def update(self) -> None:
        """Recompute everything from the current control values; on invalid input show every current message and
        clear the answer (never a previous answer beside the message, never a traceback)."""
        with stale.working(self.widget):
            try:
                scenario = state.scenario_from(self.values())
                self._recompute(scenario)
            except InputError as err:
                self._show_stale(f"{self._label(err.field)}: {err.message}")
                return
            except Exception as err:  # the page must never show a traceback; the message names what failed
                self._show_stale(f"This scenario could not be computed ({type(err).__name__}: {err}).")
                return
            self.stale = False
            stale.show_fresh(self.charts)
            self.status.value = stale.messages([], list(self.notices.values()))
            self.on_result()

    def _show_stale(self, error: str) -> None:
        self.stale = True
        stale.show_stale(self.card, self.table, self.charts, self.downloads)  # the shell removes the share link
        self.status.value = stale.messages([error], list(self.notices.values()))

    def _recompute(self, scenario) -> None:
        self.scenario = scenario
        everything = options.evaluate_full(
            scenario, self.catalog, jobs_frame=options.job_frame(scenario, **charts.SWEEPS)
        )
        frame = everything.filter(pl.col("sweep") == "main")
        self.frame = frame
        rec = recommend(frame, scenario.framework, scenario.current_platform)
        if rec.best is None:  # nothing meets the deadline: the fastest plan and what to relax
            rec = dataclasses.replace(rec, reasons=rec.reasons + shortest_plan(scenario, self.catalog, frame))
        self.card.value = views.recommendation(rec)
        self.table.value = views.option_table(frame.select(options.OUTPUT_COLUMNS))
        # Only the data changes: each chart's spec was built once (see workbook.charts.common).
        self.charts.datasets = charts.tab_datasets(
            everything, scenario.constraints.deadline_days, scenario.model.params
        )
        self.downloads.value = ""
