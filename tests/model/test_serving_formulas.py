"""Serving formulas checked against a simulation: the percentile of a sum of independent delays."""

import bisect
import math
import random
from statistics import NormalDist

import polars as pl
import pytest

from workbook.model import serving as sv

SAMPLES = 100_000


def _percentile(values: list[float], q: float) -> float:
    return sorted(values)[int(q * len(values))]


def _lognormal(rng: random.Random, mean: float, p99: float) -> float:
    """A lognormal draw through ``mean`` and its 99th percentile (as the model takes prompt lengths)."""
    z = NormalDist().inv_cdf(0.99)
    sigma = z - math.sqrt(z * z - 2 * math.log(p99 / mean))
    return rng.lognormvariate(math.log(mean) - sigma * sigma / 2, sigma)


@pytest.mark.parametrize(
    ("prompt_mean", "prompt_p99", "seconds_per_token", "waiting", "wait_when_waiting_s"),
    [
        (9429, 18958, 0.154e-3, 0.08, 0.875),  # MLPerf's 405B prompts on 8 H200: a light load
        (9429, 18958, 0.154e-3, 0.5, 1.3),  # the same, half of the prompts wait
        (222, 791, 0.07e-3, 0.3, 0.02),  # MLPerf's Llama 2 70B prompts
        (1000, 3000, 0.1e-3, 0.7, 0.5),  # a heavily loaded queue
    ],
)
def test_the_percentile_of_a_prefill_plus_a_queue_wait_matches_a_simulation(
    prompt_mean, prompt_p99, seconds_per_token, waiting, wait_when_waiting_s
):
    # A prompt's own prefill (lognormal lengths) plus an independent M/G/1 wait: none with probability 1 - u, an
    # exponential one otherwise. Adding the two 99th percentiles overshoots the sum's by 9-38% here.
    rng = random.Random(0)
    own = [_lognormal(rng, prompt_mean, prompt_p99) * seconds_per_token for _ in range(SAMPLES)]
    wait = [rng.expovariate(1 / wait_when_waiting_s) if rng.random() < waiting else 0.0 for _ in range(SAMPLES)]
    simulated = _percentile([a + b for a, b in zip(own, wait, strict=True)], 0.99)
    means = (sum(own) / SAMPLES, sum(wait) / SAMPLES)
    tails = (_percentile(own, 0.99), _percentile(wait, 0.99))
    estimate = sv.percentile_of_sum(means, tails)
    assert 0.95 * simulated <= estimate <= 1.08 * simulated
    assert estimate < sum(tails)


def test_a_percentile_of_a_sum_is_exact_for_one_uncertain_delay_and_infinite_with_an_infinite_one():
    assert sv.percentile_of_sum((1.0, 2.0), (1.0, 5.0)) == pytest.approx(6.0)  # a fixed delay just adds
    assert sv.percentile_of_sum((1.0, 2.0), (3.0, 2.0)) == pytest.approx(5.0)
    assert sv.percentile_of_sum((1.0, math.inf), (2.0, math.inf)) == math.inf
    frame = pl.DataFrame({"m": [1.0, math.inf], "p": [2.0, math.inf]})
    out = frame.select(sv.percentile_of_sum((pl.col("m"), pl.lit(1.0)), (pl.col("p"), pl.lit(1.0))))
    assert out.to_series().to_list() == [pytest.approx(3.0), math.inf]


def test_cache_peakedness_is_campbells_theorem_for_growing_contexts():
    # No prompt: a request holds s tokens at step s, int L = O^2 / 2, int L^2 = O^3 / 3, so Z = (O^3/3) O / (O^2/2)^2.
    assert sv.cache_peakedness(0, None, 300, None) == pytest.approx(4 / 3)
    # A long prompt and a one-token answer: the tokens in flight are the sequences times the prompt, Z -> 1.
    assert sv.cache_peakedness(10_000, None, 1, None) == pytest.approx(1.0, abs=1e-3)
    # Spread lengths hold the cache's tokens less evenly than the mean: MLPerf's Llama 2 70B prompts (222, p99 791).
    fixed, spread = sv.cache_peakedness(222, None, 291, None), sv.cache_peakedness(222, 791, 291, None)
    assert 1.0 < fixed < spread < 1.5


def test_cache_peakedness_matches_a_simulated_cache():
    # Poisson arrivals, lognormal prompts, fixed answers; tokens in flight sampled once per step, in mean contexts.
    rng = random.Random(7)
    prompt, p99, answer, rate = 222, 791, 291, 0.5
    sigma = 2.326 - math.sqrt(2.326**2 - 2 * math.log(p99 / prompt))
    mu = math.log(prompt) - sigma**2 / 2
    steps, arrivals = 40_000, []
    t = 0.0
    while t < steps:
        t += rng.expovariate(rate)
        arrivals.append((t, rng.lognormvariate(mu, sigma)))
    times = [a for a, _ in arrivals]
    samples = []
    for now in range(2 * answer, steps, 7):
        held = arrivals[bisect.bisect_right(times, now - answer) : bisect.bisect_right(times, now)]
        samples.append(sum(p + (now - a) for a, p in held))
    mean = sum(samples) / len(samples)
    var = sum((x - mean) ** 2 for x in samples) / len(samples)
    per_sequence = mean / (rate * answer)  # the mean context
    measured = var / per_sequence**2 / (rate * answer)
    assert measured == pytest.approx(sv.cache_peakedness(prompt, p99, answer, None), rel=0.1)


