"""The model being trained or served: a decoder-only transformer's shape (one spec for both phases).

A spec is either stated (a preset, a Hugging Face ``config.json``, or every field given) or derived from a
parameter count alone (:meth:`ModelSpec.from_params`, GPT-3 aspect ratio; ``shape_basis`` says which).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Optional

from workbook.errors import InputError
from workbook.errors import check_number as _number
from workbook.model.units import HEAD_DIM

# GPT-3 175B (12,288 / 96) and Llama 3 8B (4,096 / 32) both have hidden/layers = 128; Kaplan et al.
# (2020) found loss nearly flat over a wide band of aspect ratios, so this is a safe default shape.
ASPECT_RATIO = 128
PARAMS_PER_LAYER_PER_HIDDEN_SQ = 12  # 4h^2 attention + 8h^2 MLP per layer (GPT-style, ignoring embeddings)
# The longest training sequence the planner takes (2^20 tokens), a judgement: it splits a sequence over at most 32
# chips (parallelism.CP_DEGREES), so at this length each chip already holds 32k tokens of every layer's activations,
# 16 times the 2k per chip of the recipes it is calibrated on (8k sequences split at most 2 ways:
# parallelism.MIN_TOKENS_PER_CP_RANK); past it the memory and step model would be extrapolation.
MAX_SEQ_LEN = 2**20
DEFAULT_VOCAB = 32_000  # Llama 1/2, Mistral; used when only a parameter count is known
GATED_MLP_MATRICES = 3  # SwiGLU: gate, up, down projections (Llama, Mistral, DeepSeek)
PLAIN_MLP_MATRICES = 2  # GELU MLP: up, down (GPT-2/3, OPT, BLOOM, GPT-NeoX)
PLAIN_MLP_TYPES = ("gpt2", "gpt_neox", "opt", "bloom", "gpt_bigcode", "falcon", "phi")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer. ``active_params`` < ``params`` for a mixture of experts.

    ``n_layers``, ``hidden_dim`` and ``attention_dim`` (heads x head size) feed the FLOPs, the activation
    memory and the tensor-parallel traffic; ``n_kv_heads`` the context-parallel traffic and a served model's KV
    cache; ``n_experts`` and ``experts_per_token`` the expert-parallel split and its all-to-all; ``vocab_size`` the
    logits memory. Multi-head latent attention (DeepSeek-V2/V3, Kimi K2: ``kv_lora_rank``, ``qk_rope_dim``) caches
    one latent of kv_lora_rank + qk_rope_dim values a token and layer in place of keys and values.
    """

    params: float
    active_params: float
    n_layers: int
    hidden_dim: int
    attention_dim: int
    seq_len: int = 4096
    n_kv_heads: Optional[int] = None  # None: as many as query heads (multi-head attention)
    ffn_dim: Optional[int] = None  # None: 4 x hidden
    n_experts: int = 1
    experts_per_token: int = 1
    vocab_size: int = DEFAULT_VOCAB
    shape_basis: str = "stated"
    kv_lora_rank: Optional[int] = None  # multi-head latent attention: the cached latent's width (None: none)
    qk_rope_dim: int = 0  # and its decoupled rotary key, cached beside it
    # the longest sequence (prompt + answer) the model was built to read: its config's max_position_embeddings
    # (None: not stated, no limit checked)
    context_tokens: Optional[int] = None

    def __post_init__(self):
        _number("params", self.params, 1e6, 1e14)
        _number("active_params", self.active_params, 1e6, 1e14)
        if self.active_params > self.params:
            raise InputError("active_params", f"must not exceed params ({self.params:g}), got {self.active_params:g}")
        _number("n_layers", self.n_layers, 1, 1000, integer=True)
        _number("hidden_dim", self.hidden_dim, 64, 1_000_000, integer=True)
        _number("attention_dim", self.attention_dim, 64, 1_000_000, integer=True)
        _number("seq_len", self.seq_len, 128, MAX_SEQ_LEN, integer=True)
        if self.n_kv_heads is not None:
            _number("n_kv_heads", self.n_kv_heads, 1, self.n_heads, integer=True)
        if self.ffn_dim is not None:
            _number("ffn_dim", self.ffn_dim, 64, 10_000_000, integer=True)
        _number("n_experts", self.n_experts, 1, 100_000, integer=True)
        _number("experts_per_token", self.experts_per_token, 1, self.n_experts, integer=True)
        _number("vocab_size", self.vocab_size, 2, 10_000_000, integer=True)
        if self.kv_lora_rank is not None:
            _number("kv_lora_rank", self.kv_lora_rank, 1, self.attention_dim, integer=True)
        _number("qk_rope_dim", self.qk_rope_dim, 0, 4096, integer=True)
        if self.context_tokens is not None:
            _number("context_tokens", self.context_tokens, 128, 100_000_000, integer=True)

    @property
    def n_heads(self) -> int:
        return max(1, self.attention_dim // HEAD_DIM)

    @property
    def kv_dim(self) -> int:
        """Width of the keys (= values): KV heads x head size."""
        return (self.n_kv_heads or self.n_heads) * (self.attention_dim // self.n_heads)

    @property
    def is_moe(self) -> bool:
        """A mixture of experts: fewer parameters active per token than in the model."""
        return self.active_params < self.params

    @property
    def expert_params(self) -> float:
        """Parameters in routed experts (sharded by expert parallelism); 0 for a dense model.

        total = shared + E and active = shared + E x k / n, so E = (total - active) x n / (n - k); with the
        expert count unknown (n = 1 stated for an MoE), E >= total - active is used (a lower bound).
        """
        routed = self.params - self.active_params
        if routed <= 0:
            return 0.0
        if self.n_experts > self.experts_per_token:
            return min(self.params, routed * self.n_experts / (self.n_experts - self.experts_per_token))
        return routed

    def columns(self) -> dict:
        """The shape as the columns of a job row (what the planner and the FLOP count read)."""
        return {
            "params": self.params,
            "active_params": self.active_params,
            "expert_params": self.expert_params,
            "n_layers": self.n_layers,
            "hidden_dim": self.hidden_dim,
            "attention_dim": self.attention_dim,
            "kv_dim": self.kv_dim,
            "n_experts": self.n_experts,
            "experts_per_token": self.experts_per_token,
            "vocab_size": self.vocab_size,
            "seq_len": self.seq_len,
        }

    def with_seq_len(self, seq_len: int) -> "ModelSpec":
        return dataclasses.replace(self, seq_len=seq_len)

    def describe(self) -> str:
        """One line: the shape and where it comes from."""
        moe = f", {self.n_experts} experts ({self.experts_per_token} per token)" if self.n_experts > 1 else ""
        return (
            f"{self.params / 1e9:.3g}B params ({self.active_params / 1e9:.3g}B active), {self.n_layers} layers, "
            f"hidden {self.hidden_dim}, {self.n_heads} heads ({self.kv_words()}){moe}, "
            f"seq {self.seq_len}; shape {self.shape_basis}"
        )

    def kv_words(self) -> str:
        """ "8 KV", or the latent attention's cached width."""
        if self.kv_lora_rank is not None:
            return f"latent attention, {self.kv_lora_rank} + {self.qk_rope_dim} cached a token"
        return f"{self.n_kv_heads or self.n_heads} KV"

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
            shape_basis="derived from the parameter count (GPT-3 aspect ratio hidden = 128 x layers)",
        )

    @classmethod
    def preset(cls, name: str, seq_len: Optional[int] = None) -> "ModelSpec":
        """A well-known shape by name (see :data:`PRESETS`); ``generic-<N>`` is a dense model of N params."""
        if name.startswith("generic-"):
            try:
                params = float(name.removeprefix("generic-"))
            except ValueError:
                raise InputError("model", f"generic preset needs a number, e.g. generic-7e9, got {name!r}") from None
            try:
                return cls.from_params(params, seq_len=4096 if seq_len is None else seq_len)
            except InputError as err:  # the user typed the size into the preset's name, not --params
                if err.field != "params":
                    raise
                raise InputError("model", f"generic-<params>: the size {err.message}") from None
        if name not in PRESETS:
            raise InputError("model", f"unknown preset {name!r}; accepted: {', '.join(PRESETS)}, generic-<params>")
        spec = PRESETS[name]
        return spec if seq_len is None else spec.with_seq_len(seq_len)

    @classmethod
    def from_hf_config(cls, path, seq_len: Optional[int] = None) -> "ModelSpec":
        """Shape and parameter count from a Hugging Face ``config.json`` on disk (Llama/Mistral/Mixtral/Qwen/
        DeepSeek-style keys). Multi-head latent attention's parameters are counted as plain attention's (approximate);
        its cached latent (``kv_lora_rank`` + ``qk_rope_head_dim``) sizes a served model's KV cache."""
        try:
            config = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise InputError("config", f"cannot read a JSON config from {path}: {err}") from None
        if not isinstance(config, dict):
            raise InputError("config", f"{path} is not a JSON object")

        def key(*names, default=None):
            for n in names:
                if isinstance(config.get(n), (int, float)) and not isinstance(config.get(n), bool):
                    return config[n]
            if default is None:
                raise InputError("config", f"{path} lacks {' / '.join(names)}")
            return default

        hidden = int(key("hidden_size", "n_embd", "d_model"))
        layers = int(key("num_hidden_layers", "n_layer", "num_layers"))
        heads = int(key("num_attention_heads", "n_head"))
        kv_heads = int(key("num_key_value_heads", default=heads))
        head_dim = int(key("head_dim", "v_head_dim", default=hidden // heads))  # MLA: the value head (128)
        vocab = int(key("vocab_size"))
        ffn = int(key("intermediate_size", "n_inner", "ffn_hidden_size", default=4 * hidden))
        experts = int(key("num_local_experts", "n_routed_experts", "num_experts", default=1))
        per_token = int(key("num_experts_per_tok", "moe_topk", default=1)) if experts > 1 else 1
        moe_ffn = int(key("moe_intermediate_size", default=ffn))
        shared = int(key("n_shared_experts", default=0))
        latent = int(key("kv_lora_rank", default=0)) or None  # multi-head latent attention (DeepSeek-V2 style)
        rope = int(key("qk_rope_head_dim", default=0)) if latent else 0
        context = int(key("max_position_embeddings", default=0)) or None
        dense_layers = min(layers, int(key("first_k_dense_replace", default=0))) if experts > 1 else layers
        matrices = PLAIN_MLP_MATRICES if config.get("model_type") in PLAIN_MLP_TYPES else GATED_MLP_MATRICES
        attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
        dense_mlp = matrices * hidden * ffn
        expert_mlp = matrices * hidden * moe_ffn
        moe_layers = layers - dense_layers
        embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings", False) else 2)
        common = embeddings + layers * attention + dense_layers * dense_mlp + moe_layers * shared * expert_mlp
        total = common + moe_layers * experts * expert_mlp
        active = common + moe_layers * per_token * expert_mlp if experts > 1 else total
        return cls(
            params=float(total),
            active_params=float(active),
            n_layers=layers,
            hidden_dim=hidden,
            attention_dim=heads * head_dim,
            seq_len=seq_len or 4096,
            n_kv_heads=kv_heads,
            ffn_dim=ffn,
            n_experts=experts,
            experts_per_token=per_token,
            vocab_size=vocab,
            shape_basis=f"from {Path(path).name}",
            kv_lora_rank=latent,
            qk_rope_dim=rope,
            context_tokens=context,
        )


def _llama(params, layers, hidden, heads, ffn, seq_len, basis):
    return ModelSpec(params, params, layers, hidden, heads * HEAD_DIM, seq_len, 8, ffn, 1, 1, 128_256, basis)


LLAMA3 = "Llama Team 2024 'The Llama 3 Herd of Models' (arXiv:2407.21783) Table 3"
_SHAPES: dict[str, ModelSpec] = {
    "llama3-8b": _llama(8.03e9, 32, 4096, 32, 14_336, 8192, LLAMA3),
    "llama3-70b": _llama(70.6e9, 80, 8192, 64, 28_672, 8192, LLAMA3),
    "llama3-405b": _llama(405.9e9, 126, 16_384, 128, 53_248, 8192, LLAMA3),
    # mistralai/Mixtral-8x7B-v0.1 config.json; 46.7B total / 12.9B active (Mistral release post)
    "mixtral-8x7b": ModelSpec(
        46.7e9, 12.9e9, 32, 4096, 4096, 4096, 8, 14_336, 8, 2, 32_000, "Mixtral-8x7B-v0.1 config.json"
    ),
    # deepseek-ai/DeepSeek-V3 config.json and report (arXiv:2412.19437): 671B / 37B active, 61 layers,
    # hidden 7168, 128 heads, 256 routed experts (8 per token) + 1 shared; MLA (kv_lora_rank 512, qk_rope_head_dim
    # 64) caches 576 values a token and layer; in training it is treated as 128 KV heads x 128.
    "deepseek-v3": ModelSpec(
        671e9, 37e9, 61, 7168, 16_384, 4096, 128, 18_432, 256, 8, 129_280, "DeepSeek-V3 report + config.json", 512, 64
    ),
    # deepseek-ai/DeepSeek-V2 config.json and report (arXiv:2405.04434): 236B / 21B active, 60 layers, hidden 5120,
    # 128 heads, 160 routed experts (6 per token) + 2 shared, pre-trained at 4K; MLA as DeepSeek-V3's (512 + 64).
    "deepseek-v2": ModelSpec(
        236e9, 21e9, 60, 5120, 16_384, 4096, 128, 12_288, 160, 6, 102_400, "DeepSeek-V2 report + config.json", 512, 64
    ),
    # meta-llama/Llama-4-Scout-17B-16E and -Maverick-17B-128E config.json (text_config): 48 layers, hidden 5120,
    # 40 heads of 128 (8 KV), expert FFN 8192, vocab 202,048; Scout 16 experts in every layer, Maverick 128 in every
    # other layer (counted here as 128 per layer: the all-to-all is overstated by at most 2x); 1 routed expert per
    # token + 1 shared. 109B / 400B total, 17B active (model card). Pre-training sequence length not published:
    # 8,192 as Llama 3.
    "llama4-scout": ModelSpec(
        109e9, 17e9, 48, 5120, 5120, 8192, 8, 8192, 16, 1, 202_048, "Llama-4-Scout-17B-16E config.json + model card"
    ),
    "llama4-maverick": ModelSpec(
        400e9, 17e9, 48, 5120, 5120, 8192, 8, 8192, 128, 1, 202_048, "Llama-4-Maverick-17B-128E config.json + card"
    ),
    # jetmoe/jetmoe-8b (github myshell-ai/JetMoE configuration_jetmoe.py and README): 24 blocks, hidden 2048,
    # 16 KV heads x 128, FFN 5632, 8 experts (2 per token) in both attention and MLP, 8B / 2.2B active.
    "jetmoe-8b": ModelSpec(8e9, 2.2e9, 24, 2048, 2048, 4096, 16, 5632, 8, 2, 32_000, "JetMoE configuration + README"),
}

# Context windows: the longest prompt + answer each model reads, its config.json max_position_embeddings.
CONTEXT_TOKENS = {
    "llama3-8b": 131_072,  # meta-llama/Llama-3.1-8B, -70B, -405B config.json (the model card's "128k")
    "llama3-70b": 131_072,
    "llama3-405b": 131_072,
    "mixtral-8x7b": 32_768,  # mistralai/Mixtral-8x7B-v0.1 config.json
    "deepseek-v3": 163_840,  # deepseek-ai/DeepSeek-V3 (and R1) config.json: YaRN factor 40 x 4,096
    "deepseek-v2": 131_072,  # DeepSeek-V2 report (arXiv:2405.04434): pre-trained at 4K, extended to 128K with YaRN
    "llama4-scout": 10_485_760,  # meta-llama/Llama-4-Scout-17B-16E config.json (the model card's "10M")
    "llama4-maverick": 1_048_576,  # meta-llama/Llama-4-Maverick-17B-128E config.json (the model card's "1M")
    "jetmoe-8b": 4096,  # jetmoe/jetmoe-8b config.json
}
PRESETS: dict[str, ModelSpec] = {
    name: dataclasses.replace(shape, context_tokens=CONTEXT_TOKENS[name]) for name, shape in _SHAPES.items()
}

# What people call each preset (the app's model menu, the cards, the brief).
PRESET_NAMES = {
    "llama3-8b": "Llama 3.1 8B",
    "llama3-70b": "Llama 3.1 70B",
    "llama3-405b": "Llama 3.1 405B",
    "mixtral-8x7b": "Mixtral 8x7B",
    "deepseek-v3": "DeepSeek-V3 / R1",
    "deepseek-v2": "DeepSeek-V2",
    "llama4-scout": "Llama 4 Scout",
    "llama4-maverick": "Llama 4 Maverick",
    "jetmoe-8b": "JetMoE 8B",
}


def preset_key(spec: ModelSpec) -> str | None:
    """The preset ``spec`` is, at whatever sequence length; None for any other shape."""
    return next((key for key, p in PRESETS.items() if dataclasses.replace(spec, seq_len=p.seq_len) == p), None)
