"""Serving: scenario -> calibration per software stack -> replica sizing -> recommendation, and validation."""

from workbook.serving.calibration import STACK_NAMES, ServingEfficiency, calibrate
from workbook.serving.lifecycle import nothing_to_total, train_then_serve
from workbook.serving.options import SERVE_COLUMNS, batch_curve, best_configs, evaluate_serving
from workbook.serving.recommend import ServingRecommendation, recommend_serving
from workbook.serving.scenario import (
    CAPACITY_POLICIES,
    DEFAULT_HEADROOM,
    DEFAULT_SERVE_PRECISION,
    DEFAULT_SERVE_PRICING,
    KV_PRECISIONS,
    ROUTERS,
    STACK_CHOICES,
    WEIGHT_PRECISIONS,
    ServeAssumptions,
    ServeScenario,
    default_kv_heads,
    default_kv_precision,
)
from workbook.serving.validation import validate

__all__ = [
    "CAPACITY_POLICIES",
    "DEFAULT_HEADROOM",
    "DEFAULT_SERVE_PRECISION",
    "DEFAULT_SERVE_PRICING",
    "KV_PRECISIONS",
    "SERVE_COLUMNS",
    "STACK_CHOICES",
    "ROUTERS",
    "STACK_NAMES",
    "WEIGHT_PRECISIONS",
    "ServeAssumptions",
    "ServeScenario",
    "ServingEfficiency",
    "ServingRecommendation",
    "batch_curve",
    "best_configs",
    "calibrate",
    "default_kv_heads",
    "default_kv_precision",
    "evaluate_serving",
    "nothing_to_total",
    "recommend_serving",
    "train_then_serve",
    "validate",
]
