"""Numbers and names for people, and HTML whose every class has a style in the one stylesheet."""

import datetime as dt
import re

import polars as pl
import pytest

from workbook import present
from workbook.app import views
from workbook.training import options, recommend
from workbook.training.scenario import ModelSpec, Scenario


def test_money_days_and_plurals():
    assert present.usd(1_234_567) == "$1.2M" and present.usd(850_000) == "$850k" and present.usd(4200) == "$4,200"
    assert present.usd(2.5e9) == "$2.5B" and present.usd(None) == "n/a"
    assert present.days(18.46) == "18.5 days" and present.days(240.4) == "240 days"
    assert present.count(1, "chip") == "1 chip" and present.count(1024, "chip") == "1,024 chips"
    assert present.count(2, "replica") == "2 replicas" and present.count(3, "box", "boxes") == "3 boxes"


def test_gigabytes_keep_a_tenth_below_ten_so_a_small_kv_cache_does_not_read_zero():
    # DeepSeek-V3 on 8 MI300X at 5 requests/s: 46 sequences of MLA cache are 0.2 GB a chip (it read "KV cache 0 GB").
    assert present.gigabytes(0.46) == "0.5 GB" and present.gigabytes(9.4) == "9.4 GB"
    assert present.gigabytes(9.97) == "10 GB" and present.gigabytes(192) == "192 GB"


def test_grouped_writes_a_column_of_whole_numbers_with_thousands_separators():
    # A serving fleet's ruled-out reason read "needs 18004073 chips; ... rents at most 512".
    frame = pl.DataFrame({"n": [0, 999, 1000, 123456, 18004073, None]})
    assert frame.select(present.grouped(pl.col("n")))["n"].to_list() == [
        "0",
        "999",
        "1,000",
        "123,456",
        "18,004,073",
        None,
    ]


def test_counted_writes_a_column_of_counts_as_count_does_one_included():
    # A 1-chip replica's looser-target clause was lost: "{} chip{}" with no plural is null, and so was the sentence.
    frame = pl.DataFrame({"n": [1, 2, 1024]})
    words = frame.select(present.counted(pl.col("n"), "chip"))["n"].to_list()
    assert words == ["1 chip", "2 chips", "1,024 chips"] == [present.count(n, "chip") for n in (1, 2, 1024)]


def test_token_prices_keep_enough_figures_that_neighbours_in_a_ranking_differ():
    # 8B at 200 requests/s: $0.055 and $0.062 per million output tokens, "12% cheaper", once both read "$0.06".
    assert present.token_price(0.055) == "$0.055" and present.token_price(0.0623) == "$0.062"
    assert present.token_price(0.69) == "$0.69" and present.token_price(9.94) == "$9.94"
    assert present.token_price(0.0999) == "$0.10" and present.token_price(9.996) == "$10.0"
    assert present.token_price(13.12) == "$13.1" and present.token_price(13.44) == "$13.4"  # 405B's ranking
    assert present.token_price(142.4) == "$142" and present.token_price(0) == "$0.00"


def test_table_escapes_cells_and_greys_muted_rows():
    text = present.table(["A", "B"], [["<x>", 1], ["y", 2]], muted=[False, True])
    assert "&lt;x&gt;" in text and "<x>" not in text
    assert text.count("<tr class='wb-muted'>") == 1 and text.count("<td>") == 4
    with pytest.raises(ValueError, match="shorter"):
        present.table(["A"], [["a"], ["b"]], muted=[True])


def test_filterable_table_rows_carry_their_text_for_the_filter_box():
    text = present.table(["Chip", "Cloud"], [["Google TPU v5p", "GCP"], ["<B200>", "AWS"]], filter_name="options")
    assert "data-filter-name='options'" in text
    assert re.findall(r"data-filter='([^']*)'", text) == ["google tpu v5p gcp", "&lt;b200&gt; aws"]
    assert "data-filter" not in present.table(["Chip"], [["x"]])  # only where asked
    box = views.table_heading("All options", "options")
    assert "<h3>All options</h3>" in box and "type='search'" in box and "oninput=" in box
    assert "data-target='table[data-filter-name=&quot;options&quot;]'" in box and "<script" not in box


def test_no_inline_styles_and_every_class_is_styled():
    s = Scenario(model=ModelSpec.from_params(7e9), tokens=1.4e11, days=30, pricing=("on-demand",))
    frame = options.evaluate(s)
    assert frame.filter(pl.col("feasible")).height > 0 and frame.filter(~pl.col("feasible")).height > 0
    page = (
        views.recommendation(recommend.recommend(frame))
        + views.table_heading("All options", "options")
        + views.option_table(frame, limit=frame.height - 1)
        + views.message("bad", "error")
        + views.message("note", "info")
        + views.accuracy(["one line"], ["median |ln(pred/real)| = 0.180"])
    )
    assert "style=" not in page
    used = set(re.findall(r"class='([^']+)'", page)) | set(re.findall(r'class="([^"]+)"', page))
    classes = {c for group in used for c in group.split()}
    assert {"wb-card", "wb-headline", "wb-table", "wb-muted", "wb-more", "wb-error", "wb-info"} <= classes
    css = present.css()
    assert [c for c in classes if f".{c}" not in css] == []


