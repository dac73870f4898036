"""Shared serving fixtures: the shipped catalog and its serving calibration, loaded once per session."""

import dataclasses

import polars as pl
import pytest

from workbook import catalog, serving
from workbook.model.spec import ModelSpec
from workbook.serving import published, validation
from workbook.serving.calibration import calibrate


@pytest.fixture(scope="session")
def cat():
    return catalog.load()


@pytest.fixture(scope="session")
def eff(cat):
    return calibrate(cat)


@pytest.fixture(scope="session")
def validated(cat):
    """Every published result against the model's prediction, held out (:func:`validation.validate`)."""
    return validation.validate(cat)


@pytest.fixture(scope="session")
def llama70_replica(cat, eff):
    """(replica frame, scenario): one H100 TP2 replica of Llama 2 70B FP8 on MLPerf's prompts (MLPerf v4.1's H100
    Server run), with the calibrated TensorRT-LLM efficiencies."""
    run = cat.inference_runs.filter(pl.col("run_id") == "mlperf41-h100x8-llama2-70b-server-ttft").row(0, named=True)
    stack = eff.stacks.filter(pl.col("stack") == "trtllm").row(0, named=True)
    reps = published._replicas(
        cat.accelerators, run, stack["eta_bw"], stack["eta_c"], dataclasses.replace(eff.factors(), moe=1.0)
    )
    assert reps.height == 1
    return reps, published.scenario(run)


@pytest.fixture(scope="session")
def aws_h100_small_fleet():
    """A fleet smaller than the instance it rents: a 70B model at 3 requests/s on AWS's on-demand H100s, two chips'
    worth of traffic on a p5.48xlarge (8 GPUs, rented whole)."""
    return serving.ServeScenario(
        model=ModelSpec.from_params(70e9),
        requests_per_s=3,
        accelerators=("h100-sxm",),
        clouds=("aws",),
        pricing=("on-demand",),
    )
