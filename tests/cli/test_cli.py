"""The CLI contract (docs/design.md) and its bad-input rule: exit 2, one line naming the flag."""

import json
import subprocess
import sys

import pytest

from workbook.charts import training as train_charts

KEYS = {
    "accelerator",
    "chips",
    "mfu",
    "train_days",
    "chip_hours",
    "cost_usd",
    "memory_per_chip_gb",
    "fits_in_memory",
    "energy_kwh",
}


def test_module_entry_point():
    """The real ``python -m workbook``: its exit status and one-line error (the other tests run it in-process)."""
    out = subprocess.run(
        [sys.executable, "-m", "workbook", "train", "--params", "-1", "--accelerator", "h100-sxm"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--params" in out.stderr


def test_train_json_contract(cli):
    out = cli(
        "train",
        "--params",
        "70e9",
        "--tokens",
        "2e12",
        "--accelerator",
        "tpu-v5p",
        "--days",
        "30",
        "--framework",
        "jax",
        "--current-platform",
        "tpu",
        "--pricing",
        "commit-1y",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert KEYS <= set(result)
    assert result["accelerator"] == "tpu-v5p" and result["feasible"]
    assert 25 <= result["train_days"] <= 30
    assert result["chips"] % 4 == 0 and result["fits_in_memory"]
    # A JAX team already on TPU ports nothing; a 30-day run on a 1-year commitment bills the whole term.
    assert result["start_delay_days"] == 0 and result["migration_weeks"] == 0
    assert result["term_months"] == 12 and "whole-term" in result["cost_basis"]
    assert result["cost_usd"] > 10 * result["amortised_cost_usd"] > 0
    assert result["region"] and result["usd_per_chip_hour"] <= result["usd_per_chip_hour_typical"]
    assert "whole 12-month term is billed" in out.stderr and "amortised" in out.stderr


def test_on_demand_beyond_capacity_says_so_and_porting_moves_the_finish(cli):
    out = cli("train", "--params", "70e9", "--tokens", "2e12", "--accelerator", "tpu-v5p", "--days", "30", "--json")
    result = json.loads(out.stdout)
    assert not result["feasible"] and "without a reservation" in result["infeasible_reason"]
    assert result["chips"] <= 512 and result["start_delay_days"] > 0
    assert result["finish_days"] == pytest.approx(result["start_delay_days"] + result["train_days"])


def test_compare_says_shortest_time_when_nothing_meets_the_deadline(cli):
    out = cli("compare", "--params", "759e9", "--days", "30")
    assert out.returncode == 0, out.stderr
    assert "Nothing finishes within 30 days. The fastest plan:" in out.stdout
    assert "Relax the deadline to about" in out.stdout


def test_compare_lists_options_and_accelerators_lists_ids(cli):
    out = cli("compare", "--params", "7e9", "--pricing", "spot", "--json")
    rows = json.loads(out.stdout)
    assert len({r["accelerator"] for r in rows}) > 10
    ids = json.loads(cli("accelerators", "--json").stdout)
    assert any(r["accelerator_id"] == "tpu-v7" for r in ids)


@pytest.mark.parametrize(
    "args, flag",
    [
        (["train", "--params", "-1", "--accelerator", "h100-sxm"], "--params"),
        (["train", "--params", "0", "--accelerator", "h100-sxm"], "--params"),
        (["train", "--params", "abc", "--accelerator", "h100-sxm"], "--params"),
        (["train", "--params", "7e9", "--accelerator", "h100"], "--accelerator"),
        (["train", "--params", "7e9", "--accelerator", "h100-sxm", "--chips", "8", "--days", "2"], "--days"),
        (["train", "--params", "7e9", "--accelerator", "h100-sxm", "--chips", "8.5"], "--chips"),
        (["train", "--params", "7e9", "--accelerator", "h100-sxm", "--framework", "mxnet"], "--framework"),
        (["train", "--params", "7e9", "--accelerator", "h100-sxm", "--cloud", "nowhere"], "--cloud"),
        (["train", "--params", "7e9", "--active-params", "8e9", "--accelerator", "h100-sxm"], "--active-params"),
        (["train", "--params", "nan", "--accelerator", "h100-sxm"], "--params"),
    ],
)
def test_bad_input_exits_2_with_one_line(cli, args, flag):
    out = cli(*args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and flag in out.stderr and "Traceback" not in out.stderr


def test_report_command_writes_a_self_contained_page(cli, tmp_path):
    out = tmp_path / "report.html"
    result = cli("report", "--params", "7e9", "--days", "14", "--pricing", "spot", "--out", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "Recommendation" in text and text.count("<svg") == len(train_charts.TEMPLATES) and "<script" not in text
    bad = cli("report", "--params", "7e9", "--out", str(tmp_path / "missing" / "r.html"))
    assert bad.returncode == 2 and "--out" in bad.stderr and bad.stderr.count("\n") == 1
