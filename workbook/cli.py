"""Command line: ``workbook train|serve|compare|report|accelerators|data build-prices|app`` (or ``python -m workbook``;
contract in docs/design.md).

Bad input exits with status 2 and one line on stderr naming the flag (as typed) and what it accepts. Every file
the CLI writes (``report --out``, ``data build-prices --out``) is checked first and written atomically: a rejected
run leaves an existing file as it was.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import math
import sys

import polars as pl

import workbook
from workbook import catalog as catalog_mod
from workbook import files, launch, present, serving
from workbook.catalog import pricebuild
from workbook.catalog.schemas import FRAMEWORKS, PRECISIONS, PRICING_MODELS
from workbook.errors import DataError, InputError
from workbook.model.spec import PRESETS
from workbook.training import options
from workbook.training.recommend import bill_words, recommend, shortest_plan
from workbook.training.scenario import (
    COMPUTE_OPTIMAL_TOKENS_PER_PARAM,
    DEFAULT_TARGET_DAYS,
    MFU_OVERRIDE_RANGE,
    PLATFORMS,
    TODAYS_PRACTICE_TOKENS,
    Assumptions,
    Constraints,
    ModelSpec,
    Scenario,
)

TRAIN_KEYS = [
    "accelerator",
    "cloud",
    "region",
    "instance_type",
    "pricing_model",
    "feasible",
    "infeasible_reason",
    "chips",
    "rented_chips",
    "mfu",
    "start_delay_days",
    "train_days",
    "finish_days",
    "finish_days_low",
    "finish_days_high",
    "deadline_days",
    "train_days_low",
    "train_days_high",
    "chip_hours",
    "usd_per_chip_hour",
    "usd_per_chip_hour_typical",
    "user_price",
    "cost_usd",
    "cost_usd_low",
    "cost_usd_high",
    "cost_basis",
    "term_months",
    "amortised_cost_usd",
    "compute_cost_usd",
    "migration_weeks",
    "migration_cost_usd",
    "memory_per_chip_gb",
    "hbm_gb",
    "fits_in_memory",
    "min_chips_to_fit",
    "layout",
    "tensor_parallel",
    "pipeline_parallel",
    "context_parallel",
    "expert_parallel",
    "data_parallel",
    "global_batch_tokens",  # asked for (yours, or the default by model size)
    "planned_batch_tokens",  # what the layout runs: whole micro-batches per rank, a default raised to feed a pipeline
    "micro_batches",  # per data-parallel rank and step: a pipeline of more stages than this cannot interleave
    "recompute",
    "goodput",
    "energy_kwh",
    "co2e_kg",
    "run_framework",
    "framework_switch",
    "price_as_of",
]


TOKEN_PRESETS = ("compute-optimal", "todays-practice")
# Scenario fields whose flag is not simply ``--`` + the field name with dashes.
FLAG_OF_FIELD = {
    "mfu_override": "--mfu",
    "requests_per_s": "--rps",
    "weight_precision": "--precision",
    "stack_choice": "--stack",
    "deadline_days": "--days",
}


MODEL_FLAG_FIELDS = ("params", "active_params", "seq_len", "model", "config")  # ModelSpec fields given by a flag


NO_PLAN = 1  # exit status of train, compare and serve when no option meets the constraints (bad input: 2)


class UsageError(Exception):
    """Raised instead of argparse's own exit so every bad flag gets the same one-line treatment."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _finite_number(flag: str, integer: bool = False):
    """A parser of a finite number (a whole one where ``integer``): its range is the scenario's own check, whose
    error names it, so the bounds live in one place."""

    def parse(text: str):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{flag} must be a finite number, got {text!r}")
        if integer:
            if value != int(value):
                raise argparse.ArgumentTypeError(f"{flag} must be a whole number, got {text!r}")
            return int(value)
        return value

    return parse


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"--port must be a whole number from 1 to 65535, got {text!r}")
    return int(text)


def _base_url(text: str) -> str:
    if not (text.startswith("/") and text.endswith("/")):
        raise argparse.ArgumentTypeError(
            f"--base-url must start and end with '/', e.g. /services/workbook/, got {text!r}"
        )
    return text


