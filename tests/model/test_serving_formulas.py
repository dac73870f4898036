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
