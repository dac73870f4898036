"""The parallelism planner against published layouts, the Korthikanti memory formulas, and properties."""

import json
import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbook.errors import InputError
from workbook.model import memory, parallelism
from workbook.training import options
from workbook.training.scenario import Assumptions, ModelSpec, Scenario

LAYOUT = ["tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel"]


def _evaluate(spec, accelerator, tokens=1e12, **kw):
    # A reserved contract: frontier-sized jobs are bought that way (on-demand capacity stops at hundreds of chips).
    s = Scenario(model=spec, tokens=tokens, accelerators=(accelerator,), pricing=("reserved-contract",), **kw)
    return options.evaluate_full(s).unique("accelerator_id")


def test_llama3_405b_on_16k_h100_fits_close_to_meta():
    # Llama 3 paper Table 4: TP8, PP16, CP1, DP128 at 8k; 30.84M GPU-hours for 15.6T tokens.
    row = _evaluate(ModelSpec.from_params(405e9, seq_len=8192), "h100-sxm", 15.6e12, chips=16384).row(0, named=True)
    assert row["feasible"] and row["fits_in_memory"]
    assert row["tensor_parallel"] == 8 and row["pipeline_parallel"] >= 8
    assert row["chip_hours"] == pytest.approx(30.84e6, rel=0.25)


@pytest.mark.parametrize("preset, seq_len", [("llama3-70b", 32_768), ("llama3-8b", 131_072)])
def test_long_context_fits_on_h100_with_context_parallelism(preset, seq_len):
    row = _evaluate(ModelSpec.preset(preset, seq_len), "h100-sxm", days=30).row(0, named=True)
    assert row["feasible"], row["infeasible_reason"]
    assert row["context_parallel"] > 1


def _palm_frame(t, p, c, d, recompute):
    spec = ModelSpec(540.35e9, 540.35e9, 118, 18_432, 48 * 256, 2048, 48, vocab_size=256_000)
    return pl.DataFrame(
        {
            **{k: [v] for k, v in spec.columns().items()},
            "_t": [float(t)],
            "_p": [float(p)],
            "_c": [float(c)],
            "recompute": [recompute],
            "zero_stage": [3],
        }
    )


def test_palm_540b_published_layout_fits_tpu_v4():
    # PaLM: 6,144 TPU v4 (2 pods x 3,072), 12-way model x 256-way data in a pod, no pipeline, rematerialisation;
    # the planner's nearest layout (TP16, FSDP over the rest, full recompute) must fit in 32 GiB.
    frame = _palm_frame(16, 1, 1, 384, "full")
    parts = parallelism._memory({"micro_batch": 1, "framework_overhead_bytes": 2e9}, pl.lit(384.0), pl.lit(8.0))
    total = frame.select(pl.sum_horizontal(list(parts.values()))).item()
    assert total < 34.36e9 * 0.9


def test_activation_memory_is_korthikanti_table_2():
    # GPT-3 175B, s=2048, b=1, h=12288, 96 layers, TP8 with sequence parallelism.
    per_layer = 2048 * 12288 / 8
    assert memory.activation_bytes(2048, 1, 12288, 12288, 96, 8, "selective") == 96 * 34 * per_layer
    assert memory.activation_bytes(2048, 1, 12288, 12288, 96, 8, "full") == 96 * 2 * per_layer + 34 * per_layer
    none = memory.activation_bytes(2048, 1, 12288, 12288, 96, 8, "none")
    assert none == pytest.approx(96 * per_layer * (34 + 5 * 96 * 2048 / 12288))


def _layouts(**kw):
    base = dict(
        model=ModelSpec.from_params(70e9, seq_len=8192),
        tokens=2e12,
        accelerators=("h100-sxm", "tpu-v5p", "b200", "a100-80gb"),
        pricing=("on-demand",),
    )
    base.update(kw)
    return options.evaluate_full(Scenario(**base)).unique("accelerator_id")


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([256, 1024, 4096, 8192]))
def test_every_layout_multiplies_to_the_chip_count(chips):
    frame = _layouts(chips=chips).filter(pl.col("tensor_parallel").is_not_null())
    assert frame.height > 0
    product = pl.col("tensor_parallel") * pl.col("pipeline_parallel") * pl.col("context_parallel")
    assert (frame.select(product * pl.col("data_parallel"))[:, 0] == frame["chips"]).all()


@settings(max_examples=6, deadline=None)
@given(st.sampled_from([7, 30, 90]))
def test_feasible_options_fit_in_hbm(days):
    frame = _layouts(days=days).filter(pl.col("feasible"))
    assert frame.height > 0
    assert (frame["memory_per_chip_bytes"] <= frame["hbm_bytes"] * Assumptions().hbm_usable_fraction).all()


