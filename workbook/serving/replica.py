"""One replica of a served model on each accelerator and tensor-parallel degree, and its load curve.

``configs`` lists (accelerator x tensor-parallel degree): inside the fast scale-up domain, or, for PCIe cards
with no NVLink (L4, L40S, A10G: ``scaleup_domain_chips`` 1), across the cards of one server over PCIe
(``scaleup_bytes_per_s``), whose slower all-reduces the formulas charge per token. ``load_curve`` evaluates
each configuration at loads rho = 1%..99% of its capacity (formulas in :mod:`workbook.model.serving`);
``limits`` keeps, per configuration, the highest load that fits in memory and meets the latency targets.
Latency columns: ``tpot_ms`` / ``ttft_ms`` are the 99th percentiles (``sv.LATENCY_PERCENTILE``), the statistic
the targets set and the one sizing compares with them; ``tpot_mean_ms`` / ``ttft_mean_ms`` are the means.
The input frame carries the calibrated efficiencies per row (``eta_bw``, ``eta_c``).
"""

from __future__ import annotations

import polars as pl

from workbook.model import serving as sv
from workbook.model.units import HEAD_DIM
from workbook.serving.scenario import PEAK_FOR, ServeScenario

TP_CANDIDATES = (1, 2, 4, 8, 16, 32, 64)
LOAD_GRID = tuple(i / 100 for i in range(1, 100))  # rho, fraction of the replica's capacity
SLOTS_FULL = 0.999  # busy slots are capped just below all of them, where the wait for one is finite


def configs(accelerators: pl.DataFrame) -> pl.DataFrame:
    """Accelerators x tensor-parallel degrees a replica can use."""
    limit = (
        pl.when(pl.col("scaleup_domain_chips") <= 1)
        .then(pl.col("block_chips"))
        .otherwise(pl.col("scaleup_domain_chips"))
    )
    grid = pl.DataFrame({"tensor_parallel": TP_CANDIDATES})
    return (
        accelerators.join(grid, how="cross")
        .filter(pl.col("tensor_parallel") <= limit)
        .with_columns(over_pcie=(pl.col("scaleup_domain_chips") <= 1) & (pl.col("tensor_parallel") > 1))
    )


def replicas(frame: pl.DataFrame, s: ServeScenario, moe_efficiency: float) -> pl.DataFrame:
    """Per configuration: the replica-seconds one request costs, capacity, weights time, memory room."""
    m = s.model
    w_bytes = sv.BYTES_PER_ELEMENT[s.weight_precision]
    kv_token = sv.kv_bytes_per_token(m.n_layers, s.kv_heads, HEAD_DIM, sv.BYTES_PER_ELEMENT[s.kv_precision])
    t = pl.col("tensor_parallel").cast(pl.Float64)
    bandwidth = pl.col("hbm_bytes_per_s")
    peak = pl.col(PEAK_FOR[s.weight_precision]).fill_null(pl.col("bf16_flops_per_s"))
    eta_c = pl.col("eta_c") * (moe_efficiency if m.active_params < m.params else 1.0)
    comm = (
        pl.when(t > 1)
        .then(sv.allreduce_seconds_per_token(m.n_layers, m.hidden_dim, t, pl.col("scaleup_bytes_per_s")))
        .otherwise(0.0)
    )
    prefill_s, decode_s = sv.request_seconds(m.active_params, s.prompt_tokens, s.output_tokens, t, peak, eta_c, comm)
    kv_read_s = sv.kv_read_seconds(kv_token, s.prompt_tokens, s.output_tokens, t, bandwidth, pl.col("eta_bw"))
    usable_bytes = pl.col("hbm_bytes") * s.assumptions.hbm_usable_fraction - s.assumptions.runtime_overhead_bytes
    weights_bytes = w_bytes * m.params / t
    kv_sequence = sv.kv_cache_bytes(1, kv_token, s.prompt_tokens, s.output_tokens, live=True)  # paged KV cache
    max_sequences = (usable_bytes - weights_bytes) * t / kv_sequence
    if s.max_batch is not None:
        max_sequences = pl.min_horizontal(max_sequences, pl.lit(float(s.max_batch)))
    return frame.with_columns(
        prefill_s=prefill_s,
        decode_s=decode_s,
        kv_read_s=kv_read_s,
        capacity_rps=sv.capacity_requests_per_s(prefill_s, decode_s, kv_read_s),
        weights_gb=weights_bytes / 1e9,
        overhead_gb=pl.lit(s.assumptions.runtime_overhead_bytes / 1e9),
        max_sequences=max_sequences,
        kv_gb_per_sequence=kv_sequence / t / 1e9,
        all_weights_s=weights_bytes / (bandwidth * pl.col("eta_bw")),
        active_weights_s=w_bytes * m.active_params / t / (bandwidth * pl.col("eta_bw")),
    )


