"""The seed articles' popular claims, checked against the dataset and the calibrated model.

Each check recomputes its numbers from ``data/`` and ``workbook``; nothing here is typed in by hand
except the claim itself and where it was made (docs/data-sources.md, "The seed articles"). Verdicts: "holds",
"holds only if ...", "contradicted".
"""

from __future__ import annotations

import dataclasses

import polars as pl

from workbook.catalog import Catalog
from workbook.model import flops
from workbook.training import calibration as calibration_mod
from workbook.training import options
from workbook.training.scenario import ModelSpec, Scenario

SEED_A = "seeds/000 'Compute Infrastructure for Generative AI' (2026-05-01)"
SEED_B = "seeds/001 'GPUs, TPUs and distributed training'"
# The scenario used for whole-run cost comparisons: a 70B dense model, 20 tokens per parameter, 30 days.
REFERENCE = dict(params=70e9, tokens=1.4e12, days=30.0)


@dataclasses.dataclass(frozen=True)
class Check:
    claim: str
    said_in: str
    finding: str
    verdict: str


def _mfu(cal: calibration_mod.Calibration, accelerator: str, precision: str = "bf16") -> dict:
    return cal.mfu.filter((pl.col("accelerator_id") == accelerator) & (pl.col("precision") == precision)).row(
        0, named=True
    )


def _peak(cat: Catalog, accelerator: str, column: str = "bf16_flops_per_s") -> float:
    return cat.accelerators.filter(pl.col("accelerator_id") == accelerator)[column].item()


def _prices(cat: Catalog, accelerator: str) -> pl.DataFrame:
    return cat.usable_prices().filter(pl.col("accelerator_id") == accelerator)


def tokens_per_second(cat: Catalog, cal: calibration_mod.Calibration, claimed: dict[str, float]) -> Check:
    """Tokens/s per chip is peak x MFU / FLOPs per token: it depends on model size, so find the size that fits."""
    parts, sizes = [], []
    for accelerator, tokens_s in claimed.items():
        mfu = _mfu(cal, accelerator)
        spec = ModelSpec.from_params(1e10, seq_len=4096)
        per_token_overhead = flops.flops_per_token(spec.active_params, spec.n_layers, spec.attention_dim, 4096) / (
            6 * 1e10
        )
        params = _peak(cat, accelerator) * mfu["mfu"] / (tokens_s * 6 * per_token_overhead)
        sizes.append(params / 1e9)
        parts.append(
            f"{accelerator}: {tokens_s:,.0f} tokens/s at the calibrated {mfu['mfu']:.0%} MFU means a "
            f"~{params / 1e9:.0f}B dense model; a 70B model gets "
            f"{_peak(cat, accelerator) * mfu['mfu'] / (6 * 70e9 * per_token_overhead):,.0f} tokens/s"
        )
    return Check(
        "H100 ~3,800 and TPU v5p ~3,450 tokens/s per chip",
        SEED_A + "; " + SEED_B,
        "; ".join(parts) + ". Throughput is not a property of the chip.",
        f"holds only if the model is ~{min(sizes):.0f}-{max(sizes):.0f}B parameters "
        "(tokens/s falls in proportion to model size)",
    )


def mfu_levels(cat: Catalog, cal: calibration_mod.Calibration) -> Check:
    h100, v5p = _mfu(cal, "h100-sxm"), _mfu(cal, "tpu-v5p")
    finding = (
        f"Calibrated benchmark MFU (BF16): H100 {h100['mfu']:.0%} (range "
        f"{h100['mfu_low']:.0%}-{h100['mfu_high']:.0%}), "
        f"TPU v5p {v5p['mfu']:.0%} ({v5p['mfu_low']:.0%}-{v5p['mfu_high']:.0%}). Whole published runs reach a "
        f"median {cal.goodput:.0%} of the benchmark rate, i.e. about {h100['mfu'] * cal.goodput:.0%} and "
        f"{v5p['mfu'] * cal.goodput:.0%} end to end. MFU must name its precision: H100 FP8 runs reach "
        f"{_mfu(cal, 'h100-sxm', 'fp8')['mfu']:.0%} of the FP8 peak."
    )
    inside = h100["mfu_low"] <= 0.52 <= h100["mfu_high"] and v5p["mfu_low"] <= 0.58 <= v5p["mfu_high"]
    verdict = (
        f"holds only for tuned short benchmarks at BF16; whole runs reach about {cal.goodput:.0%} of it"
        if inside
        else f"holds only as an order of magnitude: benchmarks give H100 {h100['mfu']:.0%} and v5p {v5p['mfu']:.0%} "
        "at BF16, "
        f"and whole runs reach about {cal.goodput:.0%} of that"
    )
    return Check("MFU ~52% on H100 vs ~58% on TPU v5p", SEED_A, finding, verdict)