def _model_flags(p: argparse.ArgumentParser) -> None:
    """The model: its parameter count, a preset or a Hugging Face config.json (exactly one: :func:`_model`)."""
    p.add_argument(
        "--params", type=_finite_number("--params"), help="total parameters, e.g. 70e9 (or --model/--config)"
    )
    p.add_argument("--model", help="model preset: " + ", ".join(PRESETS) + ", generic-<params>")
    p.add_argument("--config", help="path of a Hugging Face config.json giving the model's shape")


def _scenario_flags(
    p: argparse.ArgumentParser, single: bool, json_output: bool = True, serving_too: bool = False
) -> None:
    """The training scenario's flags (``serving_too``: the command also serves, ``compare --mode serve``)."""
    _model_flags(p)
    p.add_argument(
        "--global-batch-tokens",
        type=_finite_number("--global-batch-tokens"),
        help="tokens per optimizer step (default grows with model size: 4M up to 70B, 16M at 405B)",
    )
    tokens = p.add_mutually_exclusive_group()
    tokens.add_argument(
        "--tokens", type=_finite_number("--tokens"), help="training tokens (default: compute-optimal, 20 per parameter)"
    )
    tokens.add_argument(
        "--tokens-preset",
        choices=TOKEN_PRESETS,
        default="compute-optimal",
        help="compute-optimal: 20 tokens per parameter (Chinchilla); todays-practice: 15T tokens "
        "(Llama 3 8B/70B and 3.1 405B were trained on ~15T)",
    )
    p.add_argument("--active-params", type=_finite_number("--active-params"), help="active parameters per token (MoE)")
    p.add_argument(
        "--seq-len",
        type=_finite_number("--seq-len", integer=True),
        help="sequence length (default: the model's own with --model or --config, 4096 with --params)",
    )
    if single:
        p.add_argument("--accelerator", required=True, help="accelerator id (see `accelerators`)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--chips", type=_finite_number("--chips", integer=True), help="chips to use")
    group.add_argument(
        "--days",
        type=_finite_number("--days"),
        help=f"days by which the run must be done, porting included (default {DEFAULT_TARGET_DAYS:g} "
        "unless --chips is given)",
    )
    p.add_argument("--framework", choices=FRAMEWORKS, default="pytorch")
    p.add_argument(
        "--current-platform",
        choices=list(PLATFORMS),
        default="nvidia",
        help="where the team's code runs today; sets porting effort and the delay before training starts",
    )
    training = f"training: {', '.join(PRECISIONS)} (default bf16; int8 on TPUs only)"
    serving_words = (
        f"; serving: {', '.join(serving.WEIGHT_PRECISIONS)} (default {serving.DEFAULT_SERVE_PRECISION}, as "
        "published serving runs)"
    )
    p.add_argument(
        "--precision",
        choices=serving.WEIGHT_PRECISIONS if serving_too else PRECISIONS,
        help=training + (serving_words if serving_too else ""),
    )
    p.add_argument(
        "--pricing",
        choices=PRICING_MODELS,
        help="one pricing model (default: every one for training, the cheapest that can run wins; on-demand for "
        "serving: spot preemptions break a latency target)",
    )
    p.add_argument("--cloud", help="only this cloud (e.g. gcp, aws)")
    low, high = MFU_OVERRIDE_RANGE
    p.add_argument("--mfu", type=_finite_number("--mfu"), help=f"override the calibrated MFU ({low:g}-{high:g})")
    if json_output:
        p.add_argument("--json", action="store_true", help="print JSON")
    _prices_flag(p)


def _prices_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prices",
        metavar="MINE.CSV",
        help="your negotiated prices: each row replaces the list prices of its accelerator, cloud and pricing model",
    )


