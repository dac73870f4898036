"""The two kinds of error the workbook raises on bad input, each one line naming the field, and the
checks that raise them."""

import math


class InputError(ValueError):
    """A scenario field, API argument or CLI flag is out of its accepted range.

    ``field`` names the argument (``params``, ``--days``); ``message`` says what is accepted.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class DataError(ValueError):
    """A data file (shipped or user-supplied) breaks its schema: names file, line and column."""


def check_number(field: str, value, low: float, high: float, integer: bool = False) -> None:
    """Raise :class:`InputError` unless ``value`` is a finite number in [low, high] (whole if ``integer``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(field, f"must be a number between {_bound(low)} and {_bound(high)}, got {value!r}")
    if not low <= value <= high:
        raise InputError(field, f"must be between {_bound(low)} and {_bound(high)}, got {value:g}")
    if integer and int(value) != value:
        raise InputError(field, f"must be a whole number, got {value:g}")


def _bound(value: float) -> str:
    """A range's end as short as it stays exact: 3650, 1e+14, and 1,048,576 (not 1.04858e+06)."""
    short = f"{value:g}"
    return short if float(short) == value else f"{value:,.0f}"


def check_choice(field: str, value, allowed) -> None:
    """Raise :class:`InputError` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise InputError(field, f"must be one of {', '.join(allowed)}, got {value!r}")