@settings(max_examples=5, deadline=None)
@given(st.sampled_from([1e6, 4e6, 16e6]), st.sampled_from([2, 4]))
def test_more_global_batch_never_fewer_chips_allowed(batch, factor):
    small = _layouts(chips=1024, assumptions=Assumptions(global_batch_tokens=batch)).sort("accelerator_id")
    big = _layouts(chips=1024, assumptions=Assumptions(global_batch_tokens=batch * factor)).sort("accelerator_id")
    assert (big["max_chips_for_batch"] >= small["max_chips_for_batch"]).all()
    assert (big["min_chips_to_fit"].fill_null(0) <= small["min_chips_to_fit"].fill_null(0)).all()


def test_a_small_global_batch_caps_the_chips():
    row = _layouts(chips=8192, assumptions=Assumptions(global_batch_tokens=2**16)).filter(
        pl.col("accelerator_id") == "h100-sxm"
    )
    assert row["infeasible_code"][0] == "batch_too_small"


def test_layout_in_words():
    frame = pl.DataFrame(
        {"tensor_parallel": [8], "pipeline_parallel": [16], "context_parallel": [1], "data_parallel": [128]}
    ).with_columns(expert_parallel=pl.lit(1))
    assert frame.select(parallelism.layout_words()).item() == "TP8 x PP16 x DP128"


def test_hf_config_and_presets(tmp_path):
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    spec = ModelSpec.from_hf_config(path, seq_len=8192)
    assert spec.params == pytest.approx(ModelSpec.preset("llama3-8b").params, rel=0.01)  # 8.03B
    assert spec.kv_dim == 1024 and spec.n_heads == 32
    mixtral = ModelSpec.preset("mixtral-8x7b")
    assert mixtral.expert_params == pytest.approx((46.7e9 - 12.9e9) * 8 / 6)
    with pytest.raises(InputError, match="model"):
        ModelSpec.preset("gpt-17")
    path.write_text("{}")
    with pytest.raises(InputError, match="config"):
        ModelSpec.from_hf_config(path)


def test_scale_out_bandwidth_is_the_sourced_table_column():
    from workbook import catalog

    acc = catalog.load().accelerators
    assert acc["scaleout_bytes_per_s"].null_count() == 0 and (acc["scaleout_basis"].str.len_chars() > 10).all()
    per_chip = dict(zip(acc["accelerator_id"], acc["scaleout_bytes_per_s"], strict=True))
    assert per_chip["h100-sxm"] == 400e9 / 8  # one 400 Gb/s ConnectX-7 per GPU
    assert per_chip["gb300"] == 2 * per_chip["gb200"]  # ConnectX-8 800 Gb/s vs ConnectX-7 400 Gb/s per GPU
    frame = acc.select("accelerator_id", parallelism.scaleout_bytes_per_s().alias("bw"))
    assert frame["bw"].to_list() == acc["scaleout_bytes_per_s"].to_list()


def test_an_experts_states_are_sharded_over_the_ranks_that_hold_it_and_the_fewest_chips_hold_all_states():
    # DeepSeek-V3 (671B, 256 routed experts) on H100: 671B x 16 B of bf16 weights, gradients and fp32 Adam states
    # need at least 671e9 x 16 / (80 GB x 0.9) = 149 chips before activations. The planner said "at least 8 chips
    # needed to fit the model": it split the experts 256 ways at any chip count, and sharded an expert's optimizer
    # over all data-parallel ranks instead of those holding the same experts (d / EP), 256 times too thin.
    row = _evaluate(ModelSpec.preset("deepseek-v3"), "h100-sxm", 14.8e12, days=60).row(0, named=True)
    assert row["feasible"] and row["expert_parallel"] == 256
    assert 149 <= row["min_chips_to_fit"] <= 2 * 149
    t, d = row["tensor_parallel"] * row["pipeline_parallel"], row["data_parallel"] * row["context_parallel"]
    spec = ModelSpec.preset("deepseek-v3")
    experts = spec.columns()["expert_params"]
    dense = spec.params - experts
    optimizer = memory.OPTIMIZER_BYTES * (dense / t / d + experts / (t * 256) / (d / 256))
    assert row["optimizer_gb"] * 1e9 == pytest.approx(optimizer, rel=1e-6)


def _data_parallel_seconds(domain, t, ranks, up=800e9, out=3.125e9, buffer=1e9):
    frame = pl.DataFrame(
        {"scaleup_domain_chips": [float(domain)], "_t": [float(t)], "scaleup_bytes_per_s": [up]}
    ).with_columns(scaleout_bytes_per_s=pl.lit(out))
    return frame.select(parallelism._data_parallel_seconds(pl.lit(buffer), pl.lit(float(ranks)))).item()