def _serve_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kv-precision",
        choices=serving.KV_PRECISIONS,
        help="KV-cache precision (default: as --precision; fp8 for fp4, bf16 for int4)",
    )
    p.add_argument("--prompt-tokens", type=_finite_number("--prompt-tokens", integer=True), default=1000)
    p.add_argument("--output-tokens", type=_finite_number("--output-tokens", integer=True), default=300)
    p.add_argument(
        "--prompt-tokens-p99",
        type=_finite_number("--prompt-tokens-p99", integer=True),
        help="99th-percentile prompt length (default: every prompt is --prompt-tokens long)",
    )
    p.add_argument(
        "--output-tokens-p99",
        type=_finite_number("--output-tokens-p99", integer=True),
        help="99th-percentile answer length (default: every answer is --output-tokens long); long answers stay "
        "in flight longer, so they hold more of the KV cache",
    )
    traffic = p.add_mutually_exclusive_group()
    traffic.add_argument("--rps", type=_finite_number("--rps"), help="requests per second (default 1)")
    traffic.add_argument("--tokens-per-day", type=_finite_number("--tokens-per-day"), help="output tokens per day")
    p.add_argument(
        "--ttft-ms",
        type=_finite_number("--ttft-ms"),
        default=2000.0,
        help="time-to-first-token target, 99th percentile (ms)",
    )
    p.add_argument(
        "--tpot-ms",
        type=_finite_number("--tpot-ms"),
        default=50.0,
        help="time-per-output-token target, 99th percentile (ms)",
    )
    p.add_argument(
        "--headroom",
        type=_finite_number("--headroom"),
        default=serving.DEFAULT_HEADROOM,
        help="run replicas at most this fraction of their capacity (0.3-0.95, default 0.75)",
    )
    p.add_argument(
        "--stack",
        choices=serving.STACK_CHOICES,
        default="best",
        help="software: each vendor's best published stack (default) or a generic open-source one",
    )
    p.add_argument(
        "--disaggregation",
        action="store_true",
        help="also consider separate prefill and decode replicas, chosen where they need fewer chips",
    )
    p.add_argument(
        "--router",
        choices=serving.ROUTERS,
        default="least-loaded",
        help="how requests reach replicas: to the least busy (default; prompts share one queue) or round-robin "
        "(each replica queues its own)",
    )
    p.add_argument(
        "--capacity-policy",
        choices=serving.CAPACITY_POLICIES,
        default="preempt",
        help="a full KV cache: pause the newest sequences and prefill their prompts again (default; TensorRT-LLM "
        "max_utilization, vLLM, SGLang) or reserve each request's whole answer up front (TensorRT-LLM "
        "guaranteed_no_evict)",
    )


@functools.cache  # built once per process: parsing leaves it unchanged (no list defaults, no append actions)
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="workbook", description="Which accelerator to train on, how many, how long, what cost.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {workbook.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _scenario_flags(sub.add_parser("train", help="one accelerator: chips, days, cost, memory"), single=True)
    serve = sub.add_parser("serve", help="one accelerator: replicas, chips, latency, USD per million tokens")
    _model_flags(serve)
    serve.add_argument("--active-params", type=_finite_number("--active-params"))
    serve.add_argument("--accelerator", required=True)
    serve.add_argument(
        "--precision", choices=serving.WEIGHT_PRECISIONS, help=f"default {serving.DEFAULT_SERVE_PRECISION} (as the app)"
    )
    serve.add_argument("--pricing", choices=PRICING_MODELS, default="on-demand")
    serve.add_argument("--cloud")
    serve.add_argument("--json", action="store_true")
    _prices_flag(serve)
    _serve_flags(serve)
    compare = sub.add_parser("compare", help="every (accelerator, cloud, pricing) option, cheapest first")
    _scenario_flags(compare, single=False, serving_too=True)
    _serve_flags(compare)
    compare.add_argument("--mode", choices=["train", "serve"], default="train")
    rep = sub.add_parser("report", help="one-page self-contained HTML report of a training scenario")
    _scenario_flags(rep, single=False, json_output=False)
    rep.add_argument("--out", required=True, help="path of the HTML file to write")
    static = sub.add_parser("static", help="write a self-contained interactive page (no server) over a scenario grid")
    static.add_argument("--out", required=True, help="folder to write index.html into")
    static.add_argument("--app-url", help="address of the full app, for the page's links (default: make app's)")
    acc = sub.add_parser("accelerators", help="list accelerator ids and specs")
    acc.add_argument("--json", action="store_true")
    data = sub.add_parser("data", help="rebuild data tables")
    data_sub = data.add_subparsers(dest="data_command", required=True, parser_class=_Parser)
    build = data_sub.add_parser("build-prices", help="rebuild data/prices.csv from source rows or a SkyPilot catalog")
    build.add_argument("source_dir", nargs="+", help="one or more source folders (rows of all are merged)")
    build.add_argument("--out", default=str(catalog_mod.DATA_DIR / "prices.csv"))
    build.add_argument(
        "--as-of", type=dt.date.fromisoformat, help="as-of date for SkyPilot vms.csv rows (default today)"
    )
    build.add_argument(
        "--force",
        action="store_true",
        help=f"replace the file even if more than {pricebuild.MAX_DROP_SHARE * 100:.0f}%% of its rows would be dropped",
    )
    app = sub.add_parser("app", help="serve the Voila app with the shipped settings (needs the [app] extra)")
    app.add_argument("--port", type=_port, default=8866)
    app.add_argument("--ip", default="127.0.0.1", help="address to listen on (default: this machine only)")
    app.add_argument("--base-url", type=_base_url, default="/", help="URL prefix, e.g. /services/workbook/")
    return parser


