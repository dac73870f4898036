"""Where the files that ship with the workbook live: inside the installed package (a wheel), else in the source
checkout. The repository keeps one copy of each (``data/``, ``notebooks/app.ipynb``, ``voila.json``); the wheel
build copies them into the package (``force-include`` in ``pyproject.toml``)."""

import importlib.resources
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def path(in_package: str, in_checkout: str) -> Path:
    """``workbook/<in_package>`` when the installed package holds it, else ``<checkout>/<in_checkout>``."""
    packaged = Path(str(importlib.resources.files("workbook").joinpath(in_package)))
    return packaged if packaged.exists() else CHECKOUT / in_checkout
