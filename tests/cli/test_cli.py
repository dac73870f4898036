"""The CLI contract (DESIGN.md) and its bad-input rule: exit 2, one line naming the flag."""

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


def cli(*args):
    return subprocess.run([sys.executable, "-m", "workbook", *args], capture_output=True, text=True, timeout=120)


def test_train_json_contract():
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


def test_compare_lists_options_and_accelerators_lists_ids():
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
def test_bad_input_exits_2_with_one_line(args, flag):
    out = cli(*args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and flag in out.stderr and "Traceback" not in out.stderr


def test_report_command_writes_a_self_contained_page(tmp_path):
    out = tmp_path / "report.html"
    result = cli("report", "--params", "7e9", "--days", "14", "--pricing", "spot", "--out", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "Recommendation" in text and text.count("<svg") == 4 and "<script" not in text
    bad = cli("report", "--params", "7e9", "--out", str(tmp_path / "missing" / "r.html"))
    assert bad.returncode == 2 and "--out" in bad.stderr and bad.stderr.count("\n") == 1


def test_train_json_has_the_layout():
    out = subprocess.run(
        [sys.executable, "-m", "workbook", "train", "--model", "llama3-70b", "--tokens", "1e12"]
        + ["--accelerator", "h100-sxm", "--chips", "1024", "--global-batch-tokens", "8e6", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    row = json.loads(out.stdout)
    degrees = [row[k] for k in ("tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel")]
    assert degrees[0] * degrees[1] * degrees[2] * degrees[3] == row["chips"] == 1024
    assert row["global_batch_tokens"] == 8e6 and row["recompute"] in ("none", "selective", "full")


def test_int8_training_on_h100_exits_2():
    out = subprocess.run(
        [sys.executable, "-m", "workbook", "train", "--params", "7e9", "--accelerator", "h100-sxm"]
        + ["--precision", "int8"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "--precision" in out.stderr and out.stderr.count("\n") == 1