def _scenario(args, cat: catalog_mod.Catalog) -> Scenario:
    _check_ids(args, cat)
    if args.precision is not None and args.precision not in PRECISIONS:  # compare offers the serving ones too
        raise InputError(
            "--precision",
            f"training takes {', '.join(PRECISIONS)}; {args.precision} is for serving only (--mode serve)",
        )
    model = _model(args)
    try:
        preset = TODAYS_PRACTICE_TOKENS if args.tokens_preset == "todays-practice" else None
        # without --chips or --days the default target is a deadline too, as the app's target-days slider is
        days = args.days if args.days is not None or args.chips is not None else DEFAULT_TARGET_DAYS
        return Scenario(
            model=model,
            tokens=args.tokens
            if args.tokens is not None
            else preset or COMPUTE_OPTIMAL_TOKENS_PER_PARAM * model.params,
            framework=args.framework,
            current_platform=args.current_platform,
            precision=args.precision or "bf16",
            chips=args.chips,
            days=days,
            pricing=(args.pricing,) if args.pricing else PRICING_MODELS,
            accelerators=(args.accelerator,) if getattr(args, "accelerator", None) else (),
            # --days is when the run must be done: porting counts against it, options past it are ruled out
            constraints=Constraints(deadline_days=days, clouds=(args.cloud,) if args.cloud else ()),
            assumptions=Assumptions(mfu_override=args.mfu, global_batch_tokens=args.global_batch_tokens),
        )
    except InputError as err:
        if err.field == "tokens" and args.tokens is None:
            raise InputError(
                "--params",
                f"the default {COMPUTE_OPTIMAL_TOKENS_PER_PARAM} training tokens per parameter give "
                f"{COMPUTE_OPTIMAL_TOKENS_PER_PARAM * model.params:g} tokens, but tokens {err.message}; "
                "give --tokens",
            ) from None
        raise _flag_error(err) from None


def _flag_error(err: InputError) -> InputError:
    """The same error, naming the flag the user typed instead of the scenario field."""
    return InputError(FLAG_OF_FIELD.get(err.field, f"--{err.field.replace('_', '-')}"), err.message)


