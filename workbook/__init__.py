"""Accelerator Workbook: which accelerator to train (and serve) a model on, how many chips, how long, what it costs,
and why."""

__version__ = "0.1.0"
