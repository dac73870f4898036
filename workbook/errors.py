"""The two kinds of error the workbook raises on bad input, each one line naming the field."""


class InputError(ValueError):
    """A scenario field, API argument or CLI flag is out of its accepted range.

    ``field`` names the argument (``params``, ``--days``); the message says what is accepted.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class DataError(ValueError):
    """A data file (shipped or user-supplied) breaks its schema: names file, line and column."""
