import polars as pl
import pytest

from workbook.model.sustained import BASIS_COLUMN, FACTOR_COLUMN, sustained_compute_factors

PEAKS = pl.DataFrame(
    {
        "accelerator_id": ["a1", "a2", "a3", "n1"],
        "vendor": ["amd", "amd", "amd", "nvidia"],
        "fp8_flops_per_s": [2e15, 2e15, None, 2e15],
        "bf16_flops_per_s": [1e15, 1e15, 1e15, 1e15],
    }
)


def _by_id(factors: pl.DataFrame) -> dict:
    return dict(zip(*factors.select("accelerator_id", FACTOR_COLUMN), strict=True))


def _measured(rows):
    return pl.DataFrame(rows, schema=["accelerator_id", "precision", "max_achievable_flops_per_s"], orient="row")


def test_a_chip_sustaining_more_of_its_peak_than_its_vendors_average_gets_more_than_one():
    measured = _measured([("a1", "fp8", 0.8e15), ("a2", "fp8", 1.2e15), ("a2", "bf16", 0.1e15)])
    factors = _by_id(sustained_compute_factors(PEAKS, measured))
    # fractions 0.4 and 0.6 (FP8 preferred over a chip's BF16 row), their mean 0.5
    assert factors["a1"] == pytest.approx(0.8) and factors["a2"] == pytest.approx(1.2)
    assert factors["a3"] == factors["n1"] == 1.0  # unmeasured: the vendor's average, or no adjustment


def test_bf16_is_used_where_a_chip_has_no_fp8_measurement():
    measured = _measured([("a1", "fp8", 1.0e15), ("a3", "bf16", 0.75e15)])
    factors = sustained_compute_factors(PEAKS, measured)
    assert factors.columns == ["accelerator_id", FACTOR_COLUMN, BASIS_COLUMN] and factors.height == PEAKS.height
    by_id = dict(zip(*factors.select("accelerator_id", FACTOR_COLUMN), strict=True))
    assert by_id["a1"] == pytest.approx(0.5 / 0.625) and by_id["a3"] == pytest.approx(0.75 / 0.625)


def test_a_power_limited_sibling_takes_its_measured_ratio_to_its_full_power_part():
    # n1 measured alone for its vendor (factor 1); n2 by the same benchmark at 0.6 of its peak where n1 reaches 0.8
    peaks = PEAKS.vstack(
        pl.DataFrame(
            {"accelerator_id": ["n2"], "vendor": ["nvidia"], "fp8_flops_per_s": [None], "bf16_flops_per_s": [5e14]}
        )
    )
    measured = pl.DataFrame(
        {
            "accelerator_id": ["a1", "n1", "n2"],
            "precision": ["fp8", "bf16", "bf16"],
            "max_achievable_flops_per_s": [0.8e15, 0.8e15, 0.3e15],
            "relative_to": [None, None, "n1"],
        }
    )
    factors = _by_id(sustained_compute_factors(peaks, measured))
    assert factors["n1"] == 1.0 and factors["n2"] == pytest.approx(0.75)
    assert factors["a1"] == 1.0 and factors["a2"] == 1.0  # a vendor's own: against its mean (one chip: itself)


def test_an_estimated_sibling_is_factored_as_a_measured_one_and_says_it_is_estimated():
    peaks = PEAKS.vstack(
        pl.DataFrame(
            {"accelerator_id": ["n2"], "vendor": ["nvidia"], "fp8_flops_per_s": [None], "bf16_flops_per_s": [5e14]}
        )
    )
    measured = pl.DataFrame(
        {
            "accelerator_id": ["n1", "n2"],
            "precision": ["bf16", "bf16"],
            "max_achievable_flops_per_s": [0.8e15, 0.3e15],
            "relative_to": [None, "n1"],
            "basis": ["measured", "estimated"],
        }
    )
    factors = sustained_compute_factors(peaks, measured)
    assert _by_id(factors)["n2"] == pytest.approx(0.75)
    basis = dict(zip(*factors.select("accelerator_id", BASIS_COLUMN), strict=True))
    assert basis == {"a1": None, "a2": None, "a3": None, "n1": "measured", "n2": "estimated"}