def test_the_serving_table_marks_a_large_order_as_the_card_warns_for_the_pick():
    from workbook import serving

    # 70B at 500 req/s on a reserved contract (no ceiling stated): fleets of 68 to 1,056 chips when written
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=500, pricing=("reserved-contract",))
    frame = serving.evaluate_serving(s).filter(pl.col("feasible"))
    html = views.serving_table(frame, limit=frame.height)
    large = frame.filter(pl.col("chips") > 256).height
    assert 0 < large < frame.height
    assert html.count("<td>ok; a large order: confirm the provider can deliver it</td>") == large


def test_the_training_table_marks_a_large_order_as_the_card_warns_for_the_pick():
    # 8B on 5T tokens in 30 days, on reserved contracts (no ceiling stated): plans of 104 to 704 chips when written
    s = Scenario(model=ModelSpec.from_params(8e9), tokens=5e12, days=30, pricing=("reserved-contract",))
    frame = options.evaluate(s).filter(pl.col("feasible"))
    html = views.option_table(frame, limit=frame.height)
    large = frame.filter(pl.col("chips") > 256).height
    assert 0 < large < frame.height
    assert html.count(">ok; a large order: confirm the provider can deliver it</td>") == large
    assert html.count(">ok</td>") == frame.height - large


def test_the_serving_table_shows_no_infinite_latency():
    from workbook import serving

    # 405B at 5 requests/s: some accelerators cannot serve it within the targets, and no latency of theirs is shown
    s = serving.ServeScenario(model=ModelSpec.from_params(405e9), requests_per_s=5)
    frame = serving.evaluate_serving(s)
    assert not frame["feasible"].all()
    html = views.serving_table(frame, limit=frame.height)
    assert "inf ms" not in html and "nan ms" not in html and "<td>–, –</td>" in html


def test_a_short_job_reads_in_hours_or_minutes_and_a_small_one_in_kwh():
    # a 125M-parameter job on 8 H100s read "0.0 days" and "Energy: 0.0 MWh (0.0 t CO2e)"
    assert present.days(0.25) == "6.0 hours" and present.days(0.01) == "14 minutes"
    assert present.days(0.0001) == "1 minute" and present.days(1.0) == "1.0 days"
    assert present.energy(2.3, 0.9) == "2.3 kWh (0.9 kg CO2e)"
    assert present.energy(420.0, 150.0) == "420 kWh (150 kg CO2e)"
    assert present.energy(4_499_000, 1_665_000) == "4,499 MWh (1,665 t CO2e)"
    assert present.energy(2_300, 800) == "2.3 MWh (800 kg CO2e)"


def test_a_price_rows_regions_read_as_a_list():
    assert present.regions("us-east-2;ap-south-2") == "us-east-2, ap-south-2"
    assert present.regions("us-central1") == "us-central1"
    column = pl.DataFrame({"r": ["a;b;c", "d"]}).select(present.regions_column(pl.col("r")))["r"].to_list()
    assert column == ["a, b, c", "d"]


def test_the_serving_table_says_how_many_chips_a_fleet_rents():
    from workbook import serving

    # 70B at 3 requests/s on AWS H100s: 2 chips would do, on a p5.48xlarge rented whole: the fleet runs on all 8
    s = serving.ServeScenario(
        model=ModelSpec.from_params(70e9), requests_per_s=3, accelerators=("h100-sxm",), clouds=("aws",)
    )
    frame = serving.evaluate_serving(s).filter(pl.col("feasible"))
    row = frame.row(0, named=True)
    assert row["rented_chips"] == row["chips"] == 8
    assert f"{row['replicas']} x {row['chips_per_replica']}</td>" in views.serving_table(frame)
    # replicas of 16 on a 72-GPU rack: 4 fill 64, and the other 8 cannot hold a fifth
    assert views._replicas_cell({"replicas": 4, "chips_per_replica": 16, "chips": 64, "rented_chips": 72}) == (
        "4 x 16, 72 rented"
    )


@pytest.mark.parametrize(
    ("rows", "user", "basis", "typical"),
    [
        (3, False, "the cheapest of 3 list-price quotes", "; typical $2.50"),
        (1, False, "the only list-price quote", ""),
        (1, True, "your price", ""),
    ],
)
def test_a_price_names_its_quotes_and_a_typical_rate_only_where_there_are_several(rows, user, basis, typical):
    option = {"price_rows": rows, "user_price": user, "usd_per_chip_hour_typical": 2.5}
    assert present.price_basis(option, "the cheapest") == basis
    assert present.typical_words(option) == typical


def test_a_tpu_fleet_that_does_not_fill_its_hosts_says_what_is_billed():
    option = {"kind": "tpu", "name": "Google TPU7x", "chips": 3, "rented_chips": 4, "rent_unit": 4}
    words = present.rented_words(option)
    assert "whole 4-chip VM hosts: 3 chips take 1 host, and all 4 chips are billed" in words
    assert present.rented_words({**option, "chips": 4}) == ""


@pytest.mark.parametrize(("age", "user", "told"), [(3.9, False, True), (1.5, False, False), (3.9, True, False)])
def test_a_price_years_older_than_the_data_says_so(age, user, told):
    option = {"price_age_years": age, "user_price": user, "price_as_of": dt.date(2022, 12, 9)}
    words = present.stale_words(option)
    assert ("The price dates from 2022-12, 4 years before the newest quote" in words) is told
    assert bool(words) is told
