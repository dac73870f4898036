"""Predicted vs published serving throughput (``data/inference_runs.csv``, role ``validate``): held out of the fit."""

from __future__ import annotations

import dataclasses
import math

import polars as pl

from workbook.catalog import Catalog
from workbook.model.spec import ModelSpec
from workbook.serving.calibration import ServingEfficiency, calibrate
from workbook.serving.options import _configs, _evaluate_configs
from workbook.serving.scenario import ServeScenario


def validate(cat: Catalog, efficiency: ServingEfficiency | None = None) -> pl.DataFrame:
    """Predicted vs published throughput for the ``validate`` rows of ``data/inference_runs.csv``."""
    eff = efficiency or calibrate(cat)
    rows = []
    for r in cat.inference_runs.filter(pl.col("role") == "validate").iter_rows(named=True):
        spec = dataclasses.replace(ModelSpec.from_params(r["params"], r["active_params"]), n_layers=r["n_layers"])
        s = ServeScenario(
            model=spec,
            weight_precision=r["weight_precision"],
            kv_precision=r["kv_precision"],
            prompt_tokens=r["prompt_tokens"],
            output_tokens=int(round(r["output_tokens"])),
            ttft_ms=r["ttft_limit_ms"],
            tpot_ms=r["tpot_limit_ms"],
            n_kv_heads=r["n_kv_heads"],
            accelerators=(r["accelerator_id"],),
        )
        frame = _evaluate_configs(_configs(cat, s), s, eff).filter(
            pl.col("fits_in_memory")
            & pl.col("meets_ttft")
            & pl.col("meets_tpot")
            & (pl.col("tensor_parallel") <= r["chips"])
        )
        if r["tensor_parallel"]:
            frame = frame.filter(pl.col("tensor_parallel") == r["tensor_parallel"])
        if r["batch"]:
            frame = frame.filter(pl.col("batch") <= r["batch"])
        best = frame.sort("tokens_per_s_per_chip", descending=True).head(1)
        predicted = best["tokens_per_s_per_chip"].item() * r["chips"] if best.height else math.nan
        rows.append(
            {
                "run_id": r["run_id"],
                "accelerator_id": r["accelerator_id"],
                "scenario": r["scenario"],
                "prompt_basis": r["prompt_basis"],
                "published_tokens_per_s": r["value"],
                "predicted_tokens_per_s": predicted,
            }
        )
    return (
        pl.DataFrame(rows)
        .with_columns(error=(pl.col("predicted_tokens_per_s") / pl.col("published_tokens_per_s")).log())
        .with_columns(abs_error=pl.col("error").abs())
    )