def node_prices(cat: Catalog) -> Check:
    h100 = _prices(cat, "h100-sxm").with_columns(node=pl.col("usd_per_chip_hour") * 8)
    summary = (
        h100.group_by("pricing_model")
        .agg(
            pl.col("node").min().alias("low"), pl.col("node").median().alias("mid"), pl.col("node").max().alias("high")
        )
        .sort("mid")
    )
    in_range = h100.filter(pl.col("node").is_between(12, 15))
    text = "; ".join(
        f"{r['pricing_model']} ${r['low']:.0f}-{r['high']:.0f} (median ${r['mid']:.0f})" for r in summary.to_dicts()
    )
    models = ", ".join(sorted(set(in_range["pricing_model"]))) or "none"
    cheapest = h100.filter(pl.col("pricing_model") == "on-demand")["node"].min()
    verdict = (
        "holds for on-demand"
        if cheapest <= 15
        else f"contradicted for on-demand (cheapest on-demand node ${cheapest:.0f}/h); holds only for {models} prices"
    )
    return Check(
        "An 8x H100 node costs $12-15/h",
        SEED_A + "; " + SEED_B,
        f"8 x USD per H100-hour in the dataset: {text}. Quotes inside $12-15: {in_range.height} ({models}).",
        verdict,
    )


def v5p_slice(cat: Catalog) -> Check:
    chips = 4  # v5p slice names count TensorCores, 2 per chip: v5p-8 is 4 chips
    v5p = _prices(cat, "tpu-v5p")
    od = v5p.filter(pl.col("pricing_model") == "on-demand")["usd_per_chip_hour"]
    spot = v5p.filter(pl.col("pricing_model") == "spot")["usd_per_chip_hour"]
    hbm_gb = cat.accelerators.filter(pl.col("accelerator_id") == "tpu-v5p")["hbm_bytes"].item() / 2**30
    spot_fits = chips * spot.min() <= 11 and chips * spot.max() >= 8
    verdict = (
        "holds for on-demand"
        if chips * od.min() <= 11
        else "contradicted for on-demand; "
        + ("holds only for spot" if spot_fits else "not even spot matches")
        + "; the 760 GB is the 8-chip v5p-16"
    )
    return Check(
        "A TPU v5p-8 slice costs $8-11/h and has 760 GB",
        SEED_A + "; " + SEED_B,
        f"v5p-8 = {chips} chips ({chips * hbm_gb:.0f} GiB HBM; 760 GB is 8 chips = v5p-16). On-demand "
        f"${chips * od.min():.2f}-{chips * od.max():.2f}/h, spot ${chips * spot.min():.2f}-{chips * spot.max():.2f}/h.",
        verdict,
    )


def spot_discount(cat: Catalog) -> Check:
    prices = cat.usable_prices().filter(pl.col("pricing_model").is_in(["on-demand", "spot"]))
    medians = prices.group_by("accelerator_id", "cloud", "pricing_model").agg(pl.col("usd_per_chip_hour").median())
    wide = medians.pivot(on="pricing_model", index=["accelerator_id", "cloud"], values="usd_per_chip_hour").drop_nulls()
    discount = wide.with_columns(discount=1 - pl.col("spot") / pl.col("on-demand"))["discount"]
    verdict = (
        (
            "holds on average"
            if abs(discount.median() - 0.7) <= 0.1
            else f"holds only roughly (median {discount.median():.0%})"
        )
        + f"; it ranges {discount.min():.0%}-{discount.max():.0%} by cloud and chip, and spot "
        "capacity for large jobs is not assured"
    )
    return Check(
        "Spot is ~70% cheaper",
        SEED_B,
        f"Median spot discount over {discount.len()} (accelerator, cloud) pairs: {discount.median():.0%} "
        f"(range {discount.min():.0%}-{discount.max():.0%}). Preemption costs extra hours: the model adds 15%.",
        verdict,
    )


def _best_cost(cat, cal, kind: str, pricing: tuple[str, ...], clouds: tuple[str, ...] = ()) -> dict | None:
    s = Scenario(
        model=ModelSpec.from_params(REFERENCE["params"]),
        tokens=REFERENCE["tokens"],
        days=REFERENCE["days"],
        framework=cat.kinds.filter(pl.col("kind") == kind)["native_framework"].item(),
        pricing=pricing,
    )
    frame = options.evaluate(s, cat, cal).filter(pl.col("feasible") & (pl.col("kind") == kind))
    if clouds:
        frame = frame.filter(pl.col("cloud").is_in(list(clouds)))
    return frame.sort("cost_usd").row(0, named=True) if frame.height else None


