"""The CLI contract (docs/design.md) and its bad-input rule: exit 2, one line naming the flag."""

import json
import math
import subprocess
import sys

import pytest

from workbook import cli as cli_mod

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
    args = ["--params", "70e9", "--tokens", "2e12", "--accelerator", "tpu-v5p", "--days", "30"]
    args += ["--pricing", "on-demand"]
    out = cli("train", *args, "--json")
    result = json.loads(out.stdout)
    assert not result["feasible"] and "without a reservation" in result["infeasible_reason"]
    assert result["chips"] <= 512 and result["start_delay_days"] > 0
    assert result["finish_days"] == pytest.approx(result["start_delay_days"] + result["train_days"])


def test_train_card_counts_porting_in_the_finish_and_names_the_deadline_risk(cli):
    args = ["train", "--params", "70e9", "--accelerator", "tpu-v6e", "--pricing", "commit-1y", "--days", "30"]
    out = cli(*args, "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["feasible"] and r["start_delay_days"] > 0 and r["deadline_days"] == 30
    assert r["finish_days"] == pytest.approx(r["start_delay_days"] + r["train_days"])
    assert r["finish_days"] <= 30 < r["finish_days_high"]
    assert r["finish_days_low"] <= r["finish_days"] <= r["finish_days_high"]
    assert (
        f"finishes in {r['finish_days']:.1f} days including {r['start_delay_days']:.0f} days of porting" in out.stderr
    )
    assert "Main risk: time." in out.stderr and "against a 30-day target" in out.stderr
    table = cli(*args).stdout
    assert "finish_days" in table.split("\n\n")[-1] and "porting_days" in table and "chips" in table


def test_without_chips_or_days_the_default_target_is_a_deadline_as_in_the_app(cli):
    from workbook.training.scenario import DEFAULT_TARGET_DAYS

    # without it the cheapest plan for 70B on 15T tokens was 256 spot TPU v6e finishing in 848 days
    args = ["compare", "--params", "70e9", "--tokens", "15e12", "--json"]
    default = json.loads(cli(*args).stdout)
    explicit = json.loads(cli(*args, "--days", f"{DEFAULT_TARGET_DAYS:g}").stdout)
    assert default[0] == explicit[0] and default[0]["deadline_days"] == DEFAULT_TARGET_DAYS
    assert default[0]["feasible"] and default[0]["finish_days"] <= DEFAULT_TARGET_DAYS
    fixed = json.loads(cli("train", "--params", "70e9", "--accelerator", "h100-sxm", "--chips", "64", "--json").stdout)
    assert fixed["feasible"] and fixed["deadline_days"] is None and fixed["finish_days"] > DEFAULT_TARGET_DAYS


def test_build_prices_help_prints_usage(cli):
    from workbook.catalog import pricebuild

    out = cli("data", "build-prices", "--help")
    share = f"{pricebuild.MAX_DROP_SHARE * 100:.0f}%"
    assert out.returncode == 0 and "--force" in out.stdout and share in out.stdout and not out.stderr


def test_compare_says_shortest_time_when_nothing_meets_the_deadline(cli):
    out = cli("compare", "--params", "759e9", "--days", "30")
    assert out.returncode == 1, out.stderr  # no plan: a script can tell it from one
    served = cli("serve", "--model", "llama3-70b", "--accelerator", "h100-sxm", "--tpot-ms", "4")
    assert served.returncode == 1 and "cannot serve this" in served.stdout
    assert "Nothing finishes within 30 days. The fastest plan:" in out.stdout
    assert "Relax the deadline to about" in out.stdout


def test_serve_takes_the_engines_capacity_policy(cli):
    # 70B on one 96 GB GH200: the KV cache, not the engine's batch limit, caps the sequences
    reserve = cli("serve", "--params", "70e9", "--accelerator", "gh200", "--rps", "5", "--capacity-policy", "reserve")
    assert reserve.returncode == 0 and "reserves room for each request's prompt and whole answer" in reserve.stdout
    preempt = cli("serve", "--params", "70e9", "--accelerator", "gh200", "--rps", "5")
    assert preempt.returncode == 0 and "reserves room" not in preempt.stdout


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
        # the size typed into a generic preset's name is that flag's, not --params's
        (["train", "--model", "generic-0", "--accelerator", "h100-sxm"], "--model"),
        # a preset states its own active parameters: the flag is refused, not dropped
        (
            ["train", "--model", "deepseek-v3", "--active-params", "10e9", "--accelerator", "h100-sxm"],
            "--active-params",
        ),
        (["train", "--params", "nan", "--accelerator", "h100-sxm"], "--params"),
        (["serve", "--params", "70e9", "--capacity-policy", "evict"], "--capacity-policy"),
    ],
)
def test_bad_input_exits_2_with_one_line(cli, args, flag):
    out = cli(*args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and flag in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_report_command_writes_a_self_contained_page(cli, tmp_path):
    out = tmp_path / "report.html"
    result = cli("report", "--params", "7e9", "--days", "14", "--pricing", "spot", "--out", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "Runners-up" in text and text.count("<svg") == 1 and "<script" not in text
    bad = cli("report", "--params", "7e9", "--out", str(tmp_path / "missing" / "r.html"))
    assert bad.returncode == 2 and "--out" in bad.stderr and bad.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "bad",
    [
        ["--mfu", "2"],
        ["--cloud", "mars"],
        ["--active-params", "500e9"],
        ["--params", "nan"],
        ["--json"],
    ],
)
def test_rejected_report_leaves_an_existing_file_as_it_was(cli, tmp_path, bad):
    out = tmp_path / "report.html"
    out.write_text("the report from last week")
    args = ["report", "--params", "13e9", *bad, "--out", str(out)]
    result = cli(*args)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert bad[0] in result.stderr
    assert out.read_text() == "the report from last week"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left behind


def test_report_refuses_a_folder_as_out_before_any_work(cli, tmp_path):
    result = cli("report", "--params", "7e9", "--out", str(tmp_path))
    assert result.returncode == 2 and "--out" in result.stderr and "folder" in result.stderr


@pytest.mark.parametrize(
    "args, flag, not_named",
    [
        (["train", "--params", "7e9", "--accelerator", "h100-sxm", "--mfu", "0.99"], "--mfu:", "--mfu-override"),
        (["serve", "--params", "7e9", "--accelerator", "h100-sxm", "--rps", "1e12"], "--rps:", "--requests-per-s"),
        (["train", "--params", "9e13", "--accelerator", "h100-sxm"], "--params:", "--tokens:"),
        (["train", "--params", "7e9", "--tokens", "1e16", "--accelerator", "h100-sxm"], "--tokens:", "--params:"),
        (["serve", "--accelerator", "h100-sxm"], "--params:", "----params"),
        (["compare", "--mode", "serve", "--model", "deepseek-v3", "--params", "7e9"], "--params:", "----params"),
        (["compare", "--model", "llama3-70b", "--days", "1e6"], "--days:", "--deadline-days"),
        (["compare", "--params", "1e16"], "--params:", "error: params"),
        (["compare", "--model", "llama3-70b", "--seq-len", "10000000"], "--seq-len:", "0 chips"),
        (["compare", "--model", "llama3-70b", "--global-batch-tokens", "4096", "--seq-len", "8192"], "--global", "0 c"),
        (["compare", "--model", "llama3-70b", "--precision", "fp4"], "--precision:", "--weight-precision"),
        (
            ["serve", "--model", "llama3-70b", "--accelerator", "h200", "--prompt-tokens", "200000"],
            "--prompt-tokens:",
            "Traceback",
        ),
    ],
)
def test_messages_name_the_flag_as_typed(cli, args, flag, not_named):
    result = cli(*args)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {flag}") and not_named not in result.stderr, result.stderr


@pytest.mark.parametrize("flag, text", [("--params", "nan"), ("--days", "inf"), ("--tokens", "-inf")])
def test_a_number_that_is_not_finite_is_said_to_be_so(cli, flag, text):
    result = cli(
        "compare",
        "--model" if flag != "--params" else "--cloud",
        "llama3-70b" if flag != "--params" else "gcp",
        f"{flag}={text}",
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert flag in result.stderr and "must be a finite number, got" in result.stderr


def test_sequence_length_range_is_stated_and_its_ends_accepted(cli):
    from workbook.model.spec import MAX_SEQ_LEN

    result = cli("compare", "--model", "llama3-70b", "--seq-len", str(MAX_SEQ_LEN + 1))
    assert result.returncode == 2 and f"between 128 and {MAX_SEQ_LEN:,}" in result.stderr, result.stderr
    # accepted: a plan or none (status 1), not bad input (2)
    ends = cli("train", "--model", "llama3-70b", "--accelerator", "tpu-v5p", "--seq-len", str(MAX_SEQ_LEN))
    assert ends.returncode in (0, 1), ends.stderr


def test_precision_help_says_which_apply_to_training_and_which_to_serving(cli):
    from workbook import serving
    from workbook.catalog.schemas import PRECISIONS

    text = " ".join(cli("compare", "--help").stdout.split())
    assert f"training: {', '.join(PRECISIONS)}" in text and f"serving: {', '.join(serving.WEIGHT_PRECISIONS)}" in text
    assert "--precision {bf16,fp8,int8}" in cli("report", "--help").stdout
    assert cli("compare", "--mode", "serve", "--model", "llama3-8b", "--precision", "fp4").returncode == 0


def test_mfu_help_states_the_range_the_check_accepts(cli):
    from workbook.training.scenario import MFU_OVERRIDE_RANGE

    low, high = MFU_OVERRIDE_RANGE
    assert f"({low:g}-{high:g})" in " ".join(cli("train", "--help").stdout.split())
    base = ["train", "--params", "7e9", "--accelerator", "h100-sxm", "--mfu"]
    assert cli(*base, str(low)).returncode == 0 and cli(*base, str(high)).returncode == 0
    assert cli(*base, str(high + 0.01)).returncode == 2 and cli(*base, str(low / 2)).returncode == 2


def test_prices_flag_on_train_compare_serve_and_report(cli, tmp_path):
    mine = tmp_path / "mine.csv"
    mine.write_text(
        "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\n"
        "h100-sxm,nebius,on-demand,0.80,2026-01-01,our contract\n"
    )
    common = ["--params", "70e9", "--prices", str(mine)]
    train = json.loads(cli("train", *common, "--accelerator", "h100-sxm", "--cloud", "nebius", "--json").stdout)
    assert train["usd_per_chip_hour"] == 0.8 and train["user_price"] is True
    # 512 on-demand H100 (the ceiling one buyer rents at once) need about 34 days: a deadline they meet
    compare = json.loads(cli("compare", *common, "--pricing", "on-demand", "--days", "60", "--json").stdout)
    assert compare[0]["accelerator"] == "h100-sxm" and compare[0]["user_price"] is True
    serve = cli("serve", *common, "--accelerator", "h100-sxm", "--cloud", "nebius")
    assert serve.returncode == 0 and "your price" in serve.stdout
    out = tmp_path / "brief.html"
    assert cli("report", *common, "--out", str(out)).returncode == 0 and "your price" in out.read_text()
    missing = cli("train", "--params", "70e9", "--accelerator", "h100-sxm", "--prices", str(tmp_path / "no.csv"))
    assert missing.returncode == 2 and "--prices" in missing.stderr


def test_train_json_has_the_layout(cli):
    out = cli(
        *["train", "--model", "llama3-70b", "--tokens", "1e12"],
        *["--accelerator", "h100-sxm", "--chips", "1024", "--global-batch-tokens", "8e6", "--json"],
    )
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)
    degrees = [row[k] for k in ("tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel")]
    assert degrees[0] * degrees[1] * degrees[2] * degrees[3] == row["chips"] == 1024
    assert row["global_batch_tokens"] == 8e6 and row["recompute"] in ("none", "selective", "full")


def test_int8_training_on_h100_exits_2(cli):
    out = cli("train", "--params", "7e9", "--accelerator", "h100-sxm", "--precision", "int8")
    assert out.returncode == 2 and "--precision" in out.stderr and out.stderr.count("\n") == 1


def test_serve_takes_the_model_as_train_does(cli):
    # a preset (DeepSeek-V3: its latent attention caches 576 values a token and layer, not 128 heads' keys and values)
    # or a config.json, as train and compare take them
    out = cli("serve", "--model", "deepseek-v3", "--accelerator", "b200", "--precision", "fp4", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["chips"] >= 1
    words = cli("serve", "--model", "deepseek-v3", "--accelerator", "b200", "--precision", "fp4")
    assert words.stdout.startswith("Model: DeepSeek-V3 / R1 (671.0B parameters, 37.0B active)\n"), words.stdout


def test_a_price_row_for_several_regions_reads_as_a_list_and_a_contract_is_not_pay_as_you_go(cli):
    # Trainium2's capacity-block row covers two regions (data: "us-east-2;ap-south-2"), printed as such; a
    # reserved-contract plan's cost_basis said "pay as you go".
    out = cli(
        "train", "--model", "llama3-70b", "--accelerator", "trainium2", "--chips", "1024", "--pricing", "capacity-block"
    )
    assert out.returncode == 0, out.stderr
    assert "us-east-2, ap-south-2" in out.stdout and "us-east-2;ap-south-2" not in out.stdout
    contract = cli(
        "train",
        "--model",
        "llama3-70b",
        "--accelerator",
        "h200",
        "--chips",
        "64",
        "--pricing",
        "reserved-contract",
        "--json",
    )
    basis = json.loads(contract.stdout)["cost_basis"]
    assert "pay as you go" not in basis and "reserved-contract" in basis and "term" in basis, basis


def test_every_pricing_model_without_a_term_says_what_it_bills():
    from workbook.catalog.schemas import PRICING_MODELS
    from workbook.model.cost import TERM_MONTHS

    assert set(cli_mod.HOURS_BASIS) == set(PRICING_MODELS) - set(TERM_MONTHS)


def _strict_json(text: str):
    """JSON as a strict parser reads it: Infinity and NaN are not JSON."""

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_serve_json_of_an_accelerator_that_cannot_serve_is_valid_and_has_no_latency_or_throughput(cli):
    result = cli("serve", "--params", "1e12", "--accelerator", "a10", "--rps", "1", "--json")
    assert result.returncode == 1, result.stderr  # no plan, said in valid JSON
    option = _strict_json(result.stdout)
    assert option["feasible"] is False and option["infeasible_reason"]
    for key in ("ttft_ms", "tpot_ms", "tokens_per_s_per_chip", "utilisation", "usd_per_million_tokens"):
        assert option[key] is None, (key, option[key])
    assert option["memory_per_chip_gb"] is not None  # its memory is still shown


def test_json_writes_a_number_without_a_finite_value_as_null():
    from workbook import cli as cli_mod

    assert _strict_json(cli_mod._json({"ttft_ms": math.inf, "rows": [{"x": math.nan}, 1.5]})) == {
        "ttft_ms": None,
        "rows": [{"x": None}, 1.5],
    }


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--params", "7e9", "--accelerator", "h100-sxm", "--rps", "0"],
        ["serve", "--params", "7e9", "--accelerator", "h100-sxm", "--prompt-tokens", "0"],
        ["train", "--params", "0", "--accelerator", "h100-sxm"],
        ["train", "--params", "7e9", "--accelerator", "h100-sxm", "--tokens", "0"],
        ["train", "--params", "7e9", "--accelerator", "h100-sxm", "--seq-len", "0"],
    ],
)
def test_a_value_out_of_range_is_told_the_whole_range(cli, args):
    # "--rps must be greater than 0" left out the upper bound the scenario enforces; a 0 token count or sequence
    # length was taken as "not given" and silently replaced by the default
    out = cli(*args)
    flag = args[args.index("0") - 1]
    assert out.returncode == 2 and "must be between" in out.stderr and flag in out.stderr, out.stderr
