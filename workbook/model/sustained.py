"""The matrix-multiply rate a chip sustains, relative to its datasheet peak.

A datasheet peak assumes the boost clock; under a dense GEMM a power-limited chip holds a lower one. AMD measures
it (max-achievable FLOPs, ``data/sustained_compute.csv``): MI300X 1,273 TFLOPS FP8 at 1,230 MHz under a 750 W limit,
MI325X 1,519 at 1,464 MHz under 1,000 W, on the same CDNA3 die with the same datasheet peak (2,615 TFLOPS): 1.19x.
The serving compute efficiencies are fitted per software stack across its chips
(:mod:`workbook.serving.calibration`), so a chip's sustained rate enters as a factor on its peak relative to its
vendor's measured chips: fraction = max-achievable / datasheet peak (FP8, else BF16), **factor = fraction / the mean
fraction of the vendor's measured chips** (MI300X 0.91, MI325X 1.09). A chip with no measurement takes 1: its
vendor's mean (MI355X), or no adjustment where the vendor has none measured (Google, AWS).

A power-limited sibling is measured against its full-power part (``relative_to``) by one source with one benchmark
(NVIDIA publishes no max-achievable FLOPs): **factor = its fraction / the part's fraction x the part's factor**.
H100 PCIe (350 W) against H100 SXM (700 W), torch.mm in BF16: 496 of 756 TFLOPS against 798 of 989, 0.81 (H800
PCIe, the same card for China, 504: 0.83). H100 SXM's own row is the reference: alone among NVIDIA's, its factor is
1, as every unmeasured NVIDIA chip's. The ratio is taken for FP8 as well: the clock a power limit holds is the
chip's, whatever the precision.

Where no GEMM measurement of a chip is found, its rate may be implied by compute-bound inference results of it and
its full-power part from the same round: H100 NVL (400 W), whose MLPerf Inference v4.1 Offline results of BERT,
Stable Diffusion XL, GPT-J and RetinaNet (8-bit, TensorRT 10.2; 18 results of four server makers, none of the LLM
results the serving validation reads) reach a median 0.847 of H100 SXM's per unit of datasheet peak (0.77-0.90):
factor 0.85. The same comparison gives H100 PCIe 0.845 against its torch.mm 0.81, and the estimate the NVL row had
before, H100 PCIe's torch.mm clock on the NVL card's 132 SMs at the same watts per SM, 0.853: the power limit is
what these factors say, and it does not explain why these cards' Llama 2 70B results fall 1.2-1.7x below the model.
Failing both, a row may be **estimated** (``basis``) from a measured sibling of the same die at the same watts per
SM, which holds the same clock (no row is, today).
Each chip's basis is carried (:data:`BASIS_COLUMN`) so an answer can say which it rests on.
"""

from __future__ import annotations

import polars as pl

PRECISION_PEAK = {"fp8": "fp8_flops_per_s", "bf16": "bf16_flops_per_s"}  # preferred first
FACTOR_COLUMN = "sustained_compute_factor"
BASIS_COLUMN = "sustained_compute_basis"  # measured / estimated (data/sustained_compute.csv); null: no row


def sustained_compute_factors(accelerators: pl.DataFrame, measured: pl.DataFrame) -> pl.DataFrame:
    """``accelerator_id``, :data:`FACTOR_COLUMN` (1.0 where unmeasured) and :data:`BASIS_COLUMN` for every chip of
    ``accelerators``, from the sustained GEMM rates ``measured`` (``data/sustained_compute.csv``)."""
    order = list(PRECISION_PEAK)
    peak = pl.coalesce(
        *(pl.when(pl.col("precision") == name).then(pl.col(column)) for name, column in PRECISION_PEAK.items())
    )
    for column, default in (("relative_to", None), ("basis", "measured")):
        if column not in measured.columns:
            measured = measured.with_columns(pl.lit(default, dtype=pl.String).alias(column))
    rows = (
        measured.filter(pl.col("precision").is_in(order))
        .join(accelerators.select("accelerator_id", "vendor", *PRECISION_PEAK.values()), on="accelerator_id")
        .with_columns(fraction=pl.col("max_achievable_flops_per_s") / peak)
        .filter(pl.col("fraction").is_not_null())
    )
    absolute = (
        rows.filter(pl.col("relative_to").is_null())
        .sort(pl.col("precision").replace_strict(order, list(range(len(order)))))
        .group_by("accelerator_id", maintain_order=True)
        .first()
        .with_columns((pl.col("fraction") / pl.col("fraction").mean().over("vendor")).alias(FACTOR_COLUMN))
    )
    reference = rows.filter(pl.col("relative_to").is_null()).join(
        absolute.select("accelerator_id", FACTOR_COLUMN), on="accelerator_id"
    )
    siblings = rows.filter(pl.col("relative_to").is_not_null()).join(
        reference.select(
            relative_to="accelerator_id", precision="precision", _ref=pl.col("fraction"), _f=FACTOR_COLUMN
        ),
        on=["relative_to", "precision"],
    )
    factors = pl.concat(
        [
            absolute.select("accelerator_id", FACTOR_COLUMN, pl.col("basis").alias(BASIS_COLUMN)),
            siblings.select(
                "accelerator_id",
                (pl.col("fraction") / pl.col("_ref") * pl.col("_f")).alias(FACTOR_COLUMN),
                pl.col("basis").alias(BASIS_COLUMN),
            ),
        ]
    )
    return (
        accelerators.select("accelerator_id")
        .join(factors, on="accelerator_id", how="left")
        .with_columns(pl.col(FACTOR_COLUMN).fill_null(1.0))
    )
