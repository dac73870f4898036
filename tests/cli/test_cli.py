"""The CLI contract (docs/design.md) and its bad-input rule: exit 2, one line naming the flag."""

import json
import subprocess
import sys

import pytest

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
        "--json",
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert KEYS <= set(result)
    assert result["accelerator"] == "tpu-v5p" and result["feasible"]
    assert 25 <= result["train_days"] <= 30
    assert result["chips"] % 4 == 0 and result["fits_in_memory"]


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
    assert "Runners-up" in text and text.count("<svg") == 1 and "<script" not in text
    bad = cli("report", "--params", "7e9", "--out", str(tmp_path / "missing" / "r.html"))
    assert bad.returncode == 2 and "--out" in bad.stderr and bad.stderr.count("\n") == 1


def test_prices_flag_on_train_compare_serve_and_report(cli, tmp_path):
    mine = tmp_path / "mine.csv"
    mine.write_text(
        "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\n"
        "h100-sxm,nebius,on-demand,0.80,2026-01-01,our contract\n"
    )
    common = ["--params", "70e9", "--prices", str(mine)]
    train = json.loads(cli("train", *common, "--accelerator", "h100-sxm", "--cloud", "nebius", "--json").stdout)
    assert train["usd_per_chip_hour"] == 0.8 and train["user_price"] is True
    compare = json.loads(cli("compare", *common, "--pricing", "on-demand", "--json").stdout)
    assert compare[0]["accelerator"] == "h100-sxm" and compare[0]["user_price"] is True
    serve = cli("serve", *common, "--accelerator", "h100-sxm", "--cloud", "nebius")
    assert serve.returncode == 0 and "your price" in serve.stdout
    out = tmp_path / "brief.html"
    assert cli("report", *common, "--out", str(out)).returncode == 0 and "your price" in out.read_text()
    missing = cli("train", "--params", "70e9", "--accelerator", "h100-sxm", "--prices", str(tmp_path / "no.csv"))
    assert missing.returncode == 2 and "--prices" in missing.stderr
