"""A served model's KV cache and decode attention come from its own attention: its KV heads, or its latent."""

import json

import polars as pl
import pytest

from workbook import serving
from workbook.errors import InputError
from workbook.model import serving as sv
from workbook.model.spec import ModelSpec
from workbook.serving import options, published, replica


def _serve(model, **kw):
    return serving.ServeScenario(model=model, requests_per_s=1, **kw)


def _from_config(tmp_path, **keys):
    """A model from a config.json of these keys (a 32,000-token vocabulary and 11,008-wide MLP unless given)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"intermediate_size": 11008, "vocab_size": 32000, **keys}))
    return ModelSpec.from_hf_config(path)


def test_latent_attention_caches_its_latent_not_keys_and_values():
    # DeepSeek-V3: 61 layers, kv_lora_rank 512 + qk_rope_head_dim 64 cached a token and layer (config.json)
    s = _serve(ModelSpec.preset("deepseek-v3"), kv_precision="fp8")
    assert s.latent_attention and s.kv_bytes_per_token == 61 * 576 * 1.0
    # decoded absorbed: 128 heads score the 576-wide latent and rotary key, then sum the 512-wide latent
    assert 4 * s.decode_attention_dim == 2 * 128 * 576 + 2 * 128 * 512
    bf16 = _serve(ModelSpec.preset("deepseek-v3"), kv_precision="bf16")
    assert bf16.kv_bytes_per_token == 2 * s.kv_bytes_per_token
    # a stated KV-head count replaces the latent (an engine that expands it, or a what-if)
    heads = _serve(ModelSpec.preset("deepseek-v3"), kv_precision="fp8", n_kv_heads=8)
    assert not heads.latent_attention and heads.kv_bytes_per_token == 2 * 61 * 8 * 128
    assert heads.decode_attention_dim == ModelSpec.preset("deepseek-v3").attention_dim


def test_kv_heads_are_the_models_own_where_its_shape_states_them(tmp_path):
    llama = _serve(ModelSpec.preset("llama3-70b"), kv_precision="bf16")
    assert llama.kv_heads == 8 and llama.kv_bytes_per_token == 2 * 80 * 8 * 128 * 2
    # a config with no num_key_value_heads is multi-head attention: every head keeps its keys and values
    mha = _serve(_from_config(tmp_path, hidden_size=4096, num_hidden_layers=32, num_attention_heads=32))
    assert mha.kv_heads == 32
    # a shape derived from a parameter count states none: grouped-query attention's 8
    assert _serve(ModelSpec.from_params(70e9)).kv_heads == 8


def test_a_config_with_latent_attention_is_read_as_such(tmp_path):
    # DeepSeek-V3's config.json, the keys the shape reads
    spec = _from_config(
        tmp_path,
        hidden_size=7168,
        num_hidden_layers=61,
        num_attention_heads=128,
        num_key_value_heads=128,
        intermediate_size=18432,
        moe_intermediate_size=2048,
        n_routed_experts=256,
        num_experts_per_tok=8,
        n_shared_experts=1,
        first_k_dense_replace=3,
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
        vocab_size=129280,
    )
    assert (spec.kv_lora_rank, spec.qk_rope_dim) == (512, 64) and "latent attention" in spec.describe()
    # its heads are 128 wide (v_head_dim), not hidden / heads (56): DeepSeek-V3's own config loads, as its preset
    assert spec.attention_dim == ModelSpec.preset("deepseek-v3").attention_dim == 128 * 128
    assert spec.params == pytest.approx(671e9, rel=0.1)
    with pytest.raises(InputError, match="kv_lora_rank"):
        ModelSpec(1e9, 1e9, 8, 1024, 1024, kv_lora_rank=4096)


def test_the_replica_holds_each_sequence_at_the_latents_size():
    # the same DeepSeek-V3 traffic on H200s: each sequence in flight holds 576 values a layer, not 8 heads' 2 x 1,024
    # (attention run data-parallel, so that both caches split over every chip)
    def per_sequence(**kw):
        s = _serve(
            ModelSpec.preset("deepseek-v3"),
            accelerators=("h200",),
            pricing=("on-demand",),
            attention_data_parallel=True,
            **kw,
        )
        row = serving.evaluate_serving(s).row(0, named=True)
        return row["kv_cache_gb"] / row["sequences"]

    assert per_sequence() / per_sequence(n_kv_heads=8) == pytest.approx(576 / (2 * 8 * 128))


def _kv_per_chip(cat, eff, model, accelerator, **kw):
    """GB of one sequence's KV cache on each chip, per tensor-parallel degree of a replica within one node."""
    s = _serve(model, accelerators=(accelerator,), **kw)
    reps = options._replicas(cat, s, eff).filter(pl.col("pipeline_parallel") == 1)
    return dict(reps.select("tensor_parallel", "kv_gb_per_sequence").iter_rows())


def test_tensor_parallel_attention_keeps_the_whole_latent_on_every_chip(cat, eff):
    # DeepSeek-V3's one latent a token is read by every head: each chip of a tensor-parallel replica holds all of it
    # (SGLang, vLLM: copied on every rank), unless attention runs data-parallel, each chip its own sequences
    tp = _kv_per_chip(cat, eff, ModelSpec.preset("deepseek-v3"), "mi300x")
    dp = _kv_per_chip(cat, eff, ModelSpec.preset("deepseek-v3"), "mi300x", attention_data_parallel=True)
    assert len(tp) > 1 and len(set(tp.values())) == 1, tp
    assert all(dp[t] == pytest.approx(tp[t] / t) for t in tp), (tp, dp)


def test_a_cache_splits_over_no_more_chips_than_its_kv_heads(cat, eff):
    # Llama 3.1 405B has 8 KV heads: at 16 chips a replica, each KV head's cache is on two chips
    per_chip = _kv_per_chip(cat, eff, ModelSpec.preset("llama3-405b"), "gb200")
    assert per_chip[4] == pytest.approx(2 * per_chip[8]) and per_chip[16] == pytest.approx(per_chip[8]), per_chip


def test_a_published_row_with_latent_attention_is_read_as_its_model(cat):
    # MLPerf v5.1's DeepSeek-R1 rows state the latent (kv_lora_rank 512 + rotary 64), 128 heads of 128 (attention
    # 16,384 wide, where the hidden size is 7,168) and the answers' p99 (the benchmark's 20,000-token cap)
    run = cat.inference_runs.filter(pl.col("run_id") == "mlperf51-b200x8-deepseek-r1-offline").row(0, named=True)
    s = published.scenario(run)
    assert s.latent_attention and s.kv_bytes_per_token == 61 * 576 * 1.0  # FP8 cache
    assert s.model.attention_dim == 16_384 and s.decode_attention_dim == 128 * (512 + 32)
    assert s.output_tokens_p99 == 20_000
    assert s.attention_data_parallel  # NVIDIA's config: enable_attention_dp, each GPU its own sequences' cache
    # a long answer stays in flight longer: the decode steps' mean context is far past prompt + answer / 2
    spread = sv.decode_context_tokens(s.prompt_tokens, s.output_tokens, replica.output_second_moment(s))
    assert spread > 1.4 * (s.prompt_tokens + s.output_tokens / 2)
    # a dense row keeps plain keys and values, its attention as wide as its hidden size, every answer one length
    dense = cat.inference_runs.filter(pl.col("run_id") == "mlperf51-b200x8-llama2-70b-offline").row(0, named=True)
    s = published.scenario(dense)
    assert not s.latent_attention and s.kv_heads == 8 and s.model.attention_dim == 8192
    assert s.output_tokens_p99 is None and not s.attention_data_parallel
