"""Each seed claim is recomputed from the data and the model and gets a verdict."""

import pytest

from workbook import catalog
from workbook.training import calibration, claims


@pytest.fixture(scope="module")
def checks():
    cat = catalog.load()
    return {c.claim: c for c in claims.check_all(cat, calibration.fit(cat))}


def test_every_claim_has_a_verdict_of_the_three_kinds(checks):
    assert len(checks) == 8
    for check in checks.values():
        assert check.verdict.split(" ")[0] in ("holds", "contradicted:", "contradicted")
        assert check.finding and check.said_in.startswith("seeds/")


def test_v5p_8_is_four_chips_and_priced_above_the_claim(checks):
    check = checks["A TPU v5p-8 slice costs $8-11/h and has 760 GB"]
    assert "v5p-8 = 4 chips" in check.finding and check.verdict.startswith("contradicted for on-demand")


def test_tokens_per_second_depends_on_model_size(checks):
    check = checks["H100 ~3,800 and TPU v5p ~3,450 tokens/s per chip"]
    assert check.verdict.startswith("holds only if the model is")


def test_four_to_ten_x_is_not_supported(checks):
    # With the parallelism planner the GCP-only on-demand ratio reaches ~4.2x (H200 on GCP list price vs v6e),
    # so the claim holds at best in one setting, never across clouds and pricing.
    verdict = checks["TPUs are 4-10x more cost-effective for pre-training"].verdict
    assert verdict.startswith(("contradicted", "holds only in some settings"))
