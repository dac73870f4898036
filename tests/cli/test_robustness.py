"""Bad input everywhere, and the same numbers from the CLI, the Python API and the app."""

import json
import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbook import catalog, cli
from workbook.app.shell import Dashboard
from workbook.errors import DataError, InputError
from workbook.training import options
from workbook.training.scenario import Constraints, ModelSpec, Scenario

FLAGS = [
    "--params",
    "--tokens",
    "--accelerator",
    "--chips",
    "--days",
    "--framework",
    "--precision",
    "--pricing",
    "--cloud",
    "--active-params",
    "--mfu",
    "--json",
    "--rps",
    "--tpot-ms",
    "--ttft-ms",
    "--prompt-tokens",
    "--mode",
]
VALUES = [
    "70e9",
    "-1",
    "0",
    "nan",
    "inf",
    "abc",
    "1e400",
    "8",
    "8.5",
    "h100-sxm",
    "tpu-v5p",
    "h100",
    "jax",
    "fp8",
    "int4",
    "spot",
    "gcp",
    "mars",
    "",
    "1e-300",
    "30",
    "serve",
    "train",
    "9" * 40,
]
COMMANDS = ["train", "compare", "serve", "accelerators", "report", "bogus"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(COMMANDS), st.lists(st.one_of(st.sampled_from(FLAGS), st.sampled_from(VALUES)), max_size=8))
def test_cli_fuzz_never_tracebacks(capsys, command, argv):
    argv = [command, *argv]
    if command == "report":
        argv += ["--out", "/nonexistent-dir/r.html"]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 2)
    assert "Traceback" not in err
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1
    elif "--json" in argv and out.strip().startswith(("{", "[")):
        data = json.loads(out)
        rows = data if isinstance(data, list) else [data]
        for row in rows:
            for key, value in row.items():
                if isinstance(value, float) and row.get("feasible"):
                    assert math.isfinite(value) and value >= 0, (key, value)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    params=st.floats(1e8, 2e12),
    tokens_per_param=st.floats(1, 2000),
    days=st.floats(0.5, 365),
    framework=st.sampled_from(["pytorch", "jax", "tensorflow"]),
    precision=st.sampled_from(["bf16", "fp8", "int8"]),
    moe=st.floats(0.05, 1.0),
)
def test_api_outputs_are_finite_and_non_negative(params, tokens_per_param, days, framework, precision, moe):
    model = ModelSpec.from_params(params, params * moe)
    frame = options.evaluate(
        Scenario(
            model=model,
            tokens=min(params * tokens_per_param, 1e15),
            days=days,
            framework=framework,
            precision=precision,
        )
    )
    feasible = frame.filter(pl.col("feasible"))
    numeric = [c for c, t in feasible.schema.items() if t.is_numeric()]
    for column in numeric:
        values = feasible[column].drop_nulls()
        assert values.is_finite().all() and (values >= 0).all(), column
    assert (frame.filter(~pl.col("feasible"))["infeasible_reason"].str.len_chars() > 0).all()


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"tokens": -1}, "tokens"),
        ({"tokens": float("nan")}, "tokens"),
        ({"framework": "mxnet"}, "framework"),
        ({"chips": 8, "days": 3}, "chips"),
        ({"chips": 0}, "chips"),
        ({"days": 1e9}, "days"),
        ({"pricing": ()}, "pricing"),
    ],
)
def test_api_bad_arguments_name_the_field(kwargs, field):
    """Also: constraints and model specs validate themselves (Constraints(budget_usd=-5) raises on budget_usd)."""
    with pytest.raises(InputError) as err:
        Scenario(**{"model": ModelSpec.from_params(7e9), "tokens": 1e11, **kwargs})
    assert err.value.field == field and field in str(err.value)


def test_constraints_and_model_validate_themselves():
    with pytest.raises(InputError, match="budget_usd"):
        Constraints(budget_usd=-5)
    with pytest.raises(InputError, match="active_params"):
        ModelSpec.from_params(7e9, 8e9)


@pytest.mark.parametrize(
    "body, where",
    [
        (
            "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\nh100-sxm,x,on-demand,0,2026-01-01,src\n",
            "usd_per_chip_hour",
        ),
        (
            "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\nh100-sxm,x,on-demand,1,2026-01-01,src\n"
            "h100-sxm,x,on-demand,2,2026-01-01,src\n",
            "line",
        ),
        (
            "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\nh100-sxm,x,weekly,1,2026-01-01,src\n",
            "pricing_model",
        ),
        ("", "empty"),
    ],
)
def test_bad_override_files(tmp_path, body, where):
    path = tmp_path / "o.csv"
    path.write_text(body)
    with pytest.raises(DataError, match=where):
        catalog.load(price_overrides=path)


def test_same_numbers_in_cli_api_and_app(capsys):
    assert (
        cli.main(
            [
                "train",
                "--params",
                "13e9",
                "--tokens",
                "260e9",
                "--accelerator",
                "tpu-v5p",
                "--days",
                "20",
                "--framework",
                "jax",
                "--pricing",
                "on-demand",
                "--json",
            ]
        )
        == 0
    )
    from_cli = json.loads(capsys.readouterr().out)
    api = options.evaluate(
        Scenario(
            model=ModelSpec.from_params(13e9),
            tokens=260e9,
            days=20,
            framework="jax",
            pricing=("on-demand",),
            accelerators=("tpu-v5p",),
            constraints=Constraints(deadline_days=20),  # the CLI's --days is the deadline, as the app's slider
        )
    ).row(0, named=True)
    dash = Dashboard()
    dash.apply_query("params_b=13&days=20&framework=jax&pricing=on-demand")
    app = dash.train.frame.filter(pl.col("accelerator_id") == "tpu-v5p").sort("cost_usd").row(0, named=True)
    for key in ("chips", "train_days", "cost_usd", "memory_per_chip_gb", "energy_kwh"):
        assert (
            from_cli[key] == pytest.approx(api[key], rel=1e-9) == pytest.approx(app[key], rel=1e-9)
            or from_cli[key] == api[key] == app[key]
        ), key