def at_load(frame: pl.DataFrame, s: ServeScenario, rho: pl.Expr) -> pl.DataFrame:
    """Step time, latencies, sequences in flight and memory of each replica at load ``rho`` of its capacity."""
    rps = rho * pl.col("capacity_rps")
    # Mixture of experts: the weights read per step depend on how many sequences are in flight (one pass).
    first = sv.sequences_in_flight(rps, s.output_tokens, sv.step_seconds(pl.col("all_weights_s"), rho))
    weights_s = pl.min_horizontal(pl.col("active_weights_s") * first.clip(lower_bound=1), pl.col("all_weights_s"))
    step_s = sv.step_seconds(weights_s, rho)
    sequences = sv.sequences_in_flight(rps, s.output_tokens, step_s)
    slots = pl.col("max_sequences").clip(lower_bound=1)
    busy = pl.min_horizontal(sequences, slots * SLOTS_FULL)  # beyond: the replica does not fit (fits_in_memory)
    hold_s = s.output_tokens * step_s
    slot_wait_s = sv.slot_wait_seconds(busy, slots, hold_s)
    per_sequence_s = sv.work_per_sequence_step(
        pl.col("prefill_s"), pl.col("decode_s"), pl.col("kv_read_s"), s.output_tokens
    )
    step_p_s = pl.max_horizontal(step_s, sv.step_percentile_seconds(weights_s, per_sequence_s, busy, slots))
    prefill_p_s = pl.col("prefill_s") * s.prompt_tokens_tail / s.prompt_tokens
    ttft_p_s = sv.ttft_seconds(prefill_p_s, step_p_s, sv.slot_wait_percentile_seconds(busy, slots, hold_s))
    frame = frame.with_columns(
        load_fraction=rho,
        requests_per_s_per_replica=rps,
        tpot_mean_ms=step_s * 1000,
        ttft_mean_ms=sv.ttft_seconds(pl.col("prefill_s"), step_s, slot_wait_s) * 1000,
        tpot_ms=step_p_s * 1000,
        ttft_ms=ttft_p_s * 1000,
        sequences=sequences,
        kv_cache_gb=sequences * pl.col("kv_gb_per_sequence"),
        tokens_per_s_per_replica=rps * s.output_tokens,
    )
    return frame.with_columns(
        memory_per_chip_gb=pl.col("weights_gb") + pl.col("kv_cache_gb") + pl.col("overhead_gb"),
        tokens_per_s_per_chip=pl.col("tokens_per_s_per_replica") / pl.col("tensor_parallel"),
        fits_in_memory=(pl.col("sequences") <= pl.col("max_sequences")) & (pl.col("max_sequences") >= 1),
        meets_ttft=pl.lit(True) if s.ttft_ms is None else pl.col("ttft_ms") <= s.ttft_ms,
        meets_tpot=pl.lit(True) if s.tpot_ms is None else pl.col("tpot_ms") <= s.tpot_ms,
    )


def load_curve(frame: pl.DataFrame, s: ServeScenario) -> pl.DataFrame:
    """Every configuration at every load of ``LOAD_GRID``."""
    grid = pl.DataFrame({"rho": LOAD_GRID})
    return at_load(frame.join(grid, how="cross"), s, pl.col("rho")).drop("rho")


def limits(curve: pl.DataFrame) -> pl.DataFrame:
    """Per configuration, the highest load meeting memory and both targets (``max_load_fraction``, null if none),
    and which limit binds first as load rises (``limit``)."""
    ok = pl.col("fits_in_memory") & pl.col("meets_ttft") & pl.col("meets_tpot")
    keys = ["accelerator_id", "tensor_parallel"]
    binding = (
        pl.when(~pl.col("fits_in_memory"))
        .then(pl.lit("memory"))
        .when(~pl.col("meets_tpot"))
        .then(pl.lit("per-token target"))
        .when(~pl.col("meets_ttft"))
        .then(pl.lit("first-token target"))
        .otherwise(pl.lit("compute"))
    )
    summary = (
        curve.with_columns(binding=binding)
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col("load_fraction").filter(ok).max().alias("max_load_fraction"),
            pl.col("binding").filter(~ok).first().fill_null("compute").alias("limit"),
            pl.col("fits_in_memory").any().alias("any_fits"),
            (pl.col("fits_in_memory") & pl.col("meets_tpot")).any().alias("any_tpot"),
            ok.any().alias("any_ok"),
        )
    )
    return summary