def test_data_parallel_traffic_crosses_the_scale_out_network_once_per_domain():
    # Eight H100 per NVLink node, TP8: one rank of each data-parallel group per node, a flat ring over the NICs.
    flat = 1e9 * 127 / 128 / 50e9
    assert _data_parallel_seconds(8, 8, 128, up=900e9, out=50e9) == pytest.approx(flat)
    # TP2: four ranks of the group share a node and its four NICs, so each carries a quarter across nodes.
    tp2 = _data_parallel_seconds(8, 2, 512, up=900e9, out=50e9)
    assert tp2 == pytest.approx(1e9 * (3 / 4 / 450e9 + 127 / 128 / 4 / 50e9))
    # TPU v6e, two 256-chip slices, TP4: 64 ranks per slice reduce over ICI, then 1/64 of the buffer over the DCN.
    tpu = _data_parallel_seconds(256, 4, 128)
    assert tpu == pytest.approx(1e9 * (63 / 64 / 400e9 + 1 / 2 / 64 / 3.125e9))
    assert tpu < 1e9 * 127 / 128 / 3.125e9 / 30  # the flat ring over the DCN would be over 30x slower
    # A group inside one domain never touches the scale-out network.
    assert _data_parallel_seconds(256, 4, 32) == pytest.approx(1e9 * 31 / 32 / 400e9)


def test_a_tpu_multislice_job_shards_data_parallel_within_slices_rather_than_pipelining():
    # 70B on 512 TPU v6e (two 256-chip slices): MaxText shards data-parallel within a slice over ICI and reduces
    # once across slices over the DCN. Charged as one flat ring over the DCN, the planner chose TP4 x PP32 x DP4.
    s = Scenario(model=ModelSpec.from_params(70e9), tokens=2e12, accelerators=("tpu-v6e",), chips=512)
    row = options.evaluate_full(s).row(0, named=True)
    assert row["feasible"] and row["pipeline_parallel"] <= 2 and row["data_parallel"] >= 64
    assert row["exposed_comm_s"] == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 512), st.integers(1, 2**19), st.sampled_from([1, 2, 4]))
def test_the_expert_degree_of_a_whole_layout_divides_the_experts_and_the_ranks(experts, d, c):
    # Megatron's expert groups tile the data x context ranks: Llama 4 Maverick's 128 experts over DP234 x CP2 = 468
    # ranks split 4 ways (the planner said EP128, which does not divide 468).
    frame = pl.LazyFrame({"n_experts": [experts], "_c": [float(c)], "_d": [float(d)]})
    got = parallelism._with_expert_parallel(frame, pl.col("_d")).collect()["_e"].item()
    assert got == math.gcd(experts, d * c)


def _plan_405b(chips, batch):
    # Llama 3.1 405B (126 layers) on H100 at 8k, the given batch (kept: no default to raise)
    s = Scenario(
        model=ModelSpec.preset("llama3-405b"),
        tokens=15.6e12,
        accelerators=("h100-sxm",),
        pricing=("reserved-contract",),
        chips=chips,
        assumptions=Assumptions(global_batch_tokens=batch),
    )
    return options.evaluate_full(s).row(0, named=True)


@pytest.mark.parametrize("batch", [2**21, 2**22, 2**24])
def test_a_plan_runs_whole_micro_batches_and_interleaves_only_with_one_per_stage(batch):
    row = _plan_405b(16_384, batch)
    m, p = row["micro_batches"], row["pipeline_parallel"]
    assert m == int(m) and m >= 1
    assert row["planned_batch_tokens"] == m * row["data_parallel"] * 8192
    assert abs(row["planned_batch_tokens"] - batch) <= 0.5 * row["data_parallel"] * 8192  # within half a micro-batch
    if 1 < p and m < p:  # no interleaving: the plain 1F1B bubble of the fullest stage's compute
        assert row["bubble_s"] == pytest.approx(row["compute_s"] * (p - 1) / m)
    else:
        assert row["bubble_s"] <= row["compute_s"] * (p - 1) / m


def test_a_pipeline_runs_at_its_fullest_stages_pace():
    # 126 layers on 8 stages: the fullest holds 16, so a step takes 16 / 15.75 of an even split's compute.
    row = _plan_405b(16_384, 2**24)
    assert row["pipeline_parallel"] == 8 and ModelSpec.preset("llama3-405b").n_layers == 126
    recompute = {
        "none": 1.0,
        "full": parallelism.FULL_RECOMPUTE_FACTOR,
        "selective": 1 + row["attention_flops_per_token"] / 3 / row["flops_per_token"],
    }[row["recompute"]]
    even = row["flops_per_token"] * row["planned_batch_tokens"] / (16_384 * row["peak_flops_per_s"] * row["efficiency"])
    assert row["compute_s"] == pytest.approx(even * recompute * 16 / 15.75)
