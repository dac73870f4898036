"""The model being trained or served: a decoder-only transformer's shape (one spec for both phases)."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from workbook.errors import InputError
from workbook.errors import check_number as _number

# GPT-3 175B (12,288 / 96) and Llama 3 8B (4,096 / 32) both have hidden/layers = 128; Kaplan et al.
# (2020) found loss nearly flat over a wide band of aspect ratios, so this is a safe default shape.
ASPECT_RATIO = 128
PARAMS_PER_LAYER_PER_HIDDEN_SQ = 12  # 4h^2 attention + 8h^2 MLP per layer (GPT-style, ignoring embeddings)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer. ``active_params`` < ``params`` for a mixture of experts.

    ``n_layers`` and ``attention_dim`` (heads x head size) feed the attention FLOPs and the
    activation memory; ``hidden_dim`` feeds activation memory. Use :meth:`from_params` for a
    default GPT-style shape when only the parameter count is known.
    """

    params: float
    active_params: float
    n_layers: int
    hidden_dim: int
    attention_dim: int
    seq_len: int = 4096

    def __post_init__(self):
        _number("params", self.params, 1e6, 1e14)
        _number("active_params", self.active_params, 1e6, 1e14)
        if self.active_params > self.params:
            raise InputError("active_params", f"must not exceed params ({self.params:g}), got {self.active_params:g}")
        _number("n_layers", self.n_layers, 1, 1000, integer=True)
        _number("hidden_dim", self.hidden_dim, 64, 1_000_000, integer=True)
        _number("attention_dim", self.attention_dim, 64, 1_000_000, integer=True)
        _number("seq_len", self.seq_len, 128, 10_000_000, integer=True)

    @classmethod
    def from_params(cls, params: float, active_params: Optional[float] = None, seq_len: int = 4096) -> "ModelSpec":
        """Default shape: params_active = 12 * L * h^2 with h = 128 * L (GPT-3 aspect ratio), h rounded to 128."""
        _number("params", params, 1e6, 1e14)
        active = params if active_params is None else active_params
        _number("active_params", active, 1e6, 1e14)
        n_layers = max(1, round((active / (PARAMS_PER_LAYER_PER_HIDDEN_SQ * ASPECT_RATIO**2)) ** (1 / 3)))
        hidden = max(128, round(math.sqrt(active / (PARAMS_PER_LAYER_PER_HIDDEN_SQ * n_layers)) / 128) * 128)
        return cls(
            params=float(params),
            active_params=float(active),
            n_layers=n_layers,
            hidden_dim=hidden,
            attention_dim=hidden,
            seq_len=seq_len,
        )
