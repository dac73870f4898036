"""Memory per chip for training: model states (ZeRO/FSDP), activations (Korthikanti 2022), overhead.

Model states, mixed-precision Adam (Rajbhandari et al. 2019, ZeRO, Sec. 3.1): 2 B bf16 weights +
2 B bf16 gradients + 12 B fp32 optimizer states (master weights, momentum, variance) = 16 B/param.
ZeRO stage k shards, across all ``chips`` (data x tensor parallel), the optimizer (k >= 1), the
gradients (k >= 2) and the weights (k = 3, i.e. FSDP); unsharded states are split only by the
tensor-parallel degree ``tp``. Check: 7.5B params on 64 chips -> 120 / 31.4 / 16.6 / 1.9 GB for
stages 0-3 (ZeRO paper, Fig. 1).

Activations per layer with tensor + sequence parallelism of degree t (Korthikanti et al. 2022,
"Reducing Activation Recomputation", Table 2), s = sequence, b = micro-batch, h = hidden, a = heads:
  none:      s*b*h/t * (34 + 5*a*s/h)
  selective: 34*s*b*h/t          (the attention score term is recomputed; FlashAttention does the same)
  full:      2*s*b*h/t           (only each layer's input is kept; one layer is re-materialised at a time)
Every layer's activations are live at the peak (FSDP, or the first stage of a 1F1B pipeline).
"""

from workbook.model.units import HEAD_DIM  # heads = attention_dim / HEAD_DIM; enters only the no-recompute term

WEIGHT_BYTES = 2
GRAD_BYTES = 2
OPTIMIZER_BYTES = 12
ACTIVATION_BYTES_PER_ELEMENT_COEFF = {"selective": 34, "full": 2}
FSDP_PREFETCH_LAYERS = 2  # FSDP gathers the current and the next layer's full weights

COMPONENTS = ("weights", "gradients", "optimizer", "activations", "overhead")


def model_state_bytes(params, chips, tp, zero_stage: int) -> dict:
    """Bytes per chip of weights, gradients and optimizer states under ZeRO ``zero_stage``."""

    def shard(level):
        return chips if zero_stage >= level else tp

    return {
        "weights": WEIGHT_BYTES * params / shard(3),
        "gradients": GRAD_BYTES * params / shard(2),
        "optimizer": OPTIMIZER_BYTES * params / shard(1),
    }


def activation_bytes(seq_len, micro_batch, hidden_dim, attention_dim, n_layers, tp, recompute: str):
    """Bytes per chip of stored activations for one micro-batch (Korthikanti 2022, Table 2)."""
    tokens_x_hidden = seq_len * micro_batch * hidden_dim / tp
    if recompute == "none":
        heads = attention_dim / HEAD_DIM
        return n_layers * tokens_x_hidden * (34 + 5 * heads * seq_len / hidden_dim)
    stored = n_layers * ACTIVATION_BYTES_PER_ELEMENT_COEFF[recompute] * tokens_x_hidden
    if recompute == "full":  # the layer being recomputed holds its full (selective) activations
        stored = stored + ACTIVATION_BYTES_PER_ELEMENT_COEFF["selective"] * tokens_x_hidden
    return stored


def overhead_bytes(params, n_layers, tp, zero_stage: int, framework_overhead_bytes):
    """Runtime context and buffers, plus FSDP's gathered layers when weights are sharded (stage 3)."""
    gathered = FSDP_PREFETCH_LAYERS * WEIGHT_BYTES * params / n_layers / tp if zero_stage >= 3 else 0.0
    return framework_overhead_bytes + gathered


def per_chip_breakdown(
    params,
    chips,
    tp,
    zero_stage,
    seq_len,
    micro_batch,
    hidden_dim,
    attention_dim,
    n_layers,
    recompute,
    framework_overhead_bytes,
) -> dict:
    """All components in bytes per chip; their sum is the memory each chip needs."""
    parts = model_state_bytes(params, chips, tp, zero_stage)
    parts["activations"] = activation_bytes(seq_len, micro_batch, hidden_dim, attention_dim, n_layers, tp, recompute)
    parts["overhead"] = overhead_bytes(params, n_layers, tp, zero_stage, framework_overhead_bytes)
    return parts


def min_chips_to_fit(params, usable_bytes, zero_stage: int, fixed_bytes):
    """Chip count (fractional) at which memory fits: sharded states fall as 1/chips, the rest does not.

    chips >= sharded_bytes_total / (usable - fixed). Returns a value <= 0 when the fixed part alone
    exceeds the usable memory (no chip count fits); the caller turns that into a reason.
    """
    sharded_per_param = (
        WEIGHT_BYTES * (zero_stage >= 3) + GRAD_BYTES * (zero_stage >= 2) + OPTIMIZER_BYTES * (zero_stage >= 1)
    )
    return sharded_per_param * params / (usable_bytes - fixed_bytes)
