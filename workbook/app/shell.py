"""The Voila/JupyterLab dashboard shell: title, the Train and Serve tabs, the trust panels, the footer.

from workbook.app import Dashboard
Dashboard()                 # displays itself in a notebook cell (the app notebook does exactly this)
"""

from __future__ import annotations

import ipywidgets as w

from workbook import catalog as catalog_mod
from workbook import present
from workbook.app import links, state, views
from workbook.app.serve_view import ServeView
from workbook.app.train_view import TrainView
from workbook.model.spec import PRESET_NAMES

SERVE_FIRST_OPEN = (
    "Working out every serving option: a second or two, up to half a minute the first time after the workbook "
    "is updated."
)


class Dashboard:
    """Builds both tabs and the panels; the Train view computes at once, the Serve view when first opened."""

    def __init__(self, catalog: catalog_mod.Catalog | None = None):
        self.catalog = catalog or catalog_mod.load()
        self.train = TrainView(self.catalog, on_result=self._on_train_result, brief_extras=self._brief_extras)
        self.train_fields = links.fields_of(self.train.link_controls())
        self.serve: ServeView | None = None  # built when its tab is first opened: the Train page loads faster
        self.serve_fields: dict[str, links.Field] = {}
        self.pending_serve: dict = {}  # Serve values from a link, set when that tab is first opened
        self.link = w.HTML()
        self.app_url = links.app_url()  # '' under Voila; the published app's address in JupyterLab
        self.query = ""
        self.widget = self._layout()
        for control in self.train.link_controls().values():
            control.observe(lambda _: self.refresh_link(), names="value")
        self.train.update()
        self.refresh_link()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)

    def mode(self) -> str:
        return "serve" if getattr(self, "tabs", None) is not None and self.tabs.selected_index == 1 else "train"

    def _layout(self) -> w.Widget:
        self.tabs = w.Tab(
            children=[_with_heading("train", self.train.widget), w.HTML("Loading the serving view...")],
            titles=("Train", "Serve"),
        )
        self.tabs.observe(self._on_tab, names="selected_index")
        header = w.HTML(
            "<h1 class='wb-title'>Accelerator Workbook</h1>"
            "<div class='wb-question'>Which accelerator should we train and serve this model on, how many chips, "
            "how long, what will it cost, and why?</div>"
        )
        footer = w.HTML(self._footer())
        self.trust = w.Accordion(
            children=[w.HTML(), w.HTML()],
            titles=("How accurate is this? (backtest on published runs)", "Popular claims, checked"),
        )
        self.trust.selected_index = None
        self.trust.observe(self._on_trust_open, names="selected_index")
        # The stylesheet travels with the widget: JupyterLab has no Voila template (its classes use Lab's theme colours)
        style = w.HTML(f"<style>{present.css()}</style>")
        return w.VBox([style, header, self.link, self.tabs, self.trust, footer], layout=w.Layout(padding="8px"))

    def apply_query(self, query: str | None) -> None:
        """Set the controls of both tabs from a scenario link; values not accepted are reported and left as they
        were. The Serve values wait until the Serve tab is first opened (at once when the link opens on it)."""
        train, serve, mode, problems = links.parse(query, self.train_fields, self._serve_fields())
        for values, prefix in ((train, ""), (serve if serve.get("own_model") else {}, links.SERVE_PREFIX)):
            name = PRESET_NAMES.get(values.get("model"))
            problems += [
                f"{prefix}{field}={values[field]} ignored: set by the model {name}"
                for field in state.set_by_model(values)
            ]
        if problems:  # shown with any error the accepted values cause, until the user changes a control
            self.train.notices["link"] = views.message("Link: " + "; ".join(problems))
        self.train.set_values(train)
        if self.serve is not None:
            self.serve.set_values(serve)
        else:
            self.pending_serve = serve
        if mode == "serve":
            self.tabs.selected_index = 1
        self.refresh_link()

    def _brief_extras(self) -> dict:
        """The brief's scenario link (as the page will resolve it) and the serving answer once that tab was used."""
        serving = None if self.serve is None else self.serve.recommendation
        return {"link": self.app_url + "?" + self.query, "serving": serving}

    def _serve_fields(self) -> dict[str, links.Field]:
        """The Serve controls' fields (from a throwaway view's controls while that tab has not been built)."""
        if not self.serve_fields:
            controls = (self.serve or ServeView(self.catalog, lambda: None)).controls
            self.serve_fields = links.fields_of(controls)
        return self.serve_fields

    def refresh_link(self) -> None:
        """The share link: every control of both tabs (Serve once opened) and the tab showing now; none while a
        tab's inputs are invalid (no link to an answer that is not on the page)."""
        if self.train.stale or (self.serve is not None and self.serve.stale):
            self.query, self.link.value = "", ""
            return
        serve = None if self.serve is None else {k: c.value for k, c in self.serve.controls.items()}
        query = links.build(
            {k: c.value for k, c in self.train.link_controls().items()},
            self.train_fields,
            self.mode(),
            serve,
            self._serve_fields() if serve is not None else None,
        )
        self.query = query
        self.link.value = views.share_link(query, self.app_url)

    def _on_tab(self, change) -> None:
        """The Serve view is built and computed when first shown, so the Train page loads without paying for it."""
        if change["new"] == 1 and self.serve is None:
            self.serve = ServeView(self.catalog, lambda: self.train.frame, self._train_model)
            self.tabs.children = [self.tabs.children[0], _with_heading("serve", self.serve.widget)]
            for control in self.serve.controls.values():
                control.observe(lambda _: self.refresh_link(), names="value")
            # shown while the first answer is worked out (cleared with it): after an update of the workbook its
            # serving calibration is rebuilt first, which takes a visitor's page half a minute, not a second
            self.serve.status.value = present.message(SERVE_FIRST_OPEN, kind="info")
            if self.pending_serve:
                self.serve.set_values(self.pending_serve)
                self.pending_serve = {}
            else:
                self.serve.update()
        self.refresh_link()

    def _train_model(self):
        """The Train tab's model (its scenario's ModelSpec), or None before its first answer."""
        return None if self.train.scenario is None else self.train.scenario.model

    def _on_train_result(self) -> None:
        """The training answer changed: the Serve tab's train-then-serve chart depends on it."""
        if self.serve is not None:
            self.serve.refresh_combined()

    def _on_trust_open(self, change) -> None:
        """Computed on first open only: the page loads without paying for them."""
        index = change["new"]
        if index is None or self.trust.children[index].value:
            return
        from workbook.training import calibration, claims, validation  # only when a reader opens a panel

        cal = calibration.fit(self.catalog)
        if index == 0:
            summary = validation.summarize(validation.backtest(self.catalog, cal))
            held_out = validation.held_out_words(validation.leave_one_family_out(self.catalog))
            self.trust.children[0].value = views.accuracy([*summary.words(), held_out], summary.lines())
        else:
            self.trust.children[1].value = views.claims_table(claims.check_all(self.catalog, cal))

    def _footer(self) -> str:
        cat = self.catalog
        return (
            "<div style='color:#666;font-size:12px;margin-top:12px'>Prices as of "
            f"{cat.prices_as_of:%Y-%m-%d} (newest row; catalog rows are about 2025-05) from "
            f"{cat.usable_prices().height} price quotes; specs as of {cat.accelerators['as_of'].max():%Y-%m-%d}. "
            "MFU and goodput are calibrated on published training runs; every figure's source is in data/ "
            "and the engineer notebook explore.ipynb.</div>"
        )


HEADINGS = {
    "train": "Train: which accelerator, how many chips, how long, and what it costs",
    "serve": "Serve: which accelerator, how many chips, and what a million output tokens cost",
}


def _with_heading(tab: str, view: w.Widget) -> w.Widget:
    return w.VBox([w.HTML(f"<h2 class='wb-tab-heading'>{HEADINGS[tab]}</h2>"), view])