def _model(args) -> ModelSpec:
    """The model from --model, --config or --params (one of them), with --seq-len applied; its errors name the
    flag (a shape field read from a config.json or derived from a size: the flag that gave it)."""
    given = [flag for flag in ("params", "model", "config") if getattr(args, flag, None) is not None]
    if len(given) != 1:
        raise InputError("--params", "give exactly one of --params, --model, --config")
    if getattr(args, "active_params", None) is not None and given != ["params"]:
        raise InputError(
            "--active-params", f"goes with --params only: --{given[0]} states the model's own active parameters"
        )
    seq_len = getattr(args, "seq_len", None)
    try:
        if given == ["model"]:
            return ModelSpec.preset(args.model, seq_len)
        if given == ["config"]:
            return ModelSpec.from_hf_config(args.config, seq_len)
        return ModelSpec.from_params(args.params, args.active_params, seq_len=4096 if seq_len is None else seq_len)
    except InputError as err:
        if err.field in MODEL_FLAG_FIELDS:
            raise _flag_error(err) from None
        raise InputError(f"--{given[0]}", f"{err.field} {err.message}") from None


def _check_ids(args, cat: catalog_mod.Catalog) -> None:
    if getattr(args, "accelerator", None) and args.accelerator not in cat.accelerator_ids:
        close = [a for a in cat.accelerator_ids if args.accelerator.lower().replace("_", "-") in a]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InputError(
            "--accelerator", f"unknown id {args.accelerator!r}{hint}; accepted: {', '.join(cat.accelerator_ids)}"
        )
    clouds = sorted(cat.prices["cloud"].unique())
    if args.cloud and args.cloud not in clouds:
        raise InputError("--cloud", f"unknown cloud {args.cloud!r}; accepted: {', '.join(clouds)}")
    if args.active_params and args.params and args.active_params > args.params:
        raise InputError("--active-params", f"must not exceed --params ({args.params:g})")


def _serve_scenario(args, cat: catalog_mod.Catalog) -> serving.ServeScenario:
    _check_ids(args, cat)
    precision = args.precision or serving.DEFAULT_SERVE_PRECISION
    kv = args.kv_precision or serving.default_kv_precision(precision)
    model = _model(args)
    try:
        return serving.ServeScenario(
            model=model,
            weight_precision=precision,
            kv_precision=kv,
            prompt_tokens=args.prompt_tokens,
            output_tokens=args.output_tokens,
            prompt_tokens_p99=args.prompt_tokens_p99,
            output_tokens_p99=args.output_tokens_p99,
            requests_per_s=args.rps,
            tokens_per_day=args.tokens_per_day,
            ttft_ms=args.ttft_ms,
            tpot_ms=args.tpot_ms,
            pricing=(args.pricing,) if args.pricing else serving.DEFAULT_SERVE_PRICING,
            accelerators=(args.accelerator,) if getattr(args, "accelerator", None) else (),
            clouds=(args.cloud,) if args.cloud else (),
            headroom=args.headroom,
            stack_choice=args.stack,
            disaggregation=args.disaggregation,
            router=args.router,
            capacity_policy=args.capacity_policy,
        )
    except InputError as err:
        raise _flag_error(err) from None


SERVE_KEYS = [
    "accelerator",
    "cloud",
    "pricing_model",
    "feasible",
    "infeasible_reason",
    "stack",
    "stack_note",
    "stack_comparison",
    "stack_excluded",
    "engine",
    "max_tokens_per_step",
    "max_seqs",
    "chunked_prefill",
    "schedule_ahead",
    "chips_per_replica",
    "layout",
    "pipeline_parallel",
    "over_pcie",
    "disaggregated",
    "prefill_replicas",
    "prefill_chips_per_replica",
    "prefill_utilisation",
    "kv_transfer_ms",
    "replicas",
    "chips",
    "chips_needed",
    "rented_chips",
    "instance_type",
    "region",
    "usd_per_chip_hour",
    "sequences",
    "utilisation",
    "headroom",
    "tokens_per_s_per_chip",
    "ttft_ms",
    "tpot_ms",
    "usd_per_million_tokens",
    "usd_per_million_tokens_low",
    "usd_per_million_tokens_high",
    "usd_per_million_tokens_at_ceiling",
    "model_error_low",
    "model_error_high",
    "model_error_results",
    "model_error_scope",
    "usd_per_hour",
    "usd_per_month",
    "memory_per_chip_gb",
    "fits_in_memory",
    "kwh_per_million_tokens",
    "limit",
    "limit_cause",
    "relaxed_ttft_ms",  # the loosest targets relaxed_chips need, where the user's hold the replicas below the headroom
    "relaxed_tpot_ms",
    "relaxed_chips",
]


