"""A step-by-step simulation of one replica's serving engine: the check on the load curve's queueing formulas.

The load curve (:func:`workbook.serving.replica.at_load`) prices a replica's latencies with closed-form queueing
approximations (fluid step time, M/G/1 prompt queues, Erlang slot waits with peakedness). This module runs the same
engine, request by request and step by step, with the same costs, so the approximations can be measured against it
(``tests/serving/test_simulation.py``, the validation notebook). It is slow (a second or more per load) and is not
used to size anything.

The engine, as :class:`workbook.serving.replica.Scheduler` describes it: Poisson arrivals; prompts lognormal through
their mean and 99th percentile; every answer ``output_tokens`` long. A request waits first come first served for a
sequence slot (``slots``). Each step costs ``fixed_s`` plus ``decode_token_s`` per decoding sequence plus
``prompt_token_s`` per prompt token it carries, and carries at most ``max_tokens_per_step`` tokens. With mixed
steps (TensorRT-LLM's in-flight batching, vLLM's chunked prefill) every decoding sequence's token comes first and
the prompts, oldest first, take the rest of the budget: split over steps when ``chunked_prefill``, whole otherwise
(one prompt at least per step, however long). Without mixed steps (vLLM without chunked prefill) a step runs either
waiting prompts (whole ones, up to the budget) or every decoding sequence, prompts first. With
``steps_per_schedule`` n, prompts are admitted only every n steps (vLLM multi-step scheduling). With attention-DP
balancing (``balance_timeout_steps``), admitted prompts go to the replica's ``ranks`` in turn and are held as
TensorRT-LLM holds them: until every rank has one and ``balance_wait_steps`` more steps have passed, or until
``balance_timeout_steps`` steps without every rank having one (a step that finds no sequence decoding lets them go).
With ``schedule_ahead`` each batch is made when the step before it starts (an engine with nothing to run makes one
at once), so only the prompts that had arrived by then can join it.
A prompt's first token comes at the end of the step that finishes it; its other tokens one per step after that.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import random
import statistics

from workbook.model import serving as sv
from workbook.serving.replica import Scheduler


@dataclasses.dataclass(frozen=True)
class Costs:
    """Seconds a step costs: a fixed part, and its work per decoding sequence and per prompt token."""

    fixed_s: float
    decode_token_s: float
    prompt_token_s: float


@dataclasses.dataclass(frozen=True)
class Result:
    """Per-request latencies (seconds) of the requests that arrived after the warm-up, and the steps' mean."""

    ttft_mean_s: float
    ttft_p99_s: float
    tpot_mean_s: float
    tpot_p99_s: float
    step_mean_s: float
    requests: int


def costs(replica_row: dict, s, sched: Scheduler) -> Costs:
    """The step costs of a replica as the load curve prices them (a row of
    :func:`workbook.serving.replica.replicas`): the weights read, all-reduce latency and fixed overhead of each
    pipeline stage, and the replica-seconds of a sequence's decode token (its compute and KV-cache reads) and of a
    prompt token."""
    fixed_s = replica_row["all_weights_s"] + replica_row["allreduce_step_s"] + replica_row["step_overhead_s"]
    return Costs(
        fixed_s=fixed_s * sched.pipeline_stages,
        decode_token_s=(replica_row["decode_s"] + replica_row["kv_read_s"]) / s.output_tokens,
        prompt_token_s=replica_row["prefill_s"] / s.prompt_tokens,
    )


def of_replica(at_load_row: dict, s, sched: Scheduler, requests: int, seed: int = 1) -> Result:
    """The engine run on a replica at the load of a row of :func:`workbook.serving.replica.at_load` (its arrival
    rate, step costs, sequence slots and attention ranks, its chips), for about ``requests`` requests after the
    warm-up."""
    rps = at_load_row["requests_per_s_per_replica"]
    return simulate(
        rps,
        costs(at_load_row, s, sched),
        sched,
        int(at_load_row["max_sequences"]),
        s.prompt_tokens,
        s.prompt_tokens_p99,
        s.output_tokens,
        prompt_tokens_cap=s.prompt_tokens_cap,
        horizon_s=requests / rps * 4 / 3,
        seed=seed,
        ranks=int(at_load_row["tensor_parallel"]),
    )


def _prompt(rng: random.Random, mu: float, sigma: float, cap: float) -> int:
    """A prompt's length: lognormal (mu, sigma), drawn again while longer than ``cap``."""
    while (tokens := rng.lognormvariate(mu, sigma)) > cap:
        pass
    return max(1, round(tokens))


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


