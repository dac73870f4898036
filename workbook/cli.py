"""Command line: ``workbook train|serve|compare|report|accelerators|data build-prices|app`` (or ``python -m workbook``;
contract in DESIGN.md).

Bad input exits with status 2 and one line on stderr naming the flag and what it accepts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys

import polars as pl

import workbook
from workbook import catalog as catalog_mod
from workbook import launch, report, serving
from workbook.catalog import pricebuild
from workbook.catalog.schemas import FRAMEWORKS, PRECISIONS, PRICING_MODELS
from workbook.errors import DataError, InputError
from workbook.training import options
from workbook.training.scenario import COMPUTE_OPTIMAL_TOKENS_PER_PARAM, Assumptions, Constraints, ModelSpec, Scenario

TRAIN_KEYS = [
    "accelerator",
    "cloud",
    "pricing_model",
    "feasible",
    "infeasible_reason",
    "chips",
    "mfu",
    "train_days",
    "train_days_low",
    "train_days_high",
    "chip_hours",
    "usd_per_chip_hour",
    "cost_usd",
    "cost_usd_low",
    "cost_usd_high",
    "compute_cost_usd",
    "migration_weeks",
    "migration_cost_usd",
    "memory_per_chip_gb",
    "hbm_gb",
    "fits_in_memory",
    "min_chips_to_fit",
    "energy_kwh",
    "co2e_kg",
    "run_framework",
    "framework_switch",
    "price_as_of",
]


class UsageError(Exception):
    """Raised instead of argparse's own exit so every bad flag gets the same one-line treatment."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _positive(flag: str, integer: bool = False):
    def parse(text: str):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a number, got {text!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{flag} must be greater than 0, got {text!r}")
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


def _scenario_flags(p: argparse.ArgumentParser, single: bool) -> None:
    p.add_argument("--params", type=_positive("--params"), required=True, help="total parameters, e.g. 70e9")
    p.add_argument("--tokens", type=_positive("--tokens"), help="training tokens (default: 20 per parameter)")
    p.add_argument("--active-params", type=_positive("--active-params"), help="active parameters per token (MoE)")
    p.add_argument("--seq-len", type=_positive("--seq-len", integer=True), default=4096)
    if single:
        p.add_argument("--accelerator", required=True, help="accelerator id (see `accelerators`)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--chips", type=_positive("--chips", integer=True), help="chips to use")
    group.add_argument("--days", type=_positive("--days"), help="target days (default 30)")
    p.add_argument("--framework", choices=FRAMEWORKS, default="pytorch")
    p.add_argument("--precision", choices=serving.WEIGHT_PRECISIONS if not single else PRECISIONS, default="bf16")
    p.add_argument("--pricing", choices=PRICING_MODELS, default="on-demand" if single else None)
    p.add_argument("--cloud", help="only this cloud (e.g. gcp, aws)")
    p.add_argument("--mfu", type=_positive("--mfu"), help="override the calibrated MFU (0-1)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _serve_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kv-precision",
        choices=serving.WEIGHT_PRECISIONS[:3],
        help="KV-cache precision (default: as --precision, bf16 for int4)",
    )
    p.add_argument("--prompt-tokens", type=_positive("--prompt-tokens", integer=True), default=1000)
    p.add_argument("--output-tokens", type=_positive("--output-tokens", integer=True), default=300)
    traffic = p.add_mutually_exclusive_group()
    traffic.add_argument("--rps", type=_positive("--rps"), help="requests per second (default 1)")
    traffic.add_argument("--tokens-per-day", type=_positive("--tokens-per-day"), help="output tokens per day")
    p.add_argument("--ttft-ms", type=_positive("--ttft-ms"), default=2000.0, help="time-to-first-token target")
    p.add_argument("--tpot-ms", type=_positive("--tpot-ms"), default=50.0, help="time-per-output-token target")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="workbook", description="Which accelerator to train on, how many, how long, what cost.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {workbook.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _scenario_flags(sub.add_parser("train", help="one accelerator: chips, days, cost, memory"), single=True)
    serve = sub.add_parser("serve", help="one accelerator: replicas, chips, latency, USD per million tokens")
    serve.add_argument("--params", type=_positive("--params"), required=True)
    serve.add_argument("--active-params", type=_positive("--active-params"))
    serve.add_argument("--accelerator", required=True)
    serve.add_argument("--precision", choices=serving.WEIGHT_PRECISIONS, default="bf16")
    serve.add_argument("--pricing", choices=PRICING_MODELS, default="on-demand")
    serve.add_argument("--cloud")
    serve.add_argument("--json", action="store_true")
    _serve_flags(serve)
    compare = sub.add_parser("compare", help="every (accelerator, cloud, pricing) option, cheapest first")
    _scenario_flags(compare, single=False)
    _serve_flags(compare)
    compare.add_argument("--mode", choices=["train", "serve"], default="train")
    rep = sub.add_parser("report", help="one-page self-contained HTML report of a training scenario")
    _scenario_flags(rep, single=False)
    rep.add_argument("--out", required=True, help="path of the HTML file to write")
    acc = sub.add_parser("accelerators", help="list accelerator ids and specs")
    acc.add_argument("--json", action="store_true")
    data = sub.add_parser("data", help="rebuild data tables")
    data_sub = data.add_subparsers(dest="data_command", required=True, parser_class=_Parser)
    build = data_sub.add_parser("build-prices", help="rebuild data/prices.csv from source rows or a SkyPilot catalog")
    build.add_argument("source_dir")
    build.add_argument("--out", default=str(catalog_mod.DATA_DIR / "prices.csv"))
    build.add_argument(
        "--as-of", type=dt.date.fromisoformat, help="as-of date for SkyPilot vms.csv rows (default today)"
    )
    app = sub.add_parser("app", help="serve the Voila app with the shipped settings (needs the [app] extra)")
    app.add_argument("--port", type=_port, default=8866)
    app.add_argument("--ip", default="127.0.0.1", help="address to listen on (default: this machine only)")
    app.add_argument("--base-url", type=_base_url, default="/", help="URL prefix, e.g. /services/workbook/")
    return parser


def _scenario(args, cat: catalog_mod.Catalog) -> Scenario:
    _check_ids(args, cat)
    if args.mfu is not None and not 0 < args.mfu < 1:
        raise InputError("--mfu", f"must be between 0 and 1, got {args.mfu:g}")
    try:
        model = ModelSpec.from_params(args.params, args.active_params, seq_len=args.seq_len)
        return Scenario(
            model=model,
            tokens=args.tokens or COMPUTE_OPTIMAL_TOKENS_PER_PARAM * args.params,
            framework=args.framework,
            precision=args.precision,
            chips=args.chips,
            days=args.days,
            pricing=(args.pricing,) if args.pricing else PRICING_MODELS,
            accelerators=(args.accelerator,) if getattr(args, "accelerator", None) else (),
            constraints=Constraints(clouds=(args.cloud,) if args.cloud else ()),
            assumptions=Assumptions(mfu_override=args.mfu),
        )
    except InputError as err:
        raise InputError(f"--{err.field.replace('_', '-')}", err.message) from None


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
    if args.active_params and args.active_params > args.params:
        raise InputError("--active-params", f"must not exceed --params ({args.params:g})")


def _serve_scenario(args, cat: catalog_mod.Catalog) -> serving.ServeScenario:
    _check_ids(args, cat)
    kv = args.kv_precision or ("bf16" if args.precision == "int4" else args.precision)
    try:
        return serving.ServeScenario(
            model=ModelSpec.from_params(args.params, args.active_params),
            weight_precision=args.precision,
            kv_precision=kv,
            prompt_tokens=args.prompt_tokens,
            output_tokens=args.output_tokens,
            requests_per_s=args.rps,
            tokens_per_day=args.tokens_per_day,
            ttft_ms=args.ttft_ms,
            tpot_ms=args.tpot_ms,
            pricing=(args.pricing,) if args.pricing else PRICING_MODELS,
            accelerators=(args.accelerator,) if getattr(args, "accelerator", None) else (),
            clouds=(args.cloud,) if args.cloud else (),
        )
    except InputError as err:
        raise InputError(f"--{err.field.replace('_', '-')}", err.message) from None


SERVE_KEYS = [
    "accelerator",
    "cloud",
    "pricing_model",
    "feasible",
    "infeasible_reason",
    "chips_per_replica",
    "replicas",
    "chips",
    "batch",
    "tokens_per_s_per_chip",
    "ttft_ms",
    "tpot_ms",
    "usd_per_million_tokens",
    "usd_per_million_tokens_low",
    "usd_per_million_tokens_high",
    "usd_per_million_tokens_at_full_load",
    "usd_per_hour",
    "memory_per_chip_gb",
    "fits_in_memory",
    "kwh_per_million_tokens",
    "decode_bound",
]


def _serve_output(frame: pl.DataFrame, single: bool, as_json: bool) -> str:
    records = [
        {k: row[k] for k in SERVE_KEYS} for row in frame.rename({"accelerator_id": "accelerator"}).iter_rows(named=True)
    ]
    if as_json:
        return json.dumps(records[0] if single else records, indent=1)
    view = frame.select(
        "accelerator_id",
        "cloud",
        "pricing_model",
        "chips",
        pl.col("ttft_ms").round(0),
        pl.col("tpot_ms").round(1),
        pl.col("usd_per_million_tokens").round(3),
        pl.col("infeasible_reason").fill_null("ok"),
    )
    with pl.Config(tbl_rows=-1, tbl_width_chars=200, fmt_str_lengths=70, tbl_hide_dataframe_shape=True):
        return str(view.head(1) if single else view)


def _records(frame: pl.DataFrame) -> list[dict]:
    out = frame.rename({"accelerator_id": "accelerator"}).with_columns(pl.col("price_as_of").cast(pl.String))
    return [{k: row[k] for k in TRAIN_KEYS} for row in out.iter_rows(named=True)]


def _table(frame: pl.DataFrame) -> str:
    view = frame.select(
        "accelerator_id",
        "cloud",
        "pricing_model",
        "chips",
        pl.col("train_days").round(1),
        (pl.col("cost_usd") / 1e6).round(2).alias("cost_musd"),
        pl.col("memory_per_chip_gb").round(1),
        pl.col("infeasible_reason").fill_null("ok"),
    )
    with pl.Config(tbl_rows=-1, tbl_width_chars=200, fmt_str_lengths=70, tbl_hide_dataframe_shape=True):
        return str(view)


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "app":
        return launch.serve(args.port, args.ip, args.base_url)
    if args.command == "data":
        frame = pricebuild.build(args.source_dir, args.as_of)
        pricebuild.write(frame, args.out)
        print(f"wrote {frame.height} price rows ({frame.filter(~pl.col('excluded')).height} in use) to {args.out}")
        return 0
    cat = catalog_mod.load()
    if args.command == "accelerators":
        frame = cat.accelerators.with_columns(pl.col("as_of").cast(pl.String))
        print(json.dumps(frame.to_dicts(), indent=1) if args.json else "\n".join(cat.accelerator_ids))
        return 0
    if args.command == "report":
        try:
            with open(args.out, "w", encoding="utf-8") as out:
                out.write(report.render(_scenario(args, cat), cat))
        except OSError as err:
            raise InputError("--out", f"cannot write {args.out!r} ({err.strerror})") from None
        print(f"wrote {args.out}")
        return 0
    if args.command == "serve" or getattr(args, "mode", "train") == "serve":
        frame = serving.evaluate_serving(_serve_scenario(args, cat), cat)
        print(_serve_output(frame, args.command == "serve", args.json))
        return 0
    frame = options.evaluate(_scenario(args, cat), cat)
    if args.command == "train":
        best = frame.head(1)
        print(json.dumps(_records(best)[0], indent=1) if args.json else _table(best))
    else:
        print(json.dumps(_records(frame), indent=1) if args.json else _table(frame))
    return 0


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
