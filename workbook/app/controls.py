"""Widget helpers shared by the Train and Serve views."""

import contextlib
import math

import ipywidgets as w

STYLE = {"description_width": "150px"}


def log_slider(description: str, value: float, low: float, high: float, fmt: str = ".3r", **kw) -> w.FloatLogSlider:
    """A log-scale slider that reports its value when released (no flood of updates while dragging).
    Its readout is plain decimal with 3 significant digits, 1400 rather than 1.40e+3 (no thousands separator:
    the readout is editable and is read back with parseFloat)."""
    return w.FloatLogSlider(
        value=value,
        base=10,
        min=math.log10(low),
        max=math.log10(high),
        step=0.02,
        description=description,
        continuous_update=False,
        readout_format=fmt,
        style=STYLE,
        layout=w.Layout(width="420px"),
        **kw,
    )


def slider(description: str, value: float, low: float, high: float, step: float | None = None, **kw) -> w.Widget:
    """A linear slider that reports its value when released: whole numbers without ``step``, else decimals."""
    if step is None:
        return w.IntSlider(
            value=value, min=low, max=high, description=description, continuous_update=False, style=STYLE, **kw
        )
    return w.FloatSlider(
        value=value, min=low, max=high, step=step, description=description, continuous_update=False, style=STYLE, **kw
    )


def page_columns(controls: list[w.Widget], answer: list[w.Widget], below: list[w.Widget]) -> w.VBox:
    """The controls beside the answer; where both do not fit (820 px) the answer wraps below the controls at full
    width instead of being squeezed and clipped. ``below`` (the option table) spans the whole width under both, so
    its nine columns do not wrap every cell at 1280 px."""
    left = w.VBox(controls, layout=w.Layout(width="460px", min_width="440px"))
    right = w.VBox(answer, layout=w.Layout(flex="1 1 480px"))
    return w.VBox([w.HBox([left, right], layout=w.Layout(flex_flow="row wrap")), *below])


@contextlib.contextmanager
def syncing(view):
    """Inside, changes to ``view``'s controls are not the user's: its observers skip them (they check
    ``view._syncing``), so setting several controls (a link) or showing a derived value recomputes nothing."""
    view._syncing = True
    try:
        yield
    finally:
        view._syncing = False


def set_values(view, values: dict) -> None:
    """Set several of ``view.controls`` at once (a scenario link) without recomputing after each."""
    with syncing(view):
        for name, value in values.items():
            view.controls[name].value = value
