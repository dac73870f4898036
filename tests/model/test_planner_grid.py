"""The planner's candidate layouts are exactly those its rules allow, in grid order (ties go to the first), checked
against a plain loop over the degrees on real accelerator and model rows."""

import itertools

import polars as pl
import pytest

from workbook.model import parallelism as P
from workbook.model.units import HEAD_DIM
from workbook.training import options
from workbook.training.scenario import ModelSpec, Scenario

SETTINGS = {"micro_batch": 1, "hbm_usable_fraction": 0.9, "framework_overhead_bytes": 5e9}


def _rows() -> pl.DataFrame:
    """Every accelerator x three model shapes (dense 8B and 405B, a MoE) x three chip counts."""
    frames = []
    for spec in (ModelSpec.from_params(8e9), ModelSpec.from_params(405e9), ModelSpec.from_params(400e9, 17e9)):
        s = Scenario(model=spec, tokens=20 * spec.params, days=30)
        cat = options._default_catalog()
        frame = options._accelerator_frame(s, cat, options._default_calibration(cat), options.job_frame(s))
        frames.append(frame.select(P.INPUT_COLUMNS).unique(maintain_order=True))
    rows = pl.concat(frames).join(pl.DataFrame({"chips": [8.0, 1024.0, 16384.0]}), how="cross")
    return rows.with_row_index("_row")


def _allowed(row: dict, settings: dict) -> list[tuple]:
    """The rules of :func:`parallelism._candidates`, one layout at a time."""
    most = row["global_batch_tokens"] / (settings["micro_batch"] * row["seq_len"])
    found = []
    for t, p, c, r, z in itertools.product(P.TP_DEGREES, P.PP_DEGREES, P.CP_DEGREES, P.RECOMPUTE, P.ZERO_STAGES):
        if settings.get("recompute") not in (None, r) or settings.get("zero_stage") not in (None, z):
            continue
        if settings.get("zero_stage") is None and z == 3 and p > 1:
            continue
        if t > min(row["scaleup_domain_chips"], row["attention_dim"] / HEAD_DIM) and t > 1:
            continue
        if p > row["n_layers"] and p > 1 or c > row["seq_len"] / P.MIN_TOKENS_PER_CP_RANK and c > 1:
            continue
        if not t * p * c <= row["chips"] <= t * p * c * most:
            continue
        found.append((row["_row"], float(t), float(p), float(c), r, z))
    return found


@pytest.mark.parametrize("fixed", [{}, {"recompute": "full"}, {"zero_stage": 3}])
def test_candidates_are_the_allowed_layouts_in_grid_order(fixed):
    rows = _rows()
    settings = {**SETTINGS, **fixed}
    got = P._candidates(rows.lazy(), settings, pl.col("chips")).collect()
    expected = [layout for row in rows.iter_rows(named=True) for layout in _allowed(row, settings)]
    assert len(expected) > 1000, "too few layouts to compare"
    assert got.select("_row", "_t", "_p", "_c", "recompute", "zero_stage").rows() == expected
