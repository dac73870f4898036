"""Serving: scenario -> calibration -> per-option configuration search -> validation, mirroring training."""

from workbook.serving.calibration import ServingEfficiency, calibrate
from workbook.serving.lifecycle import train_then_serve
from workbook.serving.options import SERVE_COLUMNS, batch_curve, best_configs, evaluate_serving
from workbook.serving.scenario import WEIGHT_PRECISIONS, ServeAssumptions, ServeScenario, default_kv_heads
from workbook.serving.validation import validate

__all__ = [
    "SERVE_COLUMNS",
    "WEIGHT_PRECISIONS",
    "ServeAssumptions",
    "ServeScenario",
    "ServingEfficiency",
    "batch_curve",
    "best_configs",
    "calibrate",
    "default_kv_heads",
    "evaluate_serving",
    "train_then_serve",
    "validate",
]