class _Balance:
    """TensorRT-LLM's attention-DP balancing (``_balance_adp_requests``): the step counters that decide whether the
    held prompts start; without balancing every step starts them."""

    def __init__(self, sched: Scheduler, ranks: int):
        self.timeout, self.extra, self.ranks = sched.balance_timeout_steps, sched.balance_wait_steps, ranks
        self.waited = self.batched = self.assigned = 0

    def next_rank(self) -> int:
        self.assigned += 1
        return self.assigned % self.ranks

    def release(self, ranks_holding: set[int], decoding: int) -> bool:
        if self.timeout <= 0:
            return True
        if len(ranks_holding) == self.ranks:
            self.waited = 0
            if decoding and self.batched < self.extra:
                self.batched += 1
                return False
            self.batched = 0
            return True
        self.waited += 1
        if self.waited >= self.timeout or not decoding:
            self.waited = 0
            return True
        return False


def simulate(
    requests_per_s: float,
    costs: Costs,
    sched: Scheduler,
    slots: int,
    prompt_tokens: float,
    prompt_tokens_p99: float | None,
    output_tokens: int,
    horizon_s: float,
    seed: int = 1,
    ranks: int = 1,
    prompt_tokens_cap: float = math.inf,
) -> Result:
    """Run the engine for ``horizon_s`` seconds of arrivals; the first quarter is warm-up, left out of the figures.
    ``ranks``: the attention data-parallel ranks that balancing waits on."""
    rng = random.Random(seed)
    mu, sigma = sv.length_shape(prompt_tokens, prompt_tokens_p99, prompt_tokens_cap)
    budget_per_step = sched.max_tokens_per_step * sched.pipeline_stages
    warm_s = horizon_s / 4
    next_arrival = rng.expovariate(requests_per_s)
    waiting: collections.deque[tuple[float, int]] = collections.deque()  # (arrival time, prompt tokens)
    prompts: collections.deque[list] = collections.deque()  # admitted: [arrival time, tokens left]
    held: list[tuple[int, list]] = []  # admitted, held by attention-DP balancing: (rank, prompt)
    balance = _Balance(sched, ranks)
    # decode step -> the requests whose last token it makes: (arrival, first token time)
    finishing: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    decoding = 0
    now, step, decode_steps = 0.0, 0, 0
    made_at = 0.0  # when the next batch is made: the running step's start when scheduling ahead, else its end
    ttft, tpot, steps = [], [], []
    while now < horizon_s:
        while next_arrival <= now:
            tokens = _prompt(rng, mu, sigma, prompt_tokens_cap) if sigma else max(1, round(prompt_tokens))
            waiting.append((next_arrival, tokens))
            next_arrival += rng.expovariate(requests_per_s)
        if not (waiting or prompts or decoding):
            now = made_at = next_arrival
            continue
        # the batch made while the last step ran; an engine left with nothing to run makes one at once
        cutoff = made_at if sched.schedule_ahead and (prompts or decoding or held) else now
        if step % sched.steps_per_schedule == 0:
            while waiting and waiting[0][0] <= cutoff and decoding + len(prompts) + len(held) < slots:
                arrived, tokens = waiting.popleft()
                held.append((balance.next_rank(), [arrived, tokens]))
        if balance.release({rank for rank, _ in held}, decoding):  # counts every step, held prompts or not
            prompts.extend(item for _, item in held)
            held.clear()
        prefill_step = bool(prompts) and not sched.mixed_steps
        budget = budget_per_step - (0 if prefill_step or not sched.mixed_steps else decoding)
        carried, done = 0, []
        if sched.mixed_steps or prefill_step:
            for item in prompts:
                room = budget - carried
                if room <= 0:
                    break
                if sched.chunked_prefill:
                    take = min(item[1], room)
                elif item[1] <= room or carried == 0:
                    take = item[1]
                else:
                    break
                item[1] -= take
                carried += take
                if item[1] == 0:
                    done.append(item)
        decodes = 0 if prefill_step else decoding
        duration = costs.fixed_s + costs.decode_token_s * decodes + costs.prompt_token_s * carried
        made_at = now
        now += duration
        step += 1
        if now > warm_s:
            steps.append(duration)
        if decodes:
            decode_steps += 1
            for arrived, first in finishing.pop(decode_steps, ()):
                decoding -= 1
                if arrived > warm_s and output_tokens > 1:
                    tpot.append((now - first) / (output_tokens - 1))
        for item in done:
            prompts.remove(item)
            if item[0] > warm_s:
                ttft.append(now - item[0])
            if output_tokens > 1:
                decoding += 1
                finishing[decode_steps + output_tokens - 1].append((item[0], now))
    return Result(
        ttft_mean_s=statistics.fmean(ttft),
        ttft_p99_s=_p99(ttft),
        tpot_mean_s=statistics.fmean(tpot) if tpot else math.nan,
        tpot_p99_s=_p99(tpot) if len(tpot) > 1 else math.nan,
        step_mean_s=statistics.fmean(steps),
        requests=len(ttft),
    )
