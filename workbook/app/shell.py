"""The Voila/JupyterLab dashboard shell: title, the Train and Serve tabs, the trust panels, the footer.

from workbook.app import Dashboard
Dashboard()                 # displays itself in a notebook cell (the app notebook does exactly this)
"""

from __future__ import annotations

import ipywidgets as w

from workbook import catalog as catalog_mod
from workbook.app import links, views
from workbook.app.serve_view import ServeView
from workbook.app.train_view import TrainView


class Dashboard:
    """Builds both tabs and the panels; the Train view computes at once, the Serve view when first opened."""

    def __init__(self, catalog: catalog_mod.Catalog | None = None):
        self.catalog = catalog or catalog_mod.load()
        self.train = TrainView(self.catalog, mode=self.mode, on_result=self._on_train_result)
        self.serve: ServeView | None = None  # built when its tab is first opened: the Train page loads faster
        self.widget = self._layout()
        self.train.update()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)

    def mode(self) -> str:
        return "serve" if getattr(self, "tabs", None) is not None and self.tabs.selected_index == 1 else "train"

    def _layout(self) -> w.Widget:
        self.tabs = w.Tab(
            children=[self.train.widget, w.HTML("Loading the serving view...")], titles=("Train", "Serve")
        )
        self.tabs.observe(self._on_tab, names="selected_index")
        header = w.HTML(
            "<h1 style='margin:0'>Accelerator Workbook</h1>"
            "<div style='font-size:16px;color:#444;margin-bottom:8px'>Which accelerator should we train this model on, "
            "how many chips, how long, what will it cost, and why?</div>"
        )
        footer = w.HTML(self._footer())
        self.trust = w.Accordion(
            children=[w.HTML(), w.HTML()],
            titles=("How accurate is this? (backtest on published runs)", "Popular claims, checked"),
        )
        self.trust.selected_index = None
        self.trust.observe(self._on_trust_open, names="selected_index")
        return w.VBox([header, self.tabs, self.trust, footer], layout=w.Layout(padding="8px"))

    def apply_query(self, query: str | None) -> None:
        """Set the controls from a scenario link; values not accepted are reported and left at their defaults."""
        values, problems = links.parse(query, [c for c in self.train.controls["cloud"].options if c != "any"])
        mode = values.pop("mode", "train")
        if problems:  # shown with any error the accepted values cause, until the user changes a control
            self.train.notices["link"] = views.message("Link: " + "; ".join(problems))
        self.train.set_values(values)
        if mode == "serve":
            self.tabs.selected_index = 1

    def _on_tab(self, change) -> None:
        """The Serve view is built and computed when first shown, so the Train page loads without paying for it."""
        if change["new"] == 1 and self.serve is None:
            self.serve = ServeView(self.catalog, lambda: self.train.frame, self._train_model)
            self.tabs.children = [self.tabs.children[0], self.serve.widget]
            self.serve.update()

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
            self.trust.children[0].value = views.accuracy(
                validation.summarize(validation.backtest(self.catalog, cal)).lines()
            )
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
