"""The "Serve" view: traffic, latency targets and precision -> serving options, charts and a card.

The model served is the Train tab's model (one spec for both phases) unless "Serve a different model" is ticked;
the card and the train-then-serve chart name which model each phase uses."""

from __future__ import annotations

from typing import Callable

import ipywidgets as w
import polars as pl

from workbook import serving
from workbook.app import stale, state, views
from workbook.app.chartgrid import ChartGrid
from workbook.app.controls import STYLE, log_slider, page_columns, set_values, slider, syncing
from workbook.catalog import Catalog
from workbook.charts import serving as cs
from workbook.charts.common import template_specs
from workbook.errors import InputError
from workbook.model.spec import ModelSpec
from workbook.present import model_words

WIDE = w.Layout(width="420px")
# ServeScenario field -> the control that sets it (same unit; the sliders keep params within range).
CONTROL_OF_FIELD = {
    "params": "params_b",
    "weight_precision": "precision",
    "requests_per_s": "rps",
    "clouds": "cloud",
    "output_tokens_p99": "answer_spread",
}


class ServeView:
    """Controls -> ServeScenario -> ``serving.evaluate_serving`` -> card, charts, table."""

    def __init__(
        self,
        catalog: Catalog,
        train_frame: Callable[[], pl.DataFrame | None],
        train_model: Callable[[], ModelSpec | None] = lambda: None,
    ):
        self.catalog = catalog
        self.train_frame = train_frame
        self.train_model = train_model
        clouds = ["any"] + sorted(catalog.usable_prices()["cloud"].unique())
        self.controls = {
            "own_model": w.Checkbox(
                value=False, description="Serve a different model than the Train tab's", indent=False, layout=WIDE
            ),
            "model": w.Dropdown(
                options=state.model_choices(), value=state.CUSTOM_MODEL, description="Model", style=STYLE, layout=WIDE
            ),
            "params_b": log_slider("Model size (B params)", 70, 0.1, 2000),
            "precision": w.ToggleButtons(
                options=[(p.upper(), p) for p in serving.WEIGHT_PRECISIONS],
                value=serving.DEFAULT_SERVE_PRECISION,
                description="Weights",
                style={**STYLE, "button_width": "55px"},
            ),
            "kv_precision": w.ToggleButtons(
                options=[(p.upper(), p) for p in serving.KV_PRECISIONS],
                value=serving.DEFAULT_SERVE_PRECISION,
                description="KV cache",
                style={**STYLE, "button_width": "55px"},
            ),
            "prompt_tokens": w.BoundedIntText(
                value=1000, min=1, max=2_000_000, description="Prompt tokens", style=STYLE
            ),
            "output_tokens": w.BoundedIntText(value=300, min=1, max=200_000, description="Output tokens", style=STYLE),
            # 1: every answer as long as the mean; reasoning models' answers spread far (MLPerf's DeepSeek-R1: mean
            # ~3,740 tokens, p99 20,000, about 5x): a long answer stays in flight longer and reads a longer context
            "answer_spread": slider("Answer p99 ÷ mean", 1.0, 1.0, 10.0, step=0.1, layout=WIDE),
            "rps": log_slider("Requests per second", 10, 0.01, 10_000),
            "ttft_ms": log_slider("First-token p99 target (ms)", 2000, 10, 60_000, ".0f"),
            "tpot_ms": log_slider("Per-token p99 target (ms)", 50, 2, 1000, ".0f"),
            "headroom_pct": slider(
                "Load ceiling (% of capacity; the rest is headroom)",
                round(serving.DEFAULT_HEADROOM * 100),
                round(serving.scenario.MIN_HEADROOM * 100),
                round(serving.scenario.MAX_HEADROOM * 100),
                layout=WIDE,
            ),
            "disaggregation": w.Checkbox(
                value=False,
                description="Separate prefill and decode replicas where cheaper",
                indent=False,
                layout=WIDE,
            ),
            "router": w.Dropdown(
                options=[("Least busy replica", "least-loaded"), ("Round-robin", "round-robin")],
                value="least-loaded",
                description="Routing",
                style=STYLE,
            ),
            "capacity_policy": w.Dropdown(
                options=[("Preempt", "preempt"), ("Reserve", "reserve")],
                value="preempt",
                description="Full KV cache",
                tooltip="Preempt: pause the newest sequences and prefill their prompts again (TensorRT-LLM "
                "max_utilization, vLLM, SGLang). Reserve: hold room for each request's whole answer and never pause "
                "one (TensorRT-LLM guaranteed no evict).",
                style=STYLE,
            ),
            "stack": w.ToggleButtons(
                options=[("Best published stack", "best"), ("Generic open-source stack", "generic")],
                value="best",
                description="Software",
                style={**STYLE, "button_width": "170px"},
            ),
            "pricing": w.Dropdown(
                options=["on-demand", "spot", "commit-1y", "commit-3y", "capacity-block", "reserved-contract"],
                value="on-demand",
                description="Pricing",
                style=STYLE,
            ),
            "cloud": w.Dropdown(options=clouds, value="any", description="Cloud", style=STYLE),
            "months": slider("Serve for (months)", 12, 1, 36, layout=WIDE),
        }
        self.status, self.card, self.table, self.model_note = w.HTML(), w.HTML(), w.HTML(), w.HTML()
        self.charts = ChartGrid(template_specs(cs.TEMPLATES), layout=w.Layout(width="100%"))
        self.frame: pl.DataFrame | None = None
        self.recommendation: serving.ServingRecommendation | None = None
        self.scenario: serving.ServeScenario | None = None
        self.stale = False  # the inputs are invalid: no answer is shown (nor linked, nor in the brief)
        self._syncing = False
        for control in self.controls.values():
            control.observe(lambda change: self._syncing or self.update(), names="value")
        self.widget = self._layout()

    def set_values(self, values: dict) -> None:
        """Set several controls at once (a scenario link), then recompute once."""
        set_values(self, values)
        self.update()

    def _layout(self) -> w.Widget:
        c = self.controls
        left = [
            w.HTML("<b>Model</b>"),
            self.model_note,
            c["own_model"],
            c["model"],
            c["params_b"],
            c["precision"],
            c["kv_precision"],
            w.HTML("<b>Traffic and targets</b>"),
            c["prompt_tokens"],
            c["output_tokens"],
            c["answer_spread"],
            c["rps"],
            c["ttft_ms"],
            c["tpot_ms"],
            c["headroom_pct"],
            c["disaggregation"],
            c["router"],
            c["capacity_policy"],
            w.HTML("<b>Where</b>"),
            c["stack"],
            c["pricing"],
            c["cloud"],
            w.HTML("<b>Train, then serve</b>"),
            c["months"],
        ]
        heading = w.HTML(views.table_heading("All serving options", "serving"))
        return page_columns(left, [self.status, self.card, self.charts], [heading, self.table])

    def model(self) -> tuple[ModelSpec, str]:
        """The served model and its label: the Train tab's, unless the override is ticked; then the architecture
        chosen here, or a model of the size set here."""
        c = self.controls
        trained = self.train_model()
        own = c["own_model"].value or trained is None
        preset = state.preset_model({"model": c["model"].value}) if own else None
        c["model"].disabled = not own
        c["params_b"].disabled = not own or preset is not None
        shown = trained if not own else preset
        if shown is not None:  # the size shown is the model served
            with syncing(self):
                c["params_b"].value = shown.params / 1e9
        if not own:
            return trained, f"Serving the Train tab's model: {model_words(trained)}"
        spec = preset or ModelSpec.from_params(c["params_b"].value * 1e9)
        return spec, f"Serving {model_words(spec)} (set here, not the Train tab's)"

    def scenario_from_controls(self) -> serving.ServeScenario:
        v = {k: c.value for k, c in self.controls.items()}
        try:
            model, label = self.model()
            self.model_note.value = f"<div style='font-size:13px;color:#555'>{label}</div>"
            return serving.ServeScenario(
                model=model,
                weight_precision=v["precision"],
                kv_precision=v["kv_precision"],
                prompt_tokens=v["prompt_tokens"],
                output_tokens=v["output_tokens"],
                output_tokens_p99=round(v["answer_spread"] * v["output_tokens"]) if v["answer_spread"] > 1 else None,
                requests_per_s=v["rps"],
                ttft_ms=v["ttft_ms"],
                tpot_ms=v["tpot_ms"],
                pricing=(v["pricing"],),
                clouds=() if v["cloud"] == "any" else (v["cloud"],),
                headroom=v["headroom_pct"] / 100,
                stack_choice=v["stack"],
                disaggregation=v["disaggregation"],
                router=v["router"],
                capacity_policy=v["capacity_policy"],
            )
        except InputError as err:  # name the control as the page labels it, unit included
            control = self.controls.get(CONTROL_OF_FIELD.get(err.field, err.field))
            label = control.description if control is not None else err.field.replace("_", " ").capitalize()
            raise InputError(label, err.message) from None

    def update(self) -> None:
        """Recompute; on invalid input show the message and clear the answer (no previous answer beside it)."""
        with stale.working(self.widget):
            try:
                self._recompute(self.scenario_from_controls())
            except InputError as err:
                self._show_stale(str(err))
                return
            except Exception as err:  # never a traceback in the page
                self._show_stale(f"This serving scenario could not be computed ({type(err).__name__}: {err}).")
                return
            self.stale = False
            stale.show_fresh(self.charts)
            self.status.value = ""

    def _show_stale(self, error: str) -> None:
        self.stale = True
        self.frame = None  # the train-then-serve chart must not be refreshed from a previous answer
        self.recommendation = None
        stale.show_stale(self.card, self.table, self.charts)
        self.status.value = stale.messages([error], [])

    def _recompute(self, scenario: serving.ServeScenario) -> None:
        self.scenario = scenario
        frame = serving.evaluate_serving(scenario, self.catalog)
        self.frame = frame
        self.recommendation = serving.recommend_serving(frame, scenario)
        self.card.value = views.serving_card(self.recommendation, self._phases())
        self.table.value = views.serving_table(frame)
        self.charts.datasets = cs.tab_datasets(frame, scenario, self.catalog, *self._combos())

    def _phases(self) -> str:
        """'Train, then serve' in words: which model each phase uses."""
        trained, served = self.train_model(), self.scenario.model if self.scenario else None
        if trained is None or served is None:
            return ""
        same = trained == served
        return (
            f"Train: {model_words(trained)}. Serve: {model_words(served)}"
            + ("" if same else " (a different model from the one trained)")
            + "."
        )

    def _combos(self) -> tuple[pl.DataFrame | None, str | None]:
        """Train, then serve's totals (None before the Train tab has a plan) and, when there are none, why."""
        train = self.train_frame()
        if train is None:
            return None, None
        months = self.controls["months"].value
        return serving.train_then_serve(train, self.frame, months), serving.nothing_to_total(train, self.frame)

    def refresh_combined(self) -> None:
        """The training view changed: the served model follows it unless overridden; otherwise only the
        train-then-serve chart and the phase labels depend on it."""
        if (
            self.scenario is not None
            and not self.controls["own_model"].value
            and self.train_model() != self.scenario.model
        ):
            self.update()
        elif self.frame is not None:
            self.charts.datasets = {**self.charts.datasets, "combined": cs.combined_datasets(*self._combos())}
            self.card.value = views.serving_card(self.recommendation, self._phases())
