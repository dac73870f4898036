"""Training and inference FLOPs (model FLOPs, as used for MFU).

Per token (PaLM, Chowdhery et al. 2022, App. B): 6 * N_active for the matmuls (forward 2 + backward 4,
1 FMA = 2 FLOPs) plus 12 * L * d_attn * s for attention scores and values, non-causal. With a causal
mask half of those products can be skipped; ``causal=True`` halves the attention term (the convention
MaxText adopted in PR #1988; Megatron and NVIDIA's DGXC recipes count it non-causal). Recomputed
activations are hardware FLOPs, not model FLOPs, and are not counted here.
"""

from workbook.model.units import FMA_FLOPS

MATMUL_PASSES = 3  # forward, backward w.r.t. activations, backward w.r.t. weights
ATTENTION_COEFF = 12  # 2 matmuls (QK^T, AV) x 2 FLOPs/FMA x 3 passes
FORWARD_ATTENTION_COEFF = ATTENTION_COEFF // MATMUL_PASSES  # inference runs the forward pass only


def attention_flops_per_token(n_layers, attention_dim, seq_len, causal: bool = True):
    """Attention score and value FLOPs per trained token: 12*L*d_attn*s, halved if causal."""
    attention = ATTENTION_COEFF * n_layers * attention_dim * seq_len
    return attention / 2 if causal else attention


def flops_per_token(active_params, n_layers, attention_dim, seq_len, causal: bool = True):
    """Model FLOPs to train on one token: 6*N + 12*L*d_attn*s (halved attention if causal)."""
    return FMA_FLOPS * MATMUL_PASSES * active_params + attention_flops_per_token(
        n_layers, attention_dim, seq_len, causal
    )


def training_flops(active_params, tokens, n_layers, attention_dim, seq_len, causal: bool = True):
    """Total model FLOPs for ``tokens`` training tokens."""
    return flops_per_token(active_params, n_layers, attention_dim, seq_len, causal) * tokens


def prefill_attention_flops(n_layers, attention_dim, prompt_tokens_squared):
    """Attention FLOPs of prefilling a prompt of P tokens, causal: 4 L d_attn P^2 / 2 (token i attends to i
    tokens). ``prompt_tokens_squared`` is P^2, or E[P^2] over a mix of prompts. Quadratic: at 2k tokens on a 70B
    model it adds 2% to the 2 N P of the matmuls, at 32k 30%, at 128k 120%."""
    return FORWARD_ATTENTION_COEFF * n_layers * attention_dim * prompt_tokens_squared / 2


def decode_attention_flops(n_layers, attention_dim, context_tokens):
    """Attention FLOPs of one decoded token over a context of ``context_tokens``: 4 L d_attn x context."""
    return FORWARD_ATTENTION_COEFF * n_layers * attention_dim * context_tokens