def _cut_lognormal(rng: random.Random, mu: float, sigma: float, cap: float) -> float:
    while (x := rng.lognormvariate(mu, sigma)) > cap:
        pass
    return x


@pytest.mark.parametrize(("mean", "p99"), [(9429, 18958), (2000, 24_000), (2000, 32_000), (2000, 48_000)])
def test_lengths_cut_at_the_context_window_keep_their_mean_and_percentile(mean, p99):
    # MLPerf's 405B prompts; and a mean of 2,000 tokens with a 99th percentile 12x to 24x it, past the 15x an uncut
    # lognormal reaches: cut at Llama 3.1's context window less a 300-token answer, each is a distribution.
    cap = 131_072 - 300
    mu, sigma = sv.length_shape(mean, p99, cap)
    rng = random.Random(3)
    draws = [_cut_lognormal(rng, mu, sigma, cap) for _ in range(200_000)]
    assert sum(draws) / len(draws) == pytest.approx(mean, rel=0.03)
    assert _percentile(draws, 0.99) == pytest.approx(p99, rel=0.03)
    squared = sum(x * x for x in draws) / len(draws)
    assert squared == pytest.approx(sv.second_moment(mean, p99, cap), rel=0.1)


def test_the_spread_of_lengths_grows_smoothly_with_their_percentile():
    # Uncut, the second moment climbed without bound as the 99th percentile neared 15x the mean (and was clipped
    # beyond): a 24k-token one gave 16x the squared mean and a 32k one 224x, so a fleet went from 8 chips to 56.
    cap = 131_072 - 300
    ratios = [sv.second_moment(2000, p99, cap) / 2000**2 for p99 in range(20_000, 50_001, 2_000)]
    assert all(b > a for a, b in zip(ratios, ratios[1:], strict=False))
    assert max(b / a for a, b in zip(ratios, ratios[1:], strict=False)) < 1.25
    # where no lognormal fits, none is made up: the scenario refuses it (tests/serving)
    assert sv.length_shape(2000, 32_000) is None
    assert sv.length_shape(2000, 80_000, cap) is None
    uncut = sv.length_shape(9429, 18958)
    assert math.exp(uncut[0] + NormalDist().inv_cdf(0.99) * uncut[1]) == pytest.approx(18958, rel=1e-9)
    assert sv.length_shape(100, None) == (math.log(100), 0.0)


@pytest.mark.parametrize("mean", [0.0005, 0.009, 0.02, 0.3, 1.0, 4.0, 9.0])
def test_the_count_quantile_is_poissons(mean):
    rng = random.Random(11)
    draws = []
    for _ in range(100_000):
        # Poisson by counting exponential gaps within the mean
        k, t = 0, rng.expovariate(1.0)
        while t < mean:
            k, t = k + 1, t + rng.expovariate(1.0)
        draws.append(k)
    exact = next(
        k for k in range(100) if sum(math.exp(-mean) * mean**j / math.factorial(j) for j in range(k + 1)) >= 0.99
    )
    assert sv.poisson_quantile(mean) == exact
    assert abs(_percentile(draws, 0.99) - exact) <= 1
    frame = pl.DataFrame({"m": [mean]}).select(sv.poisson_quantile(pl.col("m")))
    assert frame.item() == exact


@pytest.mark.parametrize(
    ("count_mean", "size_p99"), [(0.001, 3000), (0.05, 3000), (0.3, 3000), (3.0, 3000), (30.0, 3000)]
)
def test_a_compound_poisson_percentile_matches_a_simulation(count_mean, size_p99):
    # Prompts of mean 1,000 tokens arriving in a step: almost never (one step in a thousand), sometimes, often.
    rng = random.Random(5)
    mu, sigma = sv.length_shape(1000, size_p99)
    sums = []
    for _ in range(40_000):
        k, t = 0, rng.expovariate(1.0)
        while t < count_mean:
            k, t = k + 1, t + rng.expovariate(1.0)
        sums.append(sum(rng.lognormvariate(mu, sigma) for _ in range(k)))
    simulated = _percentile(sums, 0.99) - count_mean * 1000
    formula = sv.compound_poisson_excess(count_mean, 1000, sv.second_moment(1000, size_p99))
    if count_mean < 0.01:
        assert formula == 0.0 and _percentile(sums, 0.99) == 0.0
    else:
        assert formula == pytest.approx(simulated, rel=0.35)