def tpu_cost_effectiveness(cat: Catalog, cal: calibration_mod.Calibration) -> Check:
    rows, ratios = [], []
    for label, pricing, clouds in (
        ("on-demand, any cloud", ("on-demand",), ()),
        ("on-demand, GCP only", ("on-demand",), ("gcp",)),
        ("spot, any cloud", ("spot",), ()),
    ):
        tpu, gpu = _best_cost(cat, cal, "tpu", pricing, clouds), _best_cost(cat, cal, "gpu", pricing, clouds)
        if tpu and gpu:
            ratios.append(gpu["cost_usd"] / tpu["cost_usd"])
            rows.append(
                f"{label}: best GPU {gpu['name']} {gpu['cost_usd'] / 1e6:.1f}M$ vs best TPU {tpu['name']} "
                f"{tpu['cost_usd'] / 1e6:.1f}M$ -> GPU/TPU cost ratio {gpu['cost_usd'] / tpu['cost_usd']:.2f}x"
            )
    verdict = (
        f"holds only in some settings (GPU/TPU cost ratio up to {max(ratios):.1f}x)"
        if max(ratios) >= 4
        else f"contradicted: the GPU/TPU cost ratio is {min(ratios):.1f}x-{max(ratios):.1f}x depending on cloud and "
        "pricing, "
        "far from 4-10x"
    )
    return Check(
        "TPUs are 4-10x more cost-effective for pre-training",
        SEED_A,
        "70B model, 1.4T tokens, 30 days, whole-run cost with calibrated MFU: " + "; ".join(rows) + ".",
        verdict,
    )


def v6e_price_performance(cat: Catalog, cal: calibration_mod.Calibration) -> Check:
    v6e_price = _prices(cat, "tpu-v6e").filter(pl.col("pricing_model") == "on-demand")["usd_per_chip_hour"].median()
    v6e_peak_per_usd = _peak(cat, "tpu-v6e") / v6e_price
    v6e_mfu, h100_mfu = _mfu(cal, "tpu-v6e")["mfu"], _mfu(cal, "h100-sxm")["mfu"]
    h100 = (
        _prices(cat, "h100-sxm")
        .filter(pl.col("pricing_model") == "on-demand")
        .group_by("cloud")
        .agg(pl.col("usd_per_chip_hour").median())
        .sort("usd_per_chip_hour")
    )
    parts, ratios = [], []
    for row in h100.to_dicts():
        peak_ratio = v6e_peak_per_usd / (_peak(cat, "h100-sxm") / row["usd_per_chip_hour"])
        ratios.append(peak_ratio)
        parts.append(
            f"vs {row['cloud']} (${row['usd_per_chip_hour']:.2f}/h): {peak_ratio:.1f}x on peak FLOPS/$, "
            f"{peak_ratio * v6e_mfu / h100_mfu:.1f}x on calibrated throughput/$"
        )
    return Check(
        "TPU v6e has up to 4x better price-performance than H100",
        SEED_B,
        f"v6e on-demand ${v6e_price:.2f}/chip-h: " + "; ".join(parts) + ". Google's own 4x claim is v6e vs v5e.",
        "holds only against the priciest H100 on-demand list prices on peak FLOPS per dollar (up to "
        f"{max(ratios):.1f}x); "
        f"{min(ratios):.1f}x against the cheapest, and less on calibrated throughput (v6e's MFU "
        f"{v6e_mfu:.0%} vs H100 {h100_mfu:.0%})",
    )


def v5p_vs_v4(cat: Catalog, cal: calibration_mod.Calibration) -> Check:
    peak = _peak(cat, "tpu-v5p") / _peak(cat, "tpu-v4")
    calibrated = peak * _mfu(cal, "tpu-v5p")["mfu"] / _mfu(cal, "tpu-v4")["mfu"]
    int8 = (
        _peak(cat, "tpu-v5p", "int8_ops_per_s")
        * _mfu(cal, "tpu-v5p", "int8")["mfu"]
        / (_peak(cat, "tpu-v4") * _mfu(cal, "tpu-v4")["mfu"])
    )
    verdict = (
        "holds at BF16"
        if calibrated >= 2.8
        else f"holds only with INT8 (AQT) training on v5p ({int8:.1f}x); about {calibrated:.1f}x at BF16"
    )
    return Check(
        "TPU v5p trains 2.8x faster than TPU v4",
        SEED_B,
        f"Per chip: peak BF16 ratio {peak:.2f}x; with calibrated MFU (v5p MaxText benchmarks vs PaLM on v4) "
        f"{calibrated:.2f}x; with INT8 training on v5p {int8:.2f}x. Google's launch claim (2023-12-06) is 'up to 2.8x' "
        "for GPT-3 175B.",
        verdict,
    )


def check_all(cat: Catalog, cal: calibration_mod.Calibration) -> list[Check]:
    """Every claim, recomputed."""
    return [
        tokens_per_second(cat, cal, {"h100-sxm": 3800, "tpu-v5p": 3450}),
        mfu_levels(cat, cal),
        node_prices(cat),
        v5p_slice(cat),
        spot_discount(cat),
        tpu_cost_effectiveness(cat, cal),
        v6e_price_performance(cat, cal),
        v5p_vs_v4(cat, cal),
    ]


def table(checks: list[Check]) -> pl.DataFrame:
    return pl.DataFrame([dataclasses.asdict(c) for c in checks])
