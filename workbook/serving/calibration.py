"""Serving efficiencies per software stack, fitted on that stack's published results
(``data/inference_runs.csv``, role ``calibrate``) with the same formulas the prediction uses.

* Step overhead, per layer ``layer_overhead_s``: the fixed seconds every step costs besides its reads and FLOPs (host
  scheduling, sampling, and the launches and gaps of the step's kernels, a dozen or so per layer:
  :func:`workbook.serving.replica.step_overhead`), from the stack's batch-1 decode steps: the published step less its
  all-reduces' latency (:func:`workbook.model.serving.allreduce_latency_seconds_per_step`, on a GPU replica of several
  chips) and less its weight and KV-cache reads at the HBM streaming efficiency ``eta_bw`` of the stack's vendor
  (:data:`workbook.model.serving.HBM_STREAM_EFFICIENCY`: BabelStream, NVIDIA 0.9, AMD 0.78), over the model's layers;
  the median over the stack's **newest** batch-1 results, as for the compute efficiency (a stack with none uses the
  median of the others' newest, and says so; the held-out validation takes those of each result's time:
  :func:`published_by`). TensorRT-LLM 35 us a layer (its PyTorch backend of May 2026, Llama 3.1 8B FP8 on two B200s at
  concurrency 1: 2.34 ms a token, pull request #14622's baseline; the held-out results before it take NIM 1.8's 67 us,
  Llama 3.3 70B on two H100s in May 2025: 5.3 ms a step of 80 layers); vLLM 44 us (vLLM 0.19's blog, April 2026, Llama
  3.1 8B at concurrency 1: 35 us on an H100, 53 on a B200; its 2024 CI, 70B on four H200s, gave 81); vLLM on ROCm 64
  us (ROCm/vllm's docs, July 2025, vLLM 0.9.1 on eight MI300X at TP8: 58 on Llama 3.1 70B, 70 on 405B; it took the
  other stacks' median before). Per layer, not per step: one H200's batch-1 requests through TensorRT-LLM 0.15
  (TensorRT Model Optimizer's benchmark, held out) take 4.1 ms an output token on Llama 3.1 8B (32 layers) and 23 ms
  on 70B (80 layers); with 5.3 ms a step whatever the model, the 8B request would take 7.4 ms (1.8x), with NIM's 67 us
  a layer it takes 4.2. A small model's step is mostly this overhead, a large one's mostly its reads. (Fitted whole,
  as one HBM efficiency, a batch-1 step gave 0.62 of the bandwidth: a one-GPU 70B replica then read its weights in 23
  ms a step, where the measured streaming rate and the overhead give 21 ms.)
* Compute efficiency ``eta_c``: the efficiency at which the model reproduces each dense offline throughput
  result (bisection, :func:`workbook.serving.published.fit_compute_efficiency`); the stack's value is the
  median over its **newest round** (software moves fast: TensorRT-LLM gained 28% on the same H100s from
  MLPerf v4.1 to v5.0), so older rounds only show the drift. It multiplies each chip's datasheet peak times the
  chip's sustained-clock factor (:mod:`workbook.model.sustained`: MI325X holds 1.19x MI300X's matmul rate at the
  same peak, 1 where the vendor publishes no measurement), so an efficiency fitted on one chip carries to a sibling
  held to another clock by its power limit.
* All-reduce efficiency ``allreduce`` (one for every stack): the fraction of the link's one-way bandwidth a
  tensor-parallel all-reduce of a decode step's tokens reaches, beside its latency in every step (a long prompt's
  tokens travel at the link's speed: :mod:`workbook.model.serving`). Fitted where one round of a stack holds
  systems that differ only in their tensor-parallel degree on the same chip die (H100 TP2 and H200 TP1, both GH100:
  TensorRT-LLM in MLPerf v4.1, 0.41; vLLM 0.9.2 in MLPerf v5.1, Krai's open-division Llama 3.1 70B, 0.33): the
  efficiency at which they fit the same compute efficiency (:func:`allreduce_efficiency`: the upper median, 0.41),
  where NCCL's all-reduce of a few MB on Hopper reaches 0.3-0.5 of the link (vLLM PR #42324). Nominal (1.0) where no
  such pair exists. NVIDIA's TensorRT-LLM throughput tables at TP 1/2/4/8
  are the held-out test of it.
* FP4, per vendor (``fp4_by_stack``, :func:`fp4_factors`): FP4 matmuls (NVFP4 on Blackwell, MXFP4 on CDNA4) speed
  up only the matmuls, a share f of a token's dense compute time, by the chip's FP4 / FP8 peak ratio r (Amdahl:
  :func:`workbook.serving.replica.fp4_factor`), and the share grows with the model's width, f = 1 / (1 + k L d / N)
  (:func:`workbook.serving.replica.fp4_fraction`). k is fitted on an FP4 result against the dense efficiency of the
  same stack and round. NVIDIA: a 70B model's share 0.40 (MLPerf v5.0, B200 against H100/H200: 0.62 of the FP8
  efficiency at twice the peak), for TensorRT-LLM and vLLM on CUDA alike (the same chips and kernels); AMD: 0.87
  (MLPerf v5.1 open division, MI355X against MI300X at MI300X's sustained clock; 0.97 against its datasheet
  peak). Each is fitted on one result and kept for that system's own rows; NVIDIA's TensorRT-LLM B200 FP4 tables and
  MLPerf v6.0's and v6.1's B300 and GB300 results (FP4 peak 2.9-3x FP8; v6.1's 0.90-0.99x) are the held-out test of
  NVIDIA's.
* FP8 KV cache, per stack and software (:data:`FP8_KV_READ_SHARE`): an FP8 cache takes half a BF16 cache's memory, and
  its reads cost what the stack's own measurement says: vLLM on CUDA 63% of BF16's in v0.10.2, 54% in v0.19.1 (half,
  its bytes, where unmeasured). A result is predicted and fitted with its software's (:func:`of_its_time`); the app
  uses today's.
* Each vendor has a best published stack and a generic open-source one (``STACKS``); a stack with no published
  result borrows another's efficiencies (``PROXIES``) and the answer names the proxy. "Best published" tries every
  stack of the vendor with published results of its own (NVIDIA: TensorRT-LLM, then vLLM on CUDA) and the scenario
  keeps the one that serves it with the fewest chips (:func:`workbook.serving.options.best_configs`): which
  stack's fitted efficiency is higher, and so which needs fewer chips, depends on the case.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

import polars as pl

from workbook import cache
from workbook.catalog import Catalog
from workbook.model import serving as sv
from workbook.serving import published, replica

STACKS = {
    ("nvidia", "best"): "trtllm",
    ("nvidia", "generic"): "vllm-cuda",
    ("amd", "best"): "vllm-rocm",
    ("amd", "generic"): "vllm-rocm",
    ("google", "best"): "jetstream",
    ("google", "generic"): "vllm-tpu",
    ("aws", "best"): "neuron",
    ("aws", "generic"): "neuron",
}
STACK_NAMES = {
    "trtllm": "TensorRT-LLM",
    "vllm-cuda": "vLLM on CUDA",
    "vllm-rocm": "vLLM on ROCm",
    "jetstream": "JetStream",
    "vllm-tpu": "vLLM-TPU",
    "neuron": "Neuron NxD Inference",
}
VENDORS = {stack: vendor for (vendor, _), stack in STACKS.items()} | {"trtllm-static": "nvidia"}
ALLREDUCE_RANGE = (0.05, 1.0)  # all-reduce efficiencies searched: a twentieth of the link to all of it
PROXIES = {
    "vllm-tpu": ("jetstream", "borrowed from JetStream's results (no published vLLM-TPU result in the dataset)"),
    "neuron": (
        "vllm-cuda",
        "borrowed from vLLM on CUDA's results (no published Trainium serving result in the dataset)",
    ),
}


# What reading an FP8 KV cache costs attention, as a share of a BF16 cache's (half its bytes), per stack and software:
# (from when, share), a measurement holding from its date on and a result before the first taking the first. vLLM on
# CUDA, measured by vLLM ("The State of FP8 KV-Cache and Attention Quantization in vLLM", blog of 2026-04-22, github
# vllm-project/vllm-project.github.io@78672b0f _posts/2026-04-22-fp8-kvcache.md, Table 3 and Figure 5): Llama 3.1 8B's
# inter-token latency slope per context token, FP8 over BF16, 63% in v0.10.2 on H100 (FlashAttention 3; its docs of then
# said FP8 KV brought "no latency improvements"), 54% in v0.19.1 on H100 and on B200 (FlashInfer). Other stacks: not
# measured, half (TensorRT-LLM's XQA kernels and AMD's MLPerf builds read FP8 natively).
FP8_KV_READ_SHARE = {"vllm-cuda": ((None, 0.63), (dt.date(2026, 4, 22), 0.54))}


def fp8_kv_read_shares(published: dt.date | None = None) -> tuple[tuple[str, float], ...]:
    """(stack, FP8 KV read cost as a share of BF16's) of the software published by ``published`` (today's if None)."""
    return tuple(
        (stack, [share for since, share in entries if since is None or published is None or since <= published][-1])
        for stack, entries in FP8_KV_READ_SHARE.items()
    )


def of_its_time(factors: replica.Factors, published: dt.date) -> replica.Factors:
    """``factors`` with the FP8 KV-cache reads of the software published by ``published``
    (:data:`FP8_KV_READ_SHARE`)."""
    return dataclasses.replace(factors, fp8_kv_read_by_stack=fp8_kv_read_shares(published))


@dataclasses.dataclass(frozen=True)
class ServingEfficiency:
    """Per stack: fraction of the HBM roofline (``eta_bw``) and of the dense peak (``eta_c``) reached, and the fixed
    cost of a step per layer (``layer_overhead_s``), with the basis of each; ``moe``: mixture-of-experts factor on
    ``eta_c`` (:func:`moe_factor`); ``points``: every calibration row's own fitted value; ``allreduce``: the
    tensor-parallel all-reduce efficiency, with its basis."""

    stacks: pl.DataFrame  # stack, eta_bw, eta_c, layer_overhead_s, bw_basis, overhead_basis, compute_basis, round, ...
    moe: float
    points: pl.DataFrame
    allreduce: float
    allreduce_basis: str
    fp4: float  # the FP4 coefficient of a stack with no FP4 result of its vendor: the median over every FP4 result
    fp4_by_stack: dict[str, float]  # each stack's FP4 coefficient (:func:`fp4_factors`)
    fp4_basis: dict[str, str]
    layer_overhead_s: float  # of a stack with no batch-1 result: the median over every batch-1 result
    layer_overhead_by_stack: dict[str, float]  # every stack's, proxies resolved (:func:`overhead_by_stack`)

    def factors(self) -> replica.Factors:
        return replica.Factors(
            moe=self.moe,
            allreduce=self.allreduce,
            fp4=self.fp4,
            fp4_by_stack=tuple(self.fp4_by_stack.items()),
            layer_overhead_s=self.layer_overhead_s,
            layer_overhead_by_stack=tuple(self.layer_overhead_by_stack.items()),
            fp8_kv_read_by_stack=fp8_kv_read_shares(),
        )

    def for_accelerators(self, accelerators: pl.DataFrame, choice: str) -> pl.DataFrame:
        """``accelerators``, one row per candidate stack (:func:`candidate_stacks`; ``stack_rank`` 0 is the vendor's
        listed stack for ``choice``) with its efficiencies (proxies resolved)."""
        mapping = pl.DataFrame(
            [
                {"vendor": vendor, "stack": stack, "stack_rank": rank}
                for vendor in sorted({v for v, _ in STACKS})
                for rank, stack in enumerate(candidate_stacks(vendor, choice))
            ],
            orient="row",
        )
        resolved = pl.DataFrame(
            [
                {
                    "stack": s,
                    "stack_name": STACK_NAMES[s],
                    "source_stack": PROXIES.get(s, (s, None))[0],
                    "stack_note": PROXIES.get(s, (s, None))[1],
                }
                for s in STACK_NAMES
            ],
            orient="row",
        )
        table = resolved.join(
            self.stacks.rename({"stack": "source_stack"}), on="source_stack", how="left"
        ).with_columns(
            stack_round=pl.col("round"),
            stack_note=pl.coalesce("stack_note", "compute_basis"),
            fp4_basis=pl.col("stack").replace_strict(self.fp4_basis, default=None, return_dtype=pl.String),
        )
        columns = ("stack", "stack_name", "stack_round", "stack_note", "fp4_basis", "eta_bw", "eta_c")
        columns += ("layer_overhead_s", "overhead_basis")
        return accelerators.join(mapping, on="vendor", how="left").join(table.select(columns), on="stack", how="left")


def candidate_stacks(vendor: str, choice: str) -> list[str]:
    """The stacks tried for ``vendor``: for ``"generic"`` its open-source one; for ``"best"`` its listed best
    stack first, then each other stack of the vendor calibrated on published results of its own (not a proxy)."""
    listed = STACKS[(vendor, choice)]
    if choice != "best":
        return [listed]
    others = [s for (v, _), s in STACKS.items() if v == vendor and s != listed and s not in PROXIES]
    return [listed, *dict.fromkeys(others)]


def _overhead_points(runs: pl.DataFrame) -> pl.DataFrame:
    """The step overhead of every batch-1 TPOT row: the published step less its all-reduces' latency and its
    reads at the HBM streaming efficiency, over the model's layers (kind ``step-overhead``, seconds a layer in
    ``layer_overhead_s``)."""
    points = []
    for r in runs.filter(pl.col("measure") == "tpot_ms").iter_rows(named=True):
        w = sv.BYTES_PER_ELEMENT[r["weight_precision"]]
        kv_token = sv.kv_bytes_per_token(
            r["n_layers"], r["n_kv_heads"], r["head_dim"], sv.BYTES_PER_ELEMENT[r["kv_precision"]]
        )
        kv = sv.kv_cache_bytes(r["batch"], kv_token, r["prompt_tokens"], r["output_tokens"], live=True)
        weights = sv.weights_read_bytes(r["params"], r["active_params"], r["batch"], w)
        eta = sv.hbm_stream_efficiency(r["vendor"])
        reads = (weights / eta + kv / (eta * sv.KV_READ_SHARE)) / (r["tensor_parallel"] * r["hbm_bytes_per_s"])
        # the step's all-reduces wait on latency, not on the weights: that part is not the engine's overhead
        allreduce_s = (
            sv.allreduce_latency_seconds_per_step(r["n_layers"])
            if r["tensor_parallel"] > 1 and r["kind"] in replica.ALLREDUCE_KINDS
            else 0.0
        )
        overhead = max(0.0, r["value"] / 1000 - allreduce_s - reads)
        points.append({**_ids(r), "kind": "step-overhead", "layer_overhead_s": overhead / r["n_layers"]})
    return pl.DataFrame(points)


def _ids(r: dict) -> dict:
    ids = {k: r[k] for k in ("run_id", "stack", "round", "published", "accelerator_id")}
    return {**ids, "engine": r.get("engine"), "system": f"{r['stack']}|{r['accelerator_id']}|{r['round']}"}


def _throughput_runs(cat: Catalog) -> pl.DataFrame:
    return cat.inference_runs.filter((pl.col("role") == "calibrate") & (pl.col("measure") == "tokens_per_s"))


def _kind(run: dict) -> str:
    if run["params"] != run["active_params"]:
        return "compute-moe"
    return "compute-fp4" if run["weight_precision"] == "fp4" else "compute"


def compute_points(
    cat: Catalog, eta_bw: dict[str, float], base: replica.Factors, stacks: set[str] | None = None
) -> pl.DataFrame:
    """eta_c of every offline throughput row (of ``stacks``, default all), each fitted on its own with the ``base``
    factors (the all-reduce efficiency and step overheads; kind ``compute``: dense FP8/BF16 models; ``compute-moe``:
    mixtures of experts, whose ratio to the dense value is the MoE factor; ``compute-fp4``: FP4 matmuls, the FP4
    coefficient's)."""
    factors = dataclasses.replace(base, moe=1.0, fp4=0.0)
    runs = _throughput_runs(cat)
    if stacks is not None:
        runs = runs.filter(pl.col("stack").is_in(sorted(stacks)))
    rows = [
        {
            **_ids(r),
            "kind": _kind(r),
            "efficiency": published.fit_compute_efficiency(
                cat.accelerators, r, eta_bw[r["stack"]], of_its_time(factors, r["published"])
            ),
            "layer_width_per_param": replica.layer_width_per_param(r["n_layers"], r["hidden_dim"], r["active_params"]),
        }
        for r in runs.iter_rows(named=True)
    ]
    return pl.DataFrame(rows).filter(pl.col("efficiency").is_not_nan()) if rows else pl.DataFrame()


def _within_stage_tp(run: dict) -> float:
    return (run["tensor_parallel"] or 0) / (run["pipeline_parallel"] or 1)


def tensor_parallel_pairs(cat: Catalog) -> list[tuple[dict, dict]]:
    """(tensor-parallel run, single-chip-stage run) of the same stack, round, model and chip die (the accelerators'
    ``family`` and dense peak), both dense with a published layout: the only difference the model sees between
    their compute efficiencies is the all-reduce."""
    runs = _throughput_runs(cat).join(
        cat.accelerators.select("accelerator_id", "family", "fp8_flops_per_s"), on="accelerator_id"
    )
    dense = [r for r in runs.iter_rows(named=True) if r["params"] == r["active_params"] and r["tensor_parallel"]]
    same = ("stack", "round", "model", "family", "fp8_flops_per_s")
    return [
        (a, b)
        for a in dense
        for b in dense
        if _within_stage_tp(a) > 1 and _within_stage_tp(b) == 1 and all(a[k] == b[k] for k in same)
    ]


def pair_efficiency(
    cat: Catalog, eta_bw: dict[str, float], tp_run: dict, single: dict, base: replica.Factors
) -> float | None:
    """The all-reduce efficiency at which ``tp_run`` fits the compute efficiency of ``single`` (bisection on its
    log, to 1%), with the ``base`` factors' step overheads; None when even the full link leaves the TP run needing
    more than its partner."""
    nominal = dataclasses.replace(base, moe=1.0, allreduce=1.0, fp4=0.0)
    target = published.fit_compute_efficiency(cat.accelerators, single, eta_bw[single["stack"]], nominal)

    def gap(efficiency: float) -> float:  # > 0: the TP run needs more compute than its partner
        factors = dataclasses.replace(nominal, allreduce=efficiency)
        fitted = published.fit_compute_efficiency(cat.accelerators, tp_run, eta_bw[tp_run["stack"]], factors)
        return math.inf if math.isnan(fitted) else fitted - target  # NaN: even the full peak falls short

    low, high = ALLREDUCE_RANGE
    if not gap(high) <= 0 < gap(low):
        return None
    while high / low > 1.01:
        mid = (low * high) ** 0.5
        low, high = (mid, high) if gap(mid) > 0 else (low, mid)
    return high


def allreduce_efficiency(cat: Catalog, eta_bw: dict[str, float], base: replica.Factors) -> tuple[float, str]:
    """The (upper) median over :func:`tensor_parallel_pairs` of the all-reduce efficiency at which each
    tensor-parallel run fits the same compute efficiency as its single-chip-stage partner, with its basis; nominal
    (1.0) without a pair that fits."""
    pairs = tensor_parallel_pairs(cat)
    fitted = [e for e in (pair_efficiency(cat, eta_bw, a, b, base) for a, b in pairs) if e is not None]
    if not fitted:
        return 1.0, "nominal: no round holds a tensor-parallel and a single-chip result of the same chip die"
    names = "; ".join(f"{a['run_id']} vs {b['run_id']}" for a, b in pairs)
    return float(sorted(fitted)[len(fitted) // 2]), f"fitted on {names}"


def _dense_pairs(points: pl.DataFrame, kind: str) -> pl.DataFrame:
    """The points of ``kind``, each with the median dense efficiency of the same stack and round (``dense``)."""
    dense = (
        points.filter(pl.col("kind") == "compute")
        .group_by("stack", "round")
        .agg(pl.col("efficiency").median().alias("dense"))
    )
    return points.filter(pl.col("kind") == kind).join(dense, on=["stack", "round"])


def _ratio_to_dense(points: pl.DataFrame, kind: str) -> float:
    """Median, over the points of ``kind``, of their efficiency / the dense efficiency of the same stack and
    round; 1.0 when no pair exists."""
    pairs = _dense_pairs(points, kind)
    return (pairs["efficiency"] / pairs["dense"]).median() if pairs.height else 1.0


def fp4_factors(points: pl.DataFrame, accelerators: pl.DataFrame) -> tuple[float, dict[str, float], dict[str, str]]:
    """FP4 coefficient k per stack (:func:`workbook.serving.replica.fp4_fraction`: FP4 matmuls speed up a share
    f = 1 / (1 + k L d / N) of the dense compute time, by the chip's FP4 / FP8 peak ratio r). An FP4 result's fitted
    efficiency (of its FP4 peak) over the dense one of the same stack and round is 1 / (f + (1 - f) r), so
    f = (dense / efficiency - r) / (1 - r) (kept within 1% and 100%) and **k = (1 / f - 1) N / (L d)**. Fitted on the
    stack's own FP4 results (the median), else on its vendor's other stack's (the same chips and FP4 kernels), else
    the median over every FP4 result (returned first). With each, its basis."""
    peak_ratio = pl.col("fp4_flops_per_s") / pl.col("fp8_flops_per_s")
    share = (pl.col("dense") / pl.col("efficiency") - pl.col("peak_ratio")) / (1 - pl.col("peak_ratio"))
    pairs = (
        _dense_pairs(points, "compute-fp4")
        .join(accelerators.select("accelerator_id", peak_ratio=peak_ratio), on="accelerator_id")
        .with_columns(ratio=(1 / share.clip(0.01, 1.0) - 1) / pl.col("layer_width_per_param"))
    )
    overall = pairs["ratio"].median() if pairs.height else 0.0
    own = {
        stack: (
            group["ratio"].median(),
            f"fitted on {', '.join(group['run_id'])}, {', '.join(group['round'].unique())}",
        )
        for (stack,), group in pairs.group_by("stack")
    }
    vendor_of = VENDORS
    factors, basis = {}, {}
    for stack in STACK_NAMES:
        kin = [s for s in own if vendor_of.get(s) == vendor_of.get(stack) and s != stack]
        if stack in own:
            factors[stack], basis[stack] = own[stack]
        elif kin:
            factors[stack] = own[kin[0]][0]
            basis[stack] = f"{STACK_NAMES[kin[0]]}'s on the same chips, {own[kin[0]][1]}"
        else:
            factors[stack], basis[stack] = (
                overall,
                f"no FP4 result of this vendor: the median of all {pairs.height} FP4 results",
            )
    return overall, factors, basis


def moe_factor(points: pl.DataFrame) -> float:
    """Serving efficiency of mixture-of-experts layers relative to dense ones: the median, over MoE results, of
    their fitted efficiency / the dense efficiency of the same stack and round (smaller expert GEMMs and
    routing reach less of the peak). 1.0 when no pair exists."""
    return _ratio_to_dense(points, "compute-moe")


def overhead_by_stack(points: pl.DataFrame) -> tuple[float, dict[str, float], dict[str, str]]:
    """Median step overhead per stack over its newest batch-1 results (its proxy's for a stack that borrows another's
    efficiencies): an engine's host work and kernel launches shrink from release to release (vLLM: 81 us a layer in
    its 2024 CI, 35-53 us in 0.19's), so, as for the compute efficiency, the newest software sets it. A stack with
    none takes the median of every stack's newest (named in its basis), returned first."""
    newest = points.filter(pl.col("published") == pl.col("published").max().over("stack"))
    overall = newest["layer_overhead_s"].median()
    values, basis = {}, {}
    for stack in STACK_NAMES:
        source = PROXIES.get(stack, (stack, None))[0]
        own = newest.filter(pl.col("stack") == source)
        values[stack] = own["layer_overhead_s"].median() if own.height else overall
        basis[stack] = (
            f"from batch-1 latencies of {own['round'][0]}, {own['published'][0]:%B %Y}"
            if own.height
            else f"the median of the other stacks' newest {newest.height} batch-1 latencies (none of its own)"
        )
    return overall, values, basis


def published_by(points: pl.DataFrame, date) -> pl.DataFrame:
    """The ``points`` a result published on ``date`` is predicted with: each stack's published no later than
    ``date`` (the software of its time), or, for a stack with none by then, its earliest (the nearest generation)."""
    by_then = pl.col("published") <= date
    earliest = pl.col("published") == pl.col("published").min().over("stack")
    return points.filter(pl.when(by_then.any().over("stack")).then(by_then).otherwise(earliest))


def newest_round(points: pl.DataFrame) -> pl.DataFrame:
    """Per stack: median eta_c over the rows of its newest round."""
    newest = points.filter(pl.col("published") == pl.col("published").max().over("stack"))
    return newest.group_by("stack").agg(
        pl.col("efficiency").median().alias("eta_c"),
        pl.col("round").first(),
        pl.col("published").first(),
        pl.col("run_id").alias("runs"),
    )


def _stack_table(compute: pl.DataFrame, eta_bw: dict, overhead: dict, overhead_basis: dict) -> pl.DataFrame:
    fitted = newest_round(compute.filter(pl.col("engine").is_null()))  # an answer runs each stack's current engine
    return fitted.with_columns(
        eta_bw=pl.col("stack").replace_strict(eta_bw, return_dtype=pl.Float64),
        layer_overhead_s=pl.col("stack").replace_strict(overhead, return_dtype=pl.Float64),
        bw_basis=pl.lit(sv.HBM_STREAM_BASIS),
        overhead_basis=pl.col("stack").replace_strict(overhead_basis, return_dtype=pl.String),
        compute_basis=pl.format("calibrated on {} ({})", pl.col("runs").list.join(", "), pl.col("round")),
    ).drop("runs")


@cache.per_catalog("serving-calibration", ServingEfficiency)  # fitted once per table content and code version
def calibrate(cat: Catalog) -> ServingEfficiency:
    """Efficiencies of every stack with published results."""
    runs = cat.inference_runs.filter(pl.col("role") == "calibrate").join(
        cat.accelerators, on="accelerator_id", how="left"
    )
    overheads = _overhead_points(runs)
    stacks = sorted(set(cat.inference_runs["stack"]))
    eta_bw = {stack: sv.hbm_stream_efficiency(VENDORS.get(stack)) for stack in stacks}
    overall, overhead, overhead_basis = overhead_by_stack(overheads)
    base = replica.Factors(
        moe=1.0,
        allreduce=1.0,
        fp4=0.0,
        layer_overhead_s=overall,
        layer_overhead_by_stack=tuple(overhead.items()),
    )
    allreduce, allreduce_basis = allreduce_efficiency(cat, eta_bw, base)
    compute = compute_points(cat, eta_bw, dataclasses.replace(base, allreduce=allreduce))
    return ServingEfficiency(
        stacks=_stack_table(compute.filter(pl.col("kind") == "compute"), eta_bw, overhead, overhead_basis),
        moe=moe_factor(compute),
        **dict(zip(("fp4", "fp4_by_stack", "fp4_basis"), fp4_factors(compute, cat.accelerators), strict=True)),
        points=pl.concat([overheads, compute], how="diagonal"),
        allreduce=allreduce,
        allreduce_basis=allreduce_basis,
        layer_overhead_s=overall,
        layer_overhead_by_stack=overhead,
    )