def _finite(value):
    """``value`` with every infinite or NaN number in it as None (JSON has no Infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _json(value) -> str:
    """Valid JSON: a number with no finite value is null."""
    return json.dumps(_finite(value), indent=1, allow_nan=False)


def _serve_output(frame: pl.DataFrame, scenario: serving.ServeScenario, single: bool, as_json: bool) -> str:
    """The recommendation (``recommend_serving``) then the options; JSON: the options (one for ``serve``) and,
    for ``compare``, the recommendation."""
    records = [
        {k: row[k] for k in SERVE_KEYS} for row in frame.rename({"accelerator_id": "accelerator"}).iter_rows(named=True)
    ]
    rec = serving.recommend_serving(frame, scenario)
    if as_json:
        if single:
            return _json(records[0])
        summary = {"headline": rec.headline, "reasons": rec.reasons, "warnings": rec.warnings}
        return _json({"recommendation": summary, "options": records})
    view = frame.select(
        "accelerator_id",
        "stack",
        "cloud",
        "pricing_model",
        "replicas",
        pl.col("chips_per_replica").alias("per_replica"),
        "layout",
        "chips",
        (pl.col("utilisation") * 100).round(0).alias("load_pct"),
        pl.col("ttft_ms").round(0).alias("ttft_p99_ms"),
        pl.col("tpot_ms").round(1).alias("tpot_p99_ms"),
        pl.col("usd_per_million_tokens").round(3),
        pl.col("infeasible_reason").fill_null("ok"),
    )
    model = f"Model: {present.model_words(scenario.model)}"
    lines = [model, rec.headline, *(f"! {w}" for w in rec.warnings), *(f"- {r}" for r in rec.reasons), ""]
    if single and rec.best is None:
        row = frame.row(0, named=True)
        unpriced = row["usd_per_chip_hour"] is None and row["chips"] is not None  # served, but at no price given
        verdict = f"could serve this on {row['chips']:,} chips, but has" if unpriced else "cannot serve this:"
        lines = [model, f"{row['name']} {verdict} {row['infeasible_reason']}", ""]
    with pl.Config(tbl_rows=-1, tbl_width_chars=220, fmt_str_lengths=70, tbl_hide_dataframe_shape=True):
        return "\n".join(lines) + str(view.head(1) if single else view)


def _records(frame: pl.DataFrame) -> list[dict]:
    out = frame.rename({"accelerator_id": "accelerator"}).with_columns(pl.col("price_as_of").cast(pl.String))
    return [
        {k: row[k] for k in TRAIN_KEYS}
        for row in (r | {"cost_basis": _cost_basis(r)} for r in out.iter_rows(named=True))
    ]


# What cost_usd bills for a pricing model with no term: the run's own chip-hours, bought as the model sells them.
HOURS_BASIS = {
    "on-demand": "the run's hours, pay as you go",
    "spot": "the run's hours, pay as you go (spot)",
    "capacity-block": "the capacity block that covers the run, booked ahead (whole days to 14, whole weeks beyond)",
    # data/prices.csv: a 'from' price for a reservation whose term the rate card does not state
    "reserved-contract": "the run's hours at a reserved-contract rate (the contract's minimum term is not stated: "
    "confirm it)",
}


def _cost_basis(row: dict) -> str:
    """What ``cost_usd`` bills: a commitment's whole term (or terms), ranked on; else the run's hours, as its pricing
    model sells them (:data:`HOURS_BASIS`)."""
    if row["term_months"] is None:
        return HOURS_BASIS[row["pricing_model"]]
    return f"{bill_words(row)} (ranked on this)"


def _table(frame: pl.DataFrame) -> str:
    view = frame.select(
        "accelerator_id",
        "cloud",
        present.regions_column(pl.col("region")),
        pl.when(pl.col("user_price"))
        .then(pl.col("pricing_model") + " (your price)")
        .otherwise(pl.col("pricing_model"))
        .alias("pricing_model"),
        "chips",
        pl.col("start_delay_days").round(1).alias("porting_days"),
        pl.col("train_days").round(1),
        pl.col("finish_days").round(1),
        (pl.col("cost_usd") / 1e6).round(2).alias("cost_musd"),
        pl.col("memory_per_chip_gb").round(1).alias("gb_per_chip"),
        pl.col("infeasible_reason").fill_null("ok"),
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=70, tbl_hide_dataframe_shape=True):
        return str(view)


def _rebuild_summary(result: pricebuild.Rebuild, out: str) -> str:
    in_use = result.frame.filter(~pl.col("excluded")).height
    parts = [f"wrote {result.frame.height} price rows ({in_use} in use) to {out}"]
    if result.backup is not None:
        parts.append(f"previous file ({result.previous_rows} rows) kept as {result.backup}")
    if result.dropped_rows:
        parts.append(f"{result.dropped_rows} previous rows have no row with the same key now")
    if result.skipped:
        parts.append(f"not price files, skipped: {', '.join(result.skipped)}")
    return "; ".join(parts)


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "app":
        return launch.serve(args.port, args.ip, args.base_url)
    if args.command == "data":
        print(_rebuild_summary(pricebuild.rebuild(args.source_dir, args.out, args.as_of, args.force), args.out))
        return 0
    try:
        cat = catalog_mod.load(price_overrides=getattr(args, "prices", None))
    except DataError as err:
        if getattr(args, "prices", None) is None:
            raise
        raise InputError("--prices", str(err)) from None
    if args.command == "accelerators":
        frame = cat.accelerators.with_columns(pl.col("as_of").cast(pl.String))
        print(_json(frame.to_dicts()) if args.json else "\n".join(cat.accelerator_ids))
        return 0
    if args.command == "static":
        from workbook import static  # builds the whole grid: only this command needs it

        try:
            path = static.write(args.out, catalog=cat, **({"app_url": args.app_url} if args.app_url else {}))
        except OSError as err:
            raise InputError("--out", f"cannot write into {args.out!r} ({err.strerror})") from None
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
        return 0
    if args.command == "report":
        from workbook import report  # draws charts (altair, seconds to import): only this command needs it

        files.check_target(args.out, "--out")  # before the minutes of work, and before touching any file
        files.atomic_write(args.out, report.render(_scenario(args, cat), cat), "--out")
        print(f"wrote {args.out}")
        return 0
    if args.command == "serve" or getattr(args, "mode", "train") == "serve":
        scenario = _serve_scenario(args, cat)
        frame = serving.evaluate_serving(scenario, cat)
        print(_serve_output(frame, scenario, args.command == "serve", args.json))
        return 0 if frame["feasible"].any() else NO_PLAN
    scenario = _scenario(args, cat)
    frame = options.evaluate(scenario, cat)
    rows = frame.head(1) if args.command == "train" else frame
    if args.command == "train" and rows["infeasible_code"][0] == "no_training_stack":
        raise InputError("--precision", rows["infeasible_reason"][0])
    summary = _summary(scenario, frame, cat)
    if args.json:
        records = _records(rows)
        print(_json(records[0] if args.command == "train" else records))
        print(summary, file=sys.stderr)
    else:
        print(summary + "\n")
        print(_table(rows))
    return 0 if frame["feasible"].any() else NO_PLAN


def _summary(scenario: Scenario, frame: pl.DataFrame, cat: catalog_mod.Catalog) -> str:
    """The recommendation in plain words; when nothing meets the deadline, the shortest plan and what to relax."""
    rec = recommend(frame, scenario.framework, scenario.current_platform)
    lines = [f"Model: {present.model_words(scenario.model)}", rec.headline, *(f"- {r}" for r in rec.reasons)]
    if rec.best is None and scenario.constraints.deadline_days is not None:
        lines += [f"- {r}" for r in shortest_plan(scenario, cat, frame)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return run(argv)
    except argparse.ArgumentTypeError as err:
        print(f"error: {err}", file=sys.stderr)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
    except (InputError, DataError) as err:
        print(f"error: {err}", file=sys.stderr)
    return 2
