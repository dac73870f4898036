"""Memory per chip for training: model states (ZeRO/FSDP), activations (Korthikanti 2022), logits, overhead.

Model states, mixed-precision Adam (Rajbhandari et al. 2019, ZeRO, Sec. 3.1): 2 B bf16 weights +
2 B bf16 gradients + 12 B fp32 optimizer states (master weights, momentum, variance) = 16 B/param.
A chip holds the parameters of its model-parallel slice (``slice_params``: 1/(TP x PP) of the dense
weights, 1/(TP x PP x EP) of the experts); ZeRO stage k shards, across the ``shards`` data x context
parallel ranks, the optimizer (k >= 1), the gradients (k >= 2) and the weights (k = 3, i.e. FSDP); an expert's
across the ranks that hold the same experts, data x context / EP.
Check: 7.5B params on 64 chips -> 120 / 31.4 / 16.6 / 1.9 GB for stages 0-3 (ZeRO paper, Fig. 1).

Activations per layer with tensor + sequence parallelism of degree t (Korthikanti et al. 2022,
"Reducing Activation Recomputation", Table 2), s = sequence per chip (sequence / context parallel),
b = micro-batch, h = hidden, a = heads:
  none:      s*b*h/t * (34 + 5*a*s/h)
  selective: 34*s*b*h/t          (the attention score term is recomputed; FlashAttention does the same)
  full:      2*s*b*h/t           (only each layer's input is kept; one layer is re-materialised at a time)
``live_layers`` says how many layers' activations are held at the peak: all of them under FSDP; under a
1F1B pipeline the first stage holds min(PP, micro-batches) micro-batches of its L/PP layers (Korthikanti
Sec. 4.2.3), times 1 + (PP-1)/(PP*v) with v interleaved chunks (Narayanan et al. 2021, Sec. 2.2.2).
The last stage also holds the fp32 logits, 4*s*b*V/t bytes (vocabulary-parallel cross entropy).
"""

import polars as pl

from workbook.model.units import HEAD_DIM  # heads = attention_dim / HEAD_DIM; enters only the no-recompute term

WEIGHT_BYTES = 2
GRAD_BYTES = 2
OPTIMIZER_BYTES = 12
STATE_BYTES = WEIGHT_BYTES + GRAD_BYTES + OPTIMIZER_BYTES  # 16 B a parameter before ZeRO shards any of it
LOGIT_BYTES = 4  # fp32 logits for the loss
ACTIVATION_BYTES_PER_ELEMENT_COEFF = {"selective": 34, "full": 2}
FSDP_PREFETCH_LAYERS = 2  # FSDP gathers the current and the next layer's full weights

COMPONENTS = ("weights", "gradients", "optimizer", "activations", "overhead")


def sharded_bytes_per_param(zero_stage: int) -> int:
    """Bytes per parameter that ZeRO ``zero_stage`` spreads over the data-parallel ranks."""
    return WEIGHT_BYTES * (zero_stage >= 3) + GRAD_BYTES * (zero_stage >= 2) + OPTIMIZER_BYTES * (zero_stage >= 1)


def model_state_bytes(slice_params, shards, zero_stage) -> dict:
    """Bytes per chip of weights, gradients and optimizer states of a ``slice_params`` slice under ZeRO
    (``zero_stage`` a number or a polars expression)."""

    def part(level):
        if isinstance(zero_stage, pl.Expr):
            return pl.when(zero_stage >= level).then(slice_params / shards).otherwise(slice_params)
        return slice_params / shards if zero_stage >= level else slice_params

    return {
        "weights": WEIGHT_BYTES * part(3),
        "gradients": GRAD_BYTES * part(2),
        "optimizer": OPTIMIZER_BYTES * part(1),
    }


def activation_bytes(seq_len, micro_batch, hidden_dim, attention_dim, live_layers, tp, recompute: str):
    """Bytes per chip of stored activations (Korthikanti 2022, Table 2); ``seq_len`` is the chip's share."""
    tokens_x_hidden = seq_len * micro_batch * hidden_dim / tp
    if recompute == "none":
        heads = attention_dim / HEAD_DIM
        return live_layers * tokens_x_hidden * (34 + 5 * heads * seq_len / hidden_dim)
    stored = live_layers * ACTIVATION_BYTES_PER_ELEMENT_COEFF[recompute] * tokens_x_hidden
    if recompute == "full":  # the layer being recomputed holds its full (selective) activations
        stored = stored + ACTIVATION_BYTES_PER_ELEMENT_COEFF["selective"] * tokens_x_hidden
    return stored


def logits_bytes(seq_len, micro_batch, vocab_size, tp):
    """fp32 logits of one micro-batch on the last pipeline stage, split over the tensor-parallel ranks."""
    return LOGIT_BYTES * seq_len * micro_batch * vocab_size / tp


def overhead_bytes(layer_params, tp, zero_stage: int, framework_overhead_bytes):
    """Runtime context and buffers, plus FSDP's gathered layers when weights are sharded (stage 3)."""
    gathered = FSDP_PREFETCH_LAYERS * WEIGHT_BYTES * layer_params / tp if zero_stage >= 3 else 0.0
    return framework_overhead_bytes + gathered
