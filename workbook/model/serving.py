"""Serving formulas: memory, prefill and decode time (roofline with calibrated efficiencies), throughput.

* Weights: params x bytes per weight (bf16 2, fp8/int8 1, int4 0.5), split over the tensor-parallel degree t.
* KV cache per token: 2 (K and V) x layers x KV heads x head size x bytes per KV element; a sequence holds
  prompt + output tokens (on average prompt + output/2 while it decodes).
* Prefill (time to first token) is compute-bound: 2 x N_active x prompt tokens / (t x peak x prefill efficiency).
* A decode step for a batch of B sequences reads the weights once and every sequence's KV cache, and does
  2 x N_active FLOPs per sequence: step = max(bytes / (t x HBM bandwidth x bandwidth efficiency),
  FLOPs / (t x peak x compute efficiency)). Time per output token = step time.
* With continuous batching a replica serves r requests/s where r x (prefill time + output x step / B) = 1,
  i.e. output tokens/s = output / (prefill + output x step / B).
For a mixture of experts, weights read per step grow from the active to the total parameters as the batch
touches more experts: min(total, active x B).
"""

from workbook.model.units import FMA_FLOPS

BYTES_PER_ELEMENT = {"bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
KV_TENSORS = 2  # keys and values


def kv_bytes_per_token(n_layers, n_kv_heads, head_dim, kv_bytes):
    return KV_TENSORS * n_layers * n_kv_heads * head_dim * kv_bytes


def kv_cache_bytes(batch, kv_bytes_per_token_, prompt_tokens, output_tokens, live: bool = False):
    """KV cache of ``batch`` sequences: prompt + output tokens each at the end, prompt + output/2 on average
    while they decode (``live``, what a decode step reads)."""
    return batch * kv_bytes_per_token_ * (prompt_tokens + (output_tokens / 2 if live else output_tokens))


def weights_read_bytes(params, active_params, batch, weight_bytes):
    """Bytes of weights one decode step reads: the active experts of every sequence, at most all weights."""
    return (
        weight_bytes * (active_params * batch).clip(upper_bound=params)
        if hasattr(batch, "clip")
        else weight_bytes * min(params, active_params * batch)
    )


def prefill_seconds(active_params, prompt_tokens, chips, peak_flops_per_s, efficiency):
    return FMA_FLOPS * active_params * prompt_tokens / (chips * peak_flops_per_s * efficiency)


def decode_step_seconds(
    weight_bytes, kv_bytes, batch, active_params, chips, bandwidth, peak, bw_efficiency, flops_efficiency
):
    """Seconds per decode step for ``batch`` sequences on ``chips`` (the slower of memory and compute)."""
    memory = (weight_bytes + kv_bytes) / (chips * bandwidth * bw_efficiency)
    compute = FMA_FLOPS * active_params * batch / (chips * peak * flops_efficiency)
    return memory, compute


def output_tokens_per_s(output_tokens, prefill_s, step_s, batch):
    """Output tokens per second of one replica under continuous batching."""
    return output_tokens / (prefill_s + output_tokens * step_s / batch)
