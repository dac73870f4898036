"""Serving model: hand-worked rooflines, properties, CLI, and accuracy against published results."""

import datetime as dt
import json
import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbook import serving
from workbook.errors import InputError
from workbook.model import serving as sv
from workbook.serving import calibration, options, published, replica, validation
from workbook.serving.calibration import calibrate
from workbook.training.scenario import ModelSpec


def _scenario(**kw):
    base = dict(
        model=ModelSpec.from_params(70e9),
        weight_precision="bf16",
        kv_precision="bf16",
        requests_per_s=5,
        accelerators=("h100-sxm", "tpu-v5p", "mi300x"),
    )
    base.update(kw)
    return serving.ServeScenario(**base)


def test_70b_decode_on_8_chips_is_bounded_by_weight_bytes_over_bandwidth(cat):
    # 70B bf16 = 140 GB of weights; 8 x H100 read 8 x 3.35 TB/s: no decode step can be faster than 5.2 ms.
    bound_ms = 2 * 70e9 / (8 * 3.35e12) * 1000
    memory_s, compute_s = sv.decode_step_seconds(2 * 70e9, 0.0, 1, 70e9, 8, 3.35e12, 989.4e12, 1.0, 1.0)
    assert max(memory_s, compute_s) * 1000 == pytest.approx(bound_ms)
    s = _scenario(accelerators=("h100-sxm",), requests_per_s=0.01)
    tpot = serving.evaluate_serving(s).filter(pl.col("tensor_parallel") == 8)
    assert tpot.height == 0 or (tpot["tpot_ms"] > bound_ms).all()  # calibrated efficiency < 1 only makes it slower


def test_kv_cache_bytes_for_llama2_70b():
    # 2 (K,V) x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 bytes per token in BF16.
    assert sv.kv_bytes_per_token(80, 8, 128, 2) == 327_680


def test_calibrated_efficiencies_are_fractions_per_stack(cat):
    eff = serving.calibrate(cat)
    assert {"trtllm", "vllm-rocm", "vllm-cuda", "jetstream"} <= set(eff.stacks["stack"])
    assert eff.stacks["eta_bw"].is_between(0.2, 1).all() and eff.stacks["eta_c"].is_between(0.1, 1).all()
    assert 0.3 < eff.moe <= 1


def test_every_stack_is_calibrated_on_its_vendor_or_names_its_proxy(cat):
    acc = serving.calibrate(cat).for_accelerators(cat.accelerators, "best")
    assert acc.height and acc["eta_c"].is_not_null().all() and acc["stack_note"].is_not_null().all()
    for row in acc.to_dicts():
        own = row["stack"] in set(serving.calibrate(cat).stacks["stack"])
        assert own or "no published" in row["stack_note"], row["accelerator_id"]
    listed = acc.filter(pl.col("stack_rank") == 0)
    vendors = dict(zip(listed["accelerator_id"], listed["stack"], strict=True))
    tried = acc.group_by("vendor").agg(pl.col("stack").unique().sort())
    assert dict(tried.iter_rows()) == {  # "best" also tries each other stack a vendor has published results of
        "nvidia": ["trtllm", "vllm-cuda"],
        "amd": ["vllm-rocm"],
        "google": ["jetstream"],
        "aws": ["neuron"],
    }
    assert vendors["h100-sxm"] == "trtllm" and vendors["mi300x"] == "vllm-rocm" and vendors["tpu-v5e"] == "jetstream"
    generic = serving.calibrate(cat).for_accelerators(cat.accelerators, "generic")
    assert set(generic.filter(pl.col("vendor") == "nvidia")["stack"]) == {"vllm-cuda"}


def test_the_generic_stack_never_needs_fewer_chips_than_the_best_published_one(cat):
    # "Best published" tries each of the vendor's calibrated stacks and keeps the one needing the fewest chips. Before
    # it did, it meant TensorRT-LLM alone, and on H100 at 20 req/s and 150 ms that needed 8 chips against vLLM's 6:
    # vLLM's fitted compute efficiency (0.70) is above TensorRT-LLM's (0.66) and TensorRT-LLM's three TP2 replicas
    # would run at 75.2% of capacity, past the 75% headroom.
    # With the HBM efficiency fitted on a batch-1 step whole (vLLM 2024's 0.50), vLLM's compute efficiency fitted
    # on its BF16-KV runs came out at 0.85 against TensorRT-LLM's 0.67, and with an FP8 cache the generic stack needed
    # fewer chips at relaxed latency (70B at 150 ms: B200 2 vs 3, H200 5 vs 6). With the reads at the measured
    # streaming efficiency and each engine's fixed step cost apart, vLLM fits 0.70 and TensorRT-LLM 0.66 (when
    # written), and the generic stack needed as many chips or more, narrowly: TensorRT-LLM's three H100 replicas
    # ran at 74.1% of capacity. With the load curve checked against the engine's simulation (peaked slot waits,
    # the prefill of the prompts arriving while a request decodes) they would run at 75.2%.
    eff = serving.calibrate(cat)
    chips = {}
    for choice in ("best", "generic"):
        s = serving.ServeScenario(
            model=ModelSpec.from_params(70e9),
            weight_precision="fp8",
            kv_precision="fp8",
            requests_per_s=20,
            tpot_ms=150,
            stack_choice=choice,
            accelerators=("h100-sxm", "h200", "b200"),
            pricing=("on-demand",),
        )
        frame = serving.evaluate_serving(s, cat, eff)
        chips[choice] = dict(frame.group_by("accelerator_id").agg(pl.col("chips").min()).iter_rows())
        named = frame["stack_comparison"].drop_nulls()
        assert named.len() == (frame.height if choice == "best" else 0)  # the answer says what each stack needs
        assert named.str.contains("TensorRT-LLM").all() and named.str.contains("vLLM on CUDA").all()
    assert all(chips["generic"][chip] >= n for chip, n in chips["best"].items())


def test_the_best_stack_is_the_one_serving_within_the_targets_with_the_fewest_chips():
    candidates = pl.DataFrame(
        {
            "accelerator_id": ["a", "a", "b", "b", "c", "c"],
            "stack_name": ["First", "Second"] * 3,
            "stack_rank": [0, 1] * 3,
            "chips": [8, 6, 4, 4, 2, 6],
            "max_load_fraction": [0.7, 0.7, 0.7, 0.7, None, 0.7],  # c's first stack cannot meet the targets
            "serve_reason": [None, None, None, None, "too slow", None],
        }
    )
    chosen = {r["accelerator_id"]: r for r in options.fewest_chips(candidates).iter_rows(named=True)}
    assert {k: r["stack_name"] for k, r in chosen.items()} == {"a": "Second", "b": "First", "c": "Second"}
    assert chosen["a"]["stack_comparison"].endswith("First 8, Second 6, ties going to the first")
    assert "First cannot meet the targets, Second 6" in chosen["c"]["stack_comparison"]
    # Each stack's fixed step cost has its own source and date: the comparison names those of the stacks not chosen
    # beside their chips (the chosen one's is said once, with its efficiency).
    dated = candidates.with_columns(overhead_basis=pl.Series(["from A, May 2025", "from B, April 2026"] * 3))
    line = {r["accelerator_id"]: r for r in options.fewest_chips(dated).iter_rows(named=True)}["a"]["stack_comparison"]
    assert line.endswith("First 8 (fixed step cost from A, May 2025), Second 6, ties going to the first")


def test_mi300x_vs_h200_llama2_70b_fp8_matches_mlperf_within_25_percent(cat):
    # MLPerf Inference, newest rounds: MI300X v5.1 27,804 tok/s vs H200 v5.0 34,988 tok/s on 8 chips (0.79x).
    runs = {r["run_id"]: r for r in cat.inference_runs.to_dicts()}
    eff = serving.calibrate(cat)
    table = dict(zip(eff.stacks["stack"], eff.stacks.select("eta_bw", "eta_c").rows(), strict=True))
    from workbook.serving import published

    def per_chip(run_id):
        r = runs[run_id]
        bw, c = table[r["stack"]]
        return published.predict(cat.accelerators, r, bw, c, eff.factors()) / r["chips"]

    predicted = per_chip("mlperf51-mi300x8-llama2-70b-offline") / per_chip("mlperf50-h200x8-llama2-70b-offline")
    real = runs["mlperf51-mi300x8-llama2-70b-offline"]["value"] / runs["mlperf50-h200x8-llama2-70b-offline"]["value"]
    assert abs(math.log(predicted / real)) <= math.log(1.25)


def test_a_chip_held_to_a_higher_clock_by_its_power_limit_serves_more(cat, validated):
    # MI325X is MI300X's CDNA3 die with the same datasheet peak at 1,000 W instead of 750 W: AMD's max-achievable
    # FP8 GEMM 1,519 vs 1,273 TFLOPS (data/sustained_compute.csv). vLLM on ROCm's efficiency is fitted on MI300X, so
    # MI325X's results are held out. Measured when written: v6.0 offline 0.98x, Server 0.92x, v5.1 Server 0.92x,
    # Interactive 0.81x (0.84x, 0.78x, 0.77x and 0.68x with the datasheet peak alone, as for every chip before).
    factor = dict(zip(*cat.accelerators.select("accelerator_id", "sustained_compute_factor"), strict=True))
    assert factor["mi325x"] > factor["mi300x"]
    rows = validated.filter(
        (pl.col("accelerator_id") == "mi325x")
        & (pl.col("measure") == "tokens_per_s")
        & (pl.col("stack") == "vllm-rocm")
    )
    assert rows.height == 4 and rows["basis"].str.contains("mi300x").all()
    ratio = dict(zip(rows["run_id"], (rows["predicted_value"] / rows["published_value"]).to_list(), strict=True))
    assert all(0.85 <= r <= 1.1 for run, r in ratio.items() if "interactive" not in run)
    assert ratio["mlperf51-mi325x8-llama2-70b-interactive"] >= 0.75


def test_prefill_attention_is_quadratic_in_the_prompt():
    # Llama 3 70B (80 layers, d 8192) on 8 chips at 1 PFLOP/s each, 100% efficient, no communication.
    shape, rate = (70e9, 80, 8192, 8192), 8 * 1e15

    def prefill(p):
        return sv.request_seconds(shape, p, 1, 8, 1e15, 1.0, 0.0, p**2)[0]

    assert prefill(2048) == pytest.approx((2 * 70e9 * 2048 + 2 * 80 * 8192 * 2048**2) / rate)
    matmuls = {p: 2 * 70e9 * p / rate for p in (2048, 32768, 131072)}
    assert prefill(2048) / matmuls[2048] == pytest.approx(1.02, abs=0.01)
    assert prefill(32768) / matmuls[32768] == pytest.approx(1.31, abs=0.01)
    assert prefill(131072) / matmuls[131072] > 2.2  # at 128k, attention outweighs the matmuls
    # each decoded token attends to its context: 4 L d (P + O/2) more FLOPs than the matmuls' 2 N
    decode = sv.request_seconds(shape, 32768, 1000, 8, 1e15, 1.0, 0.0, 32768**2)[1]
    assert decode == pytest.approx(1000 * (2 * 70e9 + 4 * 80 * 8192 * (32768 + 500)) / rate)


def test_prefill_interference_and_queueing_raise_latency_with_load():
    low = sv.ttft_seconds(0.05, sv.step_seconds(0.02, 0.2), 0.0)
    high = sv.ttft_seconds(0.05, sv.step_seconds(0.02, 0.8), 0.0)
    assert sv.step_seconds(0.02, 0.8) == pytest.approx(0.1) and high > low > 0.07
    assert high == pytest.approx(0.1 / 2 + 0.05 + 0.1)  # rest of the running step + prefill + one step
    # the wait for a free sequence slot: negligible with slots to spare, long when nearly all are taken
    assert sv.slot_wait_seconds(500, 1000, 30.0) < 1e-6 < 1.0 < sv.slot_wait_seconds(995, 1000, 30.0)
    # capacity: decode FLOPs, KV reads (attention kernels run after the matmuls, not beside them) and prefill
    assert sv.capacity_requests_per_s(0.1, 0.2, 0.3) == pytest.approx(1 / 0.6)


@settings(max_examples=10, deadline=None)
@given(st.floats(0.5, 50), st.floats(1.5, 8))
def test_more_traffic_needs_more_chips(rps, factor):
    low = serving.evaluate_serving(_scenario(requests_per_s=rps)).filter(pl.col("feasible"))
    high = serving.evaluate_serving(_scenario(requests_per_s=rps * factor)).filter(pl.col("feasible"))
    joined = low.join(high, on=["accelerator_id", "cloud", "pricing_model"], suffix="_more")
    assert joined.height and (joined["chips_more"] >= joined["chips"]).all()


def test_traffic_beyond_one_replica_adds_replicas():
    one = serving.evaluate_serving(_scenario(requests_per_s=1)).filter(pl.col("feasible"))
    many = serving.evaluate_serving(_scenario(requests_per_s=500)).filter(pl.col("feasible"))
    joined = one.join(many, on=["accelerator_id", "cloud", "pricing_model"], suffix="_more")
    assert joined.height and (joined["chips_more"] > joined["chips"]).all()


def test_tighter_latency_costs_more():
    loose = serving.evaluate_serving(_scenario(tpot_ms=80)).filter(pl.col("feasible"))
    tight = serving.evaluate_serving(_scenario(tpot_ms=15)).filter(pl.col("feasible"))
    joined = loose.join(tight, on=["accelerator_id", "cloud", "pricing_model"], suffix="_tight")
    assert joined.height > 0, "no option meets both targets: the comparison would pass vacuously"
    assert (joined["usd_per_million_tokens_tight"] >= joined["usd_per_million_tokens"] - 1e-12).all()
    assert (joined["usd_per_million_tokens_tight"] > joined["usd_per_million_tokens"]).any()


def test_impossible_latency_says_why():
    # 8B fits one H100 easily, so the only thing that can rule it out is the 0.5 ms per-token target.
    frame = serving.evaluate_serving(
        _scenario(model=ModelSpec.from_params(8e9), tpot_ms=0.5, accelerators=("h100-sxm",))
    )
    assert frame.height > 0 and not frame["feasible"].any()
    assert frame["infeasible_reason"].str.contains("per-token target").all()


def test_model_too_big_to_fit_says_why():
    # 2T parameters in FP8 need 2 TB: more than a pipeline of 8 nodes of 8 L4s (24 GB each) holds
    frame = serving.evaluate_serving(_scenario(model=ModelSpec.from_params(2000e9), accelerators=("l4",)))
    assert frame.height > 0 and not frame["feasible"].any()
    assert frame["infeasible_reason"].str.contains("do not fit even in a replica of 64 chips").all()


def test_a_model_too_large_for_one_node_is_served_by_a_pipeline_of_nodes(cat):
    # DeepSeek-V3's 671B in FP8 need more than one node of 8 H100s (640 GB); it is served on two (vLLM's layout:
    # tensor parallel within a node, pipeline parallel across nodes).
    s = serving.ServeScenario(
        model=ModelSpec.from_params(671e9, active_params=37e9), requests_per_s=2, accelerators=("h100-sxm",)
    )
    frame = serving.evaluate_serving(s, cat)
    best = frame.row(0, named=True)
    assert best["feasible"], best["infeasible_reason"]
    assert best["pipeline_parallel"] >= 2 and best["chips_per_replica"] == 8 * best["pipeline_parallel"]
    assert best["layout"] == f"TP8 x PP{best['pipeline_parallel']}" and best["memory_per_chip_gb"] <= 80
    rec = serving.recommend_serving(frame, s)
    assert any(f"a pipeline of {best['pipeline_parallel']} nodes of 8 over the 400 Gb/s" in r for r in rec.reasons)


def test_a_pipeline_of_two_nodes_doubles_capacity_not_the_time_per_token(cat):
    # Half the layers per chip, read one stage after the other: a lone token's reads take as long as on one node, and
    # so do its kernels' fixed costs (each stage runs its own half of the layers' kernels), while two micro-batches
    # keep both nodes busy.
    s = _scenario(model=ModelSpec.from_params(70e9), accelerators=("h100-sxm",))
    eff = calibrate(cat)
    every = replica.replicas(replica.configs(options._accelerators(cat, s, eff)), s, eff.factors())
    assert (options._replicas(cat, s, eff)["pipeline_parallel"] == 1).all()  # 70B fits in one node: it stays there
    reps = every.filter(pl.col("tensor_parallel").is_in([8, 16]))
    rows = replica.per_engine(reps, lambda part, sched: replica.at_load(part, s, pl.lit(0.01), sched))
    one, two = (rows.filter(pl.col("pipeline_parallel") == k).row(0, named=True) for k in (1, 2))
    assert two["tensor_parallel"] == 16
    assert two["step_overhead_s"] == pytest.approx(one["step_overhead_s"] / 2)  # per stage: half the layers
    assert two["tpot_mean_ms"] == pytest.approx(one["tpot_mean_ms"], rel=0.05)
    assert two["capacity_rps"] == pytest.approx(2 * one["capacity_rps"], rel=0.1)


def test_every_offered_accelerator_gets_an_answer(cat):
    offered = cat.accelerators.filter(pl.col("offered"))["accelerator_id"].to_list()
    frame = serving.evaluate_serving(serving.ServeScenario(model=ModelSpec.from_params(8e9), requests_per_s=1), cat)
    assert set(offered) <= set(frame["accelerator_id"])
    assert frame.filter(pl.col("feasible"))["usd_per_million_tokens"].min() > 0


def test_validation_on_newest_fp8_bf16_results_held_out(validated):
    newest = validation.newest(validated)
    assert {"mlperf51-h200x8-llama2-70b-server", "mlperf60-mi300x8-llama2-70b-offline"} <= set(newest["run_id"])
    assert "mlperf51-h200x8-llama31-8b-server" not in set(newest["run_id"])  # v6.1 ran H200 on 8B: that is newer
    assert newest.height >= 5 and newest["predicted_value"].is_not_null().all()
    # Measured when written (each result predicted without its own system; newest round per stack, benchmark series,
    # chip and model, so TensorRT-LLM 1.2's tables count beside MLPerf, MLPerf v6.1's one H200 result (Llama 3.1 8B on
    # one GPU) beside v5.1's eight-GPU H200 results on Llama 2 70B and 405B, and vLLM on ROCm's newest FP8 results are
    # MLPerf v6.0's MI300X and MI325X partner results): 170 results, median 0.061, worst 1.46x (v5.1's H200 within the
    # Interactive limits; then Red Hat's vLLM 0.10 on one H100 Offline, 1.32x), with Red Hat's one-L40S vLLM results
    # predicted from vLLM's V0 engine, which they ran (0.81x and 0.92x; from V1's, 1.54x and 1.89x) and MLPerf v4.1's
    # L40S, GH200 and H100 PCIe TensorRT-LLM results (164 results, median 0.057, worst 1.89x before; 2.03x before vLLM
    # 0.10's FP8 KV cache was read at its measured 63% of a BF16 cache's cost, not half); 160,
    # median 0.056, worst 1.46x before Red Hat's v5.1 results. Per stack and series only, as before v6.1: 16 results,
    # median 0.051, worst 1.30x, because
    # v6.1's single H200 result would have stood for all of TensorRT-LLM's MLPerf results. Before v6.1 (per stack and
    # series): 25 results, median 0.031 (0.037 before MI325X's sustained clock; 0.061 before each
    # stack's fixed step cost was fitted apart from its HBM reads; 0.081 on 28 with vLLM on ROCm's v5.1 results; 0.107
    # on 19 before Krai's vLLM 0.9 and B200 TensorRT-LLM results and the H200 v5.1 offline result; 0.074 on 13 before
    # MLPerf v5.1's Server and Interactive results were gathered); TensorRT-LLM 1.2 on H200 TP2, 1k to 32k prompts,
    # within 12%.
    assert {"MLPerf v5.1", "MLPerf v6.0", "MLPerf v6.1", "TRT-LLM 1.2 perf overview"} <= set(newest["round"])
    assert newest["abs_error"].median() <= validation.TARGET_THROUGHPUT_MEDIAN
    # The newest FP4 results (MLPerf v6.1: B200, B300, GB200, GB300, MI355X on Llama 2 70B and 8B; v6.0's 405B and
    # NVL72 pool results; TensorRT-LLM's B200 tables): 47, median 0.095, worst 1.96x (GB300's 405B Interactive pools).
    # MLPerf v6.1 alone, a round published after the model was built (September 2026): 22 throughput results (20 FP4),
    # median 0.064, worst 1.26x (a partner's B300 on 8B Interactive, its layout unpublished), 21 within 25%.
    fp4 = validation.newest(validated, precisions=("fp4",))
    assert fp4.height >= 30 and fp4["abs_error"].median() <= validation.TARGET_THROUGHPUT_MEDIAN


def test_the_generic_nvidia_stack_is_calibrated_on_todays_vllm(eff, validated):
    # vLLM 0.9.2 on H100 TP2 and H200 TP1 (MLPerf v5.1, Krai's open-division Llama 3.1 70B FP8): the newest round of
    # the stack's throughput results, so its compute efficiency comes from them, each result held out of its own
    # prediction. The product's fixed step cost comes from the stack's newest batch-1 results, vLLM 0.19 (April 2026:
    # 44 us a layer); each held-out result is predicted with the software of its own time, so these September 2025
    # runs with the 2024 CI's 81 us. Measured when written: offline and Server 0.97x-1.09x; H100 Interactive 1.30x
    # (1.49x with 0.19's cost: under the 40 ms per-token limit the step is mostly that fixed cost). From the stack's
    # 2024 calibration (vLLM on 4 L40S, MLPerf v4.1) they were 0.57x-0.69x.
    assert eff.stacks.filter(pl.col("stack") == "vllm-cuda")["round"].item() == "MLPerf v5.1"
    vllm = validated.filter(
        (pl.col("stack") == "vllm-cuda")
        & (pl.col("round") == "MLPerf v5.1")
        & (pl.col("measure") == "tokens_per_s")
        & pl.col("run_id").str.contains("-krai-")
    )
    interactive = pl.col("tpot_limit_ms").lt(100).fill_null(False)  # MLPerf's Interactive limits: 40 ms a token
    assert vllm.height == 5 and vllm.filter(interactive).height == 1
    assert (vllm.filter(~interactive)["abs_error"] <= math.log(1.2)).all()
    assert (vllm.filter(interactive)["abs_error"] <= math.log(1.4)).all()
    newest = eff.layer_overhead_by_stack["vllm-cuda"]
    assert (vllm["layer_overhead_s"] > 1.5 * newest).all()  # 2024's vLLM, not 2026's


def test_red_hats_one_gpu_vllm_results_are_held_out(validated):
    # Red Hat's MLPerf v5.1 closed results: stock vLLM 0.10.0 serving Llama 3.1 8B FP8 on one GPU, H100 SXM and L40S,
    # Offline and Server. On H100, predicted from Krai's vLLM 0.9.2 Llama 3.1 70B results of the same round, the Server
    # result (BF16 KV cache) and its latencies hold (measured when written: throughput 1.09x, mean time per output
    # token 1.00x, p99 first token 0.97x); Offline, 4,096-token steps of up to 1,024 sequences with an FP8 KV cache read
    # at vLLM 0.10's measured cost (test_an_fp8_kv_cache_is_read_at_its_stacks_measured_cost), 1.32x (1.39x at half a
    # BF16 cache's cost).
    rows = validated.filter(pl.col("run_id").str.contains("-redhat-"))
    assert rows.height == 12 and rows["predicted_value"].is_not_null().all()
    h100 = rows.filter(pl.col("run_id").str.contains("-redhat-h100x1-"))
    assert set(h100["basis"].str.extract(r"\((MLPerf v[0-9.]+)\)$")) == {"MLPerf v5.1"}
    server = h100.filter(pl.col("run_id").str.starts_with("mlperf51-redhat-h100x1-vllm-llama31-8b-server"))
    throughput = server.filter(pl.col("measure") == "tokens_per_s")
    assert throughput["abs_error"].item() <= math.log(1.2)
    tpot = server.filter((pl.col("measure") == "tpot_ms") & (pl.col("statistic") == "mean"))
    assert tpot.height == 1 and tpot["abs_error"].item() <= validation.TARGET_LATENCY


def test_a_result_that_ran_vllms_v0_engine_is_predicted_from_that_engines_results(validated, cat):
    # Red Hat's L40S runs kept an FP8 KV cache with FlashInfer on vLLM 0.10.0: its V1 engine took an FP8 cache only
    # where FlashAttention 3 reads one (Hopper) until pull request #24577 (September 2025), so they ran V0 (``engine``).
    # Predicted from V1's results of their round (Krai's H100/H200) they were 1.54x (Offline) and 1.89x (Server); from
    # V0's, vLLM 0.5.1 on four L40S in MLPerf v4.1 (the only other), 0.81x and 0.92x (measured when written). That v4.1
    # result, V0 too, is predicted from Red Hat's L40S Offline result in turn (1.14x; 1.42x from V1's): each engine is
    # calibrated on its own offline results, and the two V0 systems are each held out from the other. TensorRT-LLM on
    # eight L40S holds
    # (test_tensorrt_llm_on_l40s_over_pcie_is_held_out): the chip's rates were not the miss.
    v0 = cat.inference_runs.filter(pl.col("engine") == "vllm-v0")["run_id"]
    l40s = validated.filter(pl.col("run_id").str.contains("-redhat-l40sx1-"))
    assert l40s.height == 6 and l40s["run_id"].is_in(v0.implode()).all()
    assert set(l40s["basis"]) == {"mlperf41-l40sx4-llama2-70b-offline (MLPerf v4.1)"}
    throughput = l40s.filter(pl.col("measure") == "tokens_per_s")
    assert (throughput["abs_error"] <= validation.TARGET_THROUGHPUT_WORST).all()
    first = validated.filter(pl.col("run_id") == "mlperf41-l40sx4-llama2-70b-offline")
    assert first["basis"].item() == "mlperf51-redhat-l40sx1-vllm-llama31-8b-offline (MLPerf v5.1)"
    assert first["abs_error"].item() <= math.log(1.25)


def test_tensorrt_llm_on_l40s_over_pcie_is_held_out(validated):
    # Fujitsu's MLPerf v4.1 closed result: eight L40S in a PCIe box (no NVLink), two TensorRT-LLM TP4 engines serving
    # Llama 2 70B FP8, predicted from NVIDIA's H100/H200 results of the same round. Each step's all-reduces cross PCIe
    # (they are most of a decode step at TP4), so it tests the PCIe all-reduce and L40S's rates under TensorRT-LLM
    # (measured when written: Offline 0.90x, Server 0.89x; the Server's mean / p99 first token 1.03x / 0.81x, time per
    # output token 1.23x / 1.13x), where stock vLLM 0.10 on one L40S, predicted from vLLM's V1 engine, was 1.89x.
    rows = validated.filter(pl.col("run_id").str.contains("-fujitsu-l40sx8-"))
    assert rows.height == 6 and rows["predicted_value"].is_not_null().all()
    assert set(rows["basis"].str.extract(r"\((MLPerf v[0-9.]+)\)$")) == {"MLPerf v4.1"}
    throughput = rows.filter(pl.col("measure") == "tokens_per_s")
    assert (throughput["abs_error"] <= math.log(1.25)).all()
    latency = rows.filter(pl.col("measure") != "tokens_per_s")
    assert (latency["abs_error"] <= validation.TARGET_LATENCY).all()


def test_one_gh200_96gb_is_held_out_and_its_latencies_hold_at_the_published_load(validated):
    # QCT's MLPerf v4.1 closed result on one GH200 96GB (the app's default serving chip), TensorRT-LLM TP1 serving
    # Llama 2 70B FP8, predicted from NVIDIA's H100/H200 results of the same round (measured when written: Offline
    # 1.08x, Server 1.25x). The Server run stopped at 80% of the model's highest load within the limits (its p99 time
    # per output token 71 ms against a 200 ms limit), so its latencies at that edge are off (p99 first token 6.9x: the
    # slot queue's edge), but at the published load all four are within 13% (first token 0.99x / 0.87x, per token
    # 1.03x / 0.99x, mean / p99): the model reads the chip right; where a submitter stops is not in its settings.
    # QCT's MLPerf v5.0 result on the same chip (NVIDIA's v5.0 code: chunked prefill, 1,536 tokens a step, 2,048
    # sequences) is the newer: Offline 1.17x, Server 1.11x (measured when written); its Server run stopped at 66% of the
    # model's highest load (p99 71.7 ms a token), and at that load its latencies are 0.93x / 0.77x (first token, mean /
    # p99) and 1.14x / 1.12x (per token).
    rows = validated.filter(pl.col("run_id").str.contains("mlperf41-qct-gh200x1-"))
    assert rows.height == 6 and rows["predicted_value"].is_not_null().all()
    throughput = rows.filter(pl.col("measure") == "tokens_per_s")
    assert (throughput["abs_error"] <= validation.TARGET_THROUGHPUT_WORST).all()
    latency = rows.filter(pl.col("measure") != "tokens_per_s")
    at_load = (latency["predicted_at_published_load"] / latency["published_value"]).log().abs()
    assert latency.height == 4 and (at_load <= validation.TARGET_LATENCY).all()
    assert (latency["published_load_fraction"] < latency["max_load_fraction"]).all()
    newer = validated.filter(pl.col("run_id").str.contains("mlperf50-qct-gh200x1-"))
    assert newer.height == 6 and newer["predicted_value"].is_not_null().all()
    throughput = newer.filter(pl.col("measure") == "tokens_per_s")
    assert (throughput["error"] > 0).all() and (throughput["abs_error"] <= math.log(1.25)).all()
    latency = newer.filter(pl.col("measure") != "tokens_per_s")
    at_load = (latency["predicted_at_published_load"] / latency["published_value"]).log().abs()
    assert latency.height == 4 and (at_load <= math.log(1.35)).all()
    assert (latency["published_load_fraction"] < latency["max_load_fraction"]).all()


def test_one_gh200_144gb_is_held_out_with_its_latencies(validated):
    # NVIDIA's own MLPerf v4.1 closed result on one GH200 144GB (HBM3e, 4.9 TB/s: the catalog's gh200-144gb row),
    # TensorRT-LLM TP1 serving Llama 2 70B FP8, predicted from the round's H100/H200 results (measured when written:
    # Offline 0.97x, Server 1.00x; at the model's highest load within the limits, first token 1.01x / 0.83x and per
    # token 1.12x / 1.04x, mean / p99). Its Server run went to 95% of its Offline throughput, where QCT's 96 GB one
    # stopped at 84%.
    # NVIDIA's MLPerf v5.0 result on the same chip (v5.0 code: chunked prefill, 1,536 tokens a step) is the newer:
    # Offline 0.95x, Server 1.01x, its four latencies within 30% (1.22x / 1.18x first token, 1.14x / 1.12x per token,
    # mean / p99; measured when written).
    for prefix in ("mlperf41-gh200-144gbx1-", "mlperf50-gh200-144gbx1-"):
        rows = validated.filter(pl.col("run_id").str.starts_with(prefix))
        assert rows.height == 6 and rows["predicted_value"].is_not_null().all()
        assert set(rows["accelerator_id"]) == {"gh200-144gb"}
        throughput = rows.filter(pl.col("measure") == "tokens_per_s")
        assert (throughput["abs_error"] <= math.log(1.1)).all()
        latency = rows.filter(pl.col("measure") != "tokens_per_s")
        assert latency.height == 4 and (latency["abs_error"] <= validation.TARGET_LATENCY).all()


def test_deepseek_r1_with_latent_attention_and_its_experts_split_is_held_out(validated):
    # NVIDIA's MLPerf DeepSeek-R1 results (671B, 37B active, latent attention, NVFP4), TensorRT-LLM with attention
    # data-parallel and the experts split over each replica's eight GPUs; answers up to 20,000 tokens. In no fit.
    # v5.1 (B200 x8, GB200 and GB300 NVL72): Offline 1.20x, 1.29x, 0.97x predicted / published (1.40x, 1.50x, 1.15x
    # with every answer the mean length: a long answer stays in flight longer, so the steps' mean context is 5,100
    # tokens, not 2,700); Server 2.07x, 2.14x, 1.76x over, the runs holding 50-58% of their Offline throughput at 64-70
    # ms a token. v6.0 (TensorRT-LLM 1.2 on the same configurations; Google's B200 x8 with NVIDIA's settings, NVIDIA's
    # B300 x8, GB200 and GB300 NVL72): Server 0.92x-1.07x, Offline 0.62x-0.77x (the release's per-sequence step cost
    # fell below the model's). Time per token at the model's edge: v5.1's 6 of 6 within 30%, v6.0's 3 of 8 (its runs
    # stopped below the limit). First token: the engine holds a new prompt until each of the eight ranks has one or
    # its published timeout (6 or 9 steps), half the cycle on average; v6.0's 7 of 8 within 30% (0.72x-1.06x; 0 of 8,
    # 0.13x-0.36x, without the hold), v5.1's 0.31x-0.71x (its release's steps with prompts took longer).
    rows = validated.filter(pl.col("run_id").str.contains("-deepseek-r1-"))
    assert rows.height == 42 and rows["predicted_value"].is_not_null().all()
    assert (
        set(rows["accelerator_id"]) == {"b200", "b300", "gb200", "gb300"} and (rows["weight_precision"] == "fp4").all()
    )
    throughput = rows.filter(pl.col("measure") == "tokens_per_s")
    v51, v60 = (throughput.filter(pl.col("round") == r) for r in ("MLPerf v5.1", "MLPerf v6.0"))
    offline = v51.filter(pl.col("scenario") == "offline")
    assert offline.height == 3 and (offline["abs_error"] <= math.log(1.35)).all()
    server = v51.filter(pl.col("scenario") == "server")
    assert server.height == 3 and (server["error"] > math.log(1.5)).all()  # the known miss of v5.1's software, stated
    server = v60.filter(pl.col("scenario") == "server")
    assert server.height == 4 and (server["abs_error"] <= math.log(1.15)).all()
    offline = v60.filter(pl.col("scenario") == "offline")
    assert offline.height == 4 and (offline["error"] < 0).all()  # today's release is faster per sequence, stated
    tpot = rows.filter((pl.col("measure") == "tpot_ms") & (pl.col("round") == "MLPerf v5.1"))
    assert tpot.height == 6 and (tpot["abs_error"] <= validation.TARGET_LATENCY).all()
    ttft = rows.filter(pl.col("measure") == "ttft_ms")
    v51, v60 = (ttft.filter(pl.col("round") == r) for r in ("MLPerf v5.1", "MLPerf v6.0"))
    assert v60.height == 8 and (v60["abs_error"] <= validation.TARGET_LATENCY).sum() >= 6
    assert v51.height == 6 and (v51["error"] < 0).all()


def test_h100_nvl_is_held_out_and_its_cost_range_carries_its_own_result(validated, cat):
    # Lenovo's MLPerf v4.1 closed result on eight H100 NVL 94GB (400 W PCIe cards, the catalog's h100-nvl, priced on
    # Azure's NC H100 v5), eight TensorRT-LLM TP1 engines serving Llama 2 70B FP8 on NVIDIA's v4.1 harness (no chunked
    # prefill). No measurement of the clock it holds under a dense GEMM: at the one H100 PCIe was measured to hold (the
    # same die at the same watts per SM, an upper bound) the model over-predicts it (measured when written: Offline
    # 1.30x, Server 1.54x, the Server run stopping at 82% of its Offline throughput; 1.47x and 1.73x at its datasheet
    # peak). Fujitsu's MLPerf v5.0 result on eight H100 NVL (four TP2 engines, NVIDIA's v5.0 code: chunked prefill)
    # served 14% more Offline and 29% more Server on the same chips: 1.16x Offline, 1.16x Server and 1.06x
    # Interactive, whose four latencies are within 30% (measured when written). The answer's cost range carries the
    # chip's newest Server-type results (v5.0's).
    rows = validated.filter(pl.col("run_id").str.contains("-lenovo-h100nvlx8-"))
    assert rows.height == 6 and rows["predicted_value"].is_not_null().all()
    throughput = rows.filter(pl.col("measure") == "tokens_per_s")
    assert (throughput["error"] > 0).all()  # over-predicted, both
    newer = validated.filter(pl.col("run_id").str.contains("mlperf50-fujitsu-h100nvlx8-"))
    assert newer.height == 7 and newer["predicted_value"].is_not_null().all()
    throughput = newer.filter(pl.col("measure") == "tokens_per_s")
    assert (throughput["error"] > 0).all() and (throughput["abs_error"] <= math.log(1.2)).all()
    latency = newer.filter(pl.col("measure") != "tokens_per_s")
    assert latency.height == 4 and (latency["abs_error"] <= validation.TARGET_LATENCY).all()
    # Cisco's two H100 NVL of v5.0 ran one card per engine (TP1, like Lenovo's): 70B's 69 GB of FP8 weights leave a
    # 94 GB card room for ~340 sequences' KV cache, where Fujitsu's TP2 engines hold their 1,300-sequence limit. Its
    # Offline 1.52x and 1.46x (two servers), Server 1.64x over (measured when written): the chip's widest miss.
    tp1 = validated.filter(pl.col("run_id").str.contains("mlperf50-cisco-") & (pl.col("measure") == "tokens_per_s"))
    assert tp1.height == 3 and (tp1["error"] > throughput["error"].max()).all()
    server = math.exp(-tp1.filter(pl.col("scenario") == "server")["error"].max())
    s = serving.ServeScenario(
        model=ModelSpec.from_params(70e9), requests_per_s=10, accelerators=("h100-nvl",), pricing=("on-demand",)
    )
    pick = serving.evaluate_serving(s, cat).filter(pl.col("feasible")).row(0, named=True)
    assert pick["cloud"] == "azure" and pick["model_error_scope"] == "chip"
    assert math.exp(-pick["model_error_high"]) == pytest.approx(server, rel=0.01)  # Cisco's Server: 0.60x predicted
    assert pick["usd_per_million_tokens_high"] > 1.6 * pick["usd_per_million_tokens"]


def test_h100_pcie_without_nvlink_at_its_power_limited_clock_is_held_out(validated, cat):
    # ASUSTeK's MLPerf v4.1 closed result: eight H100 PCIe (350 W) with no NVLink stated ("accelerator_interconnect":
    # "N/A", where the H100 NVL systems of the round state their bridges), four TensorRT-LLM TP2 engines serving Llama 2
    # 70B FP8. Read as the catalog's bridged pairs at the datasheet's peak it was 1.91x Offline and 2.16x Server; with
    # its all-reduces over PCIe Gen5 (the run's pcie_bytes_per_s) 1.32x and 1.40x; with the clock the 350 W card holds
    # under a dense GEMM as well (0.81 of H100 SXM's fraction of peak, torch.mm in one benchmark table) 1.20x and 1.26x
    # (measured when written).
    rows = validated.filter(pl.col("run_id").str.contains("-asus-h100pciex8-"))
    assert rows.height == 6 and rows["predicted_value"].is_not_null().all()
    assert (
        cat.inference_runs.filter(pl.col("run_id").str.contains("-asus-h100pciex8-"))["pcie_bytes_per_s"]
        .is_not_null()
        .all()
    )
    throughput = rows.filter(pl.col("measure") == "tokens_per_s")
    assert (throughput["abs_error"] <= validation.TARGET_THROUGHPUT_WORST).all()
    assert (throughput["error"] > 0).all()  # still over-predicted: the rest is not explained


def test_each_result_is_predicted_with_the_batch_1_results_of_its_time():
    points = pl.DataFrame(
        {
            "stack": ["vllm-cuda", "vllm-cuda", "trtllm"],
            "published": [dt.date(2024, 1, 1), dt.date(2026, 1, 1), dt.date(2025, 6, 1)],
            "layer_overhead_s": [80e-6, 40e-6, 60e-6],
        }
    )
    then = calibration.published_by(points, dt.date(2025, 1, 1))
    # vLLM's 2024 result, not its 2026 one; TensorRT-LLM has none by then: its earliest, the nearest generation
    assert then.sort("stack")["layer_overhead_s"].to_list() == [60e-6, 80e-6]
    assert calibration.published_by(points, dt.date(2026, 2, 1)).height == 3
    _, by_stack, _ = calibration.overhead_by_stack(then.with_columns(round=pl.lit("r")))
    assert by_stack["vllm-cuda"] == pytest.approx(80e-6)
    assert by_stack["vllm-rocm"] == pytest.approx(70e-6)  # none of its own: the median of the others' of then


def test_an_fp8_kv_cache_is_read_at_its_stacks_measured_cost(cat, eff):
    # vLLM's own measurement (blog of 2026-04-22): reading an FP8 KV cache cost Llama 3.1 8B's attention 63% of a BF16
    # cache's in v0.10.2 and 54% in v0.19.1, not the half its bytes say. A result is predicted with its software's (a
    # result before v0.10.2, the earliest measured, takes it); the app with today's. The cache's size is FP8's either
    # way, and an unmeasured stack reads it at half BF16's cost.
    assert dict(calibration.fp8_kv_read_shares(dt.date(2025, 9, 9)))["vllm-cuda"] == pytest.approx(0.63)
    assert dict(calibration.fp8_kv_read_shares(dt.date(2024, 8, 28)))["vllm-cuda"] == pytest.approx(0.63)
    assert dict(calibration.fp8_kv_read_shares(dt.date(2026, 4, 22)))["vllm-cuda"] == pytest.approx(0.54)
    assert dict(eff.factors().fp8_kv_read_by_stack) == dict(calibration.fp8_kv_read_shares())
    (run,) = (
        r
        for r in cat.inference_runs.iter_rows(named=True)
        if r["run_id"] == "mlperf51-redhat-h100x1-vllm-llama31-8b-offline"
    )
    assert run["kv_precision"] == "fp8"
    then = calibration.of_its_time(eff.factors(), run["published"])
    ideal = replica.Factors(moe=1.0, allreduce=1.0, fp4=0.0)
    measured, halved = (published._replicas(cat.accelerators, run, 0.9, 0.7, f) for f in (then, ideal))
    assert measured["kv_read_s"].item() == pytest.approx(0.63 / 0.5 * halved["kv_read_s"].item())
    assert measured["max_sequences"].item() == pytest.approx(halved["max_sequences"].item())
    trt = {**run, "stack": "trtllm"}
    assert published._replicas(cat.accelerators, trt, 0.9, 0.7, then)["kv_read_s"].item() == pytest.approx(
        halved["kv_read_s"].item()
    )


def test_nvl72_results_are_predicted_from_other_systems(validated):
    # GB200 and GB300 (MLPerf v5.1 and v6.0, FP4): no result of either chip is in any fit. Measured when written, on
    # one pool: GB200 1.02-1.21x (v5.1 Llama 2 70B on 4 GPUs and 405B on 72), GB300 0.93-1.29x (v5.1 405B Server; 1.22x
    # while each step's fixed cost was the same for every model, not per layer); FP4 speeds up only
    # the matmuls, and GB300's FP4 peak is 3x its FP8 one (with GB200's efficiency of the FP4 peak it was
    # 1.04-1.51x). The runs that prefilled and decoded on separate pools are predicted on their published pools
    # (test_published_disaggregated_results_on_their_own_pools).
    # MLPerf v6.1 (held out as a round): GB300 on 8 GPUs 0.90-0.92x, CoreWeave's GB200 NVL72 on one pool 1.05-1.08x.
    # DeepSeek-R1 (MLPerf v5.1, its experts split over eight GPUs) has its own test:
    # test_deepseek_r1_with_latent_attention_and_its_experts_split_is_held_out.
    nvl72 = pl.col("accelerator_id").is_in(["gb200", "gb300"]) & ~pl.col("run_id").str.contains("-deepseek-r1-")
    rows = validated.filter(nvl72 & (pl.col("measure") == "tokens_per_s"))
    shared = rows.filter(~pl.col("run_id").is_in(list(DISAGGREGATED)))
    assert rows.height == 24 and shared.height == 15
    assert (shared["abs_error"] <= math.log(1.3)).all()
    assert shared["abs_error"].median() <= validation.TARGET_THROUGHPUT_MEDIAN


# MLPerf's disaggregated results (NVIDIA, GB200/GB300 NVL72): prefill replicas x chips + decode replicas x chips
DISAGGREGATED = {
    "mlperf51-gb200x72-llama31-405b-interactive": "14 x 4 + 2 x 8",
    "mlperf60-gb200x72-llama2-70b-server": "28 x 1 + 44 x 1",
    "mlperf60-gb200x72-llama2-70b-interactive": "28 x 1 + 44 x 1",
    "mlperf60-gb200x72-llama31-405b-server": "14 x 4 + 2 x 8",
    "mlperf60-gb200x72-llama31-405b-interactive": "14 x 4 + 2 x 8",
    "mlperf60-gb300x72-llama2-70b-server": "28 x 1 + 44 x 1",
    "mlperf60-gb300x72-llama2-70b-interactive": "28 x 1 + 44 x 1",
    "mlperf60-gb300x72-llama31-405b-server": "26 x 2 + 5 x 4",
    "mlperf60-gb300x72-llama31-405b-interactive": "26 x 2 + 5 x 4",
}


def test_published_disaggregated_results_on_their_own_pools(cat, validated):
    # The published pools (data columns prefill_chips, prefill_tensor_parallel; the decode pool's layout and
    # limits) through the planner's disaggregation formulas (workbook.serving.disaggregated.pools_requests_per_s).
    # Measured when written: Llama 2 70B 0.86-1.08x (0.71x while the prefill pool gave each prompt a step of its
    # own); Llama 3.1 405B 0.47-1.01x: the prefill pool binds (GB300's 26 TP2 replicas would need 96% of the
    # model's prefill capacity for the published 28.6 requests/s), its 9,400-token prompts prefilled at 0.35 of the
    # FP4 peak, the one compute efficiency of prefill and decode; the real prefill runs about twice as fast.
    pools = cat.inference_runs.filter(pl.col("prefill_chips").is_not_null())
    assert set(pools["run_id"]) == set(DISAGGREGATED)
    for run in pools.iter_rows(named=True):
        prefill, decode = DISAGGREGATED[run["run_id"]].split(" + ")
        assert run["prefill_chips"] == math.prod(int(n) for n in prefill.split(" x "))
        assert run["chips"] - run["prefill_chips"] == math.prod(int(n) for n in decode.split(" x "))
    rows = validated.filter(pl.col("run_id").is_in(list(DISAGGREGATED)))
    ratio = (rows["predicted_value"] / rows["published_value"]).to_list()
    by_run = dict(zip(rows["run_id"], ratio, strict=True))
    assert all(0.85 <= r <= 1.1 for run, r in by_run.items() if "llama2" in run)
    assert all(0.45 <= r <= 1.05 for run, r in by_run.items() if "405b" in run)


@pytest.mark.xfail(
    strict=True,
    reason="Cisco's two H100 NVL, one card per engine (MLPerf v5.0, Llama 2 70B): Server 1.63x, Offline 1.46x and "
    "1.41x; one H200 on Llama 2 70B within MLPerf v5.1's Interactive limits at 0.69x (1.45x): the model's fixed step "
    "(21.5 ms: weights at 90% of 4.8 TB/s and TensorRT-LLM's 5.3 ms) against ~14-16 ms that the run's Interactive and "
    "Server results imply",
)
def test_no_newest_result_is_off_by_more_than_the_target(validated):
    # With each cache sized from the memory the device reports (H100 NVL 95,830 MiB, not 94e9 bytes) at its engine's
    # published share: worst Cisco's H100 NVL Server 1.63x (1.53x before), four past 1.4x (three), Red Hat's 1.34x.
    # Measured when written: worst 1.46x (below), then Red Hat's vLLM 0.10 on one H100 Offline, 1.32x. Its vLLM 0.10 on
    # one L40S (MLPerf v5.1, Llama 3.1 8B) was the worst, 1.89x Server and 1.54x Offline (2.03x and 1.65x with vLLM's
    # FP8 KV cache read at half a BF16 cache's cost), until predicted from vLLM's V0 engine, which it ran: 0.92x and
    # 0.81x (test_a_result_that_ran_vllms_v0_engine_is_predicted_from_that_engines_results). Before Red Hat's v5.1
    # results: worst 1.46x, one H200 on Llama 2
    # 70B within MLPerf v5.1's Interactive limits (0.68x): its
    # 99th-percentile time per output token is the limit that binds, and with the load curve checked against the
    # engine's simulation it sits further above the mean (1.13x, as simulated; the run's own 1.07x). It was 1.43x
    # (0.70x) before each step's fixed cost was charged per layer: it is predicted from MLPerf v5.0's H100 and H200
    # results, and the H100 one runs a two-stage pipeline whose stages each pay half the layers' fixed cost, so it
    # fits a lower compute efficiency (0.68 from 0.71; the pair's median 0.67 from 0.69). 1.39x (0.72x) before the
    # simulation check.
    # It was 0.64x (1.57x) while the HBM efficiency was fitted on a batch-1 step whole: at 0.62 of the bandwidth the
    # model read a one-GPU 70B replica's weights in 23 ms a step; read at the measured 90% (16 ms) plus the engine's
    # fixed ~5 ms, the step the Interactive limit allows carries more sequences.
    newest = validation.newest(validated)
    assert newest["abs_error"].max() <= validation.TARGET_THROUGHPUT_WORST


def test_server_latency_per_round_at_mlperf_limits(validated):
    latency = validation.server_latency(validated)
    assert {"MLPerf v4.1", "MLPerf v5.0"} <= set(latency["round"]) and latency["predicted_value"].is_not_null().all()
    assert set(latency["statistic"]) == {"mean", "p99"}  # every published statistic is compared like with like
    # Measured when written, with Lenovo's eight H100 NVL (MLPerf v4.1, Llama 2 70B: 0 of 4 within 30%, the chip read at
    # its datasheet peak: test_h100_nvl_is_held_out_and_its_cost_range_carries_its_own_result): 164 of 244 within 30%,
    # 173 at 1% less traffic. With NVIDIA's one GH200 144GB (MLPerf v4.1, Llama 2 70B: 4 of 4 within 30%): 164 of 240
    # within 30%, 172 at 1% less traffic. With Red Hat's L40S Server latencies predicted from vLLM's V0 engine (1 of
    # 4, 2 from V1's): 160 of 236 within 30%, 168 at 1% less traffic. With ASUSTeK's eight H100 PCIe (MLPerf v4.1,
    # Llama 2 70B, no NVLink: 3 of 4): 161 of 236 within 30%, 170 at 1% less traffic. With QCT's one GH200 96GB
    # (MLPerf v4.1, Llama 2 70B: 0 of 4 at the model's edge, 4 of 4 at the published load:
    # test_one_gh200_96gb_is_held_out_and_its_latencies_hold_at_the_published_load) and Fujitsu's TensorRT-LLM Server
    # result on eight L40S (v4.1, Llama 2 70B: 4 of 4 within 30%): 158 of 232 within 30%,
    # 166 at 1% less traffic. With Red Hat's one-GPU vLLM 0.10 Server results
    # (MLPerf v5.1, Llama 3.1 8B on H100 and L40S: 6 of their 8 rows within 30%): 154 of 224 within 30%, 162 at 1% less
    # traffic (161 before vLLM's FP8 KV cache was read at its measured cost). Before them, with MLPerf v6.1
    # (September 2026, a round published after the model was built: MI355X on
    # Llama 2 70B and 8B, AMD's and MiTAC's; one H200 on 8B): 148 of 216 within 30%, 157 at 1% less traffic (v6.1 16
    # of 28, 19; Llama 2 70B Interactive 41 of 44, Server 47 of 72: MI355X's Server runs stopped at a mean TPOT of
    # 126-128 ms, the model's reaches the limit's 188 ms; 8B 16 of 36: AMD's 8B engine caps a step's prompt tokens).
    # Before v6.1, with each step's fixed cost charged per layer, vLLM on ROCm's own (64 us a layer, from
    # ROCm's vLLM 0.9.1 docs) and MI355X's v6.0 Server prompts admitted every third step (AMD's scheduler patch; its
    # TTFT 0.42x/0.35x (mean/p99) before, 0.94x/0.82x): 132 of 188 within 30% (v6.0 29 of 44; Llama 2 70B Interactive
    # 33 of 36, Server 44 of 64; Llama 3.1 405B 31 of 40, 28 before), 138 at 1% less traffic (136 before MI325X's
    # sustained clock; 130 and 135 before the MI355X cadence; 134 with NIM 1.8's fixed step cost as TensorRT-LLM's
    # newest). With the other stacks' median (58 us) for vLLM on ROCm, 131 (Server 43): MI355X's mean TPOT under v6.0's
    # Server limits went from 1.294x to 1.300x.
    # With the fixed cost per step and the load curve checked against the engine's simulation: 129 of 188 (Server 44),
    # 132 at 1% less traffic. Before that check: 124
    # (v6.0 23; Interactive 32, Server 45), 128 (123 and 132 before each stack's fixed step cost was fitted apart from
    # its HBM reads).
    # Before v6.0, at the model's highest load refined between the 1% grid's loads: 95 of 144 within 30%
    # (Llama 2 70B: 25 of 28 under the Interactive limits, 33 of 44 under the Server ones; Llama 3.1 405B 17 of 32 (12
    # of the 24 on 8 GPUs, 5 of 8 on GB200/GB300 NVL72), 8B 8 of 16, Mixtral 1 of 4; Krai's open-division Llama 3.1 70B:
    # vLLM 0.9 9 of 16, TensorRT-LLM 1.0 on B200 2 of 4; TensorRT-LLM calibrated on MLPerf v5.1's H200 offline result
    # (0.67) instead of v5.0's (0.70) moved 3 across the line; 81 of the first 112 rows, 75 before AMD's multi-step
    # scheduling was modelled, 69 before a long prompt's all-reduces ran at the link's speed and every step paid the
    # all-reduces' latency). On the 28 v4.1/v5.0 Server rows 19, 14 before the KV reads were added to the decode FLOPs,
    # the all-reduce efficiency fitted, Mixtral's prompt lengths measured, TensorRT-LLM's KV cache sized from free
    # memory and the slot wait taken from the many-server Erlang C; 11 before the submitters' settings). At the edge the
    # p99 first token sits at its limit wherever a queue binds; at 1% less traffic (``predicted_near_max``) 99 of 144.
    assert {"MLPerf v5.1", "MLPerf v6.1"} <= set(latency["round"]) and {40, 80, 200} <= set(latency["tpot_limit_ms"])
    v50_tpot = latency.filter(
        (pl.col("round") == "MLPerf v5.0") & (pl.col("measure") == "tpot_ms") & pl.col("run_id").str.contains("llama2")
    )
    nvidia = v50_tpot.filter(~pl.col("run_id").str.contains("fujitsu|qct|cisco|gh200-144gb"))
    assert nvidia.height == 12 and nvidia["within_target"].all()  # H100, H200 (FP8), B200 (FP4); both limits
    # Added after the rows above: NVIDIA's one GH200 144GB (2 of 2 within 30%) and partners' runs: Fujitsu's eight H100
    # NVL Interactive (2 of 2); QCT's four H100 PCIe (1.44x / 1.36x, mean / p99; over PCIe, as its system states), QCT's
    # one GH200 96GB (1.47x / 1.43x) and Cisco's two H100 NVL (1.46x / 1.32x), whose Server runs stopped at 51%, 66% and
    # 46% of the model's highest load, below their limits (measured when written). With a full KV cache counted in
    # tokens, not sequences (``cache_peakedness``), GH200 96GB 1.45x / 1.42x and Cisco's 1.44x / 1.30x: 17 of 22. With
    # H100 NVL's clock from its MLPerf compute-bound results (0.847 of SXM's, was estimated at 0.853) Cisco's p99 is
    # 1.305x: 16 of 22. With each engine's capacity policy (a full cache pauses and prefills prompts again, while it
    # is full): Cisco's 1.53x / 1.27x, QCT's GH200 96GB 1.51x / 1.38x: 17 of 22. With each cache sized from the memory
    # the device reports (95,830 MiB on H100 NVL, not 94e9 bytes) at its engine's published share: Cisco's 1.86x /
    # 1.57x, QCT's GH200 96GB 1.80x / 1.66x, QCT's H100 PCIe 1.44x / 1.36x: 16 of 22.
    assert v50_tpot.height == 22 and v50_tpot["within_target"].sum() == 16
    interactive = latency.filter((pl.col("tpot_limit_ms") == 40) & pl.col("run_id").str.contains("llama2"))
    assert interactive.height == 48 and interactive["within_target"].sum() >= 45
    server = latency.filter((pl.col("tpot_limit_ms") == 200) & pl.col("run_id").str.contains("llama2"))
    # 57 with the step ahead of vLLM's async scheduling in MI355X's runs (their p99 first tokens 0.87-1.01x, from
    # 0.71-0.92x; their means 1.17-1.43x, from 0.94-1.08x: v6.1's two means cross the line, v6.0's p99 comes in).
    assert server.height == 108 and server["within_target"].sum() >= 63
    assert latency["within_target"].sum() >= 164
    near = latency["error_near_max"].abs() <= validation.TARGET_LATENCY
    assert near.sum() >= 173
    edge = latency.filter((pl.col("statistic") == "p99") & (pl.col("measure") == "ttft_ms"))
    assert (edge["predicted_value"] >= edge["predicted_near_max"]).all()  # latency only climbs toward the edge
    # AMD's harness holds queries 300 ms and hands each batch to one GPU: its first tokens take ~1 s, not ~0.3 s.
    amd_ttft = latency.filter(
        (pl.col("accelerator_id") == "mi300x") & (pl.col("measure") == "ttft_ms") & (pl.col("round") == "MLPerf v4.1")
    )
    assert amd_ttft.height == 2 and amd_ttft["within_target"].all()
    # AMD's v5.1 vLLM decodes 8-9 steps per scheduler call: a prompt waits out the run, ~0.9 s at the Server limits
    # (measured when written: within 16% where the model without the runs gave 0.25-0.52x; within 33% once the prefill
    # steps of an engine that does not mix them cost a fixed part of their own, which lowers the highest load; the worst
    # 1.35x once a full cache's prompts are prefilled again, each engine's capacity policy).
    multi_step = latency.filter(
        pl.col("accelerator_id").is_in(["mi300x", "mi325x"])
        & (pl.col("measure") == "ttft_ms")
        & (pl.col("round") == "MLPerf v5.1")
        & pl.col("run_id").str.contains("server|mi300x8-llama2-70b-interactive")
        & ~pl.col("run_id").str.contains("krai")  # AMD's own runs; Krai ran AMD's public vLLM image, one step each
    )
    assert multi_step.height == 6 and (multi_step["error"].abs() <= math.log(1.4)).all()


def test_a_missed_server_latency_is_read_as_the_load_that_matches_it(validated):
    latency = validation.server_latency(validated)
    share = latency["matching_load_share"]
    found = latency.filter(share.is_not_null())
    assert found["matching_load_share"].is_between(min(published.MATCH_SHARES), max(published.MATCH_SHARES)).all()
    # Latency climbs with load: a figure the model overshoots at its highest load is matched below that load, one it
    # undershoots above it.
    over, under = found.filter(pl.col("error") > 0), found.filter(pl.col("error") < 0)
    assert over.height > 0 and under.height > 0
    assert (over["matching_load_share"] <= 1 + 1e-9).all() and (under["matching_load_share"] >= 1 - 1e-9).all()
    # Past its edge a replica's queue for a slot runs out (an infinite wait): a first token the model gives too short
    # up to there is matched at the first load where it leaps past (H200's v5.1 Server first tokens, 0.76x: 1.005).
    leap = latency.filter(pl.col("run_id").str.starts_with("mlperf51-h200x8-llama2-70b-server-ttft"))
    assert leap.height == 2 and leap["matching_load_share"].is_between(1.0, 1.01).all()
    # Measured when written: of the 94 latencies past 30% at the model's edge, 51 are its figure within 5% of that
    # load (27 within 2%, 74 within 10%; 197 of all 292 within 5%); 11 rows have no match from half that load to 15%
    # past it (6 of the misses: first tokens of Krai's H100 vLLM and MI325X Interactive runs the model gives too short
    # even at capacity, B300's 405B mean time per token, B200's 405B Interactive p99 first token even at half the
    # load). The one-card Hopper engines whose throughput the model overshoots (Cisco's H100 NVL, QCT's two GH200 96GB,
    # Lenovo's H100 NVL) have their time per token at 0.83-0.97 of that load (0.79-0.91 on a 2 GB TensorRT-LLM runtime,
    # before its start-up logs set it): their miss is the capacity's.
    misses = latency.filter(~pl.col("within_target"))
    near = (misses["matching_load_share"] - 1).abs() <= 0.05
    assert misses.height <= 100 and near.sum() >= 45
    one_card = latency.filter(
        pl.col("run_id").str.contains("qct-gh200x1|cisco-c245|lenovo-h100nvl") & (pl.col("measure") == "tpot_ms")
    )
    assert one_card.height == 8 and (one_card["matching_load_share"] < 0.975).all()


def test_latency_at_a_known_client_concurrency(cat, validated):
    # NIM 1.8.0's sweep of 70B FP8 on 2 H100 (5,000-token prompts): the benchmark sets the load, so these rows test
    # the latency-vs-load curve itself. Measured when written: ITL within 5% at every concurrency (5 to 250; 9% while
    # the HBM efficiency was fitted on the batch-1 step whole); TTFT 0.67-0.69x below saturation (0.5-0.65x without
    # the prefill-work queue), within 5% deep in saturation, 1.13x at the knee.
    table = validation.concurrency_latency(validated, cat.inference_runs)
    nim = table.filter(pl.col("round") == "NIM 1.8.0 docs")
    itl, ttft = (nim.filter(pl.col("measure") == m).sort("clients") for m in ("tpot_ms", "ttft_ms"))
    assert itl.height == ttft.height == 7 and itl["within_target"].all()
    assert itl["predicted_value"].is_sorted() and ttft["predicted_value"].is_sorted()  # both rise with the clients
    queued = ttft.filter(pl.col("clients") >= 150)  # the extra clients wait their turn (Little's law)
    assert queued.height == 3 and queued["saturated"].all() and queued["within_target"].all()
    # vLLM 0.19 on one H100, Llama 3.1 8B, 8 clients of ~20k-token prompts (its blog's load test; the stack's fixed step
    # cost comes from the same post's concurrency-1 runs). Measured when written: median ITL 1.22x (BF16 KV cache) and
    # 1.08x (FP8), TTFT 1.12x and 0.98x; with vLLM's 2024 fixed step cost (81 us a layer) the ITL was 1.29x and 1.17x.
    vllm = table.filter(pl.col("round") == "vLLM 0.19 blog")
    assert vllm.height == 4 and vllm["within_target"].all()
    # TensorRT-LLM (PyTorch backend, main of May 2026) on 2 B200, Llama 3.1 8B FP8, 1,000-token prompts and answers
    # (a pull request's figures, #14622; its concurrency-1 figure gives the stack's newest fixed step cost). Measured
    # when written: 8 clients 1.03x, 64 clients 0.89x.
    trtllm = table.filter(pl.col("round") == "TRT-LLM PR 14622")
    assert trtllm.height == 2 and trtllm["within_target"].all()


def test_vllm_on_rocm_has_its_own_fixed_step_cost_and_a_held_out_batch_sweep(cat, eff, validated):
    # ROCm/vllm's docs (July 2025, vLLM 0.9.1 on 8 MI300X at TP8, Llama 3.1 70B and 405B FP8, 128-token prompts,
    # 2,048-token answers, benchmark_latency): the batch-1 rows give vLLM on ROCm a fixed step cost of its own (58 and
    # 70 us a layer, 64 used; it took the other stacks' median, 58, before); the batches of 8, 32 and 128 are held
    # out. Measured when written: 70B 0.97x, 0.89x, 0.74x; 405B 0.93x, 0.89x, 0.90x. The real step grows faster with
    # the batch than the model's (about 50 us more a sequence on 70B, 26 on 405B: not the all-reduces, which would
    # grow with 405B's width), so the model is optimistic for AMD at TP8 under load.
    rocm = eff.stacks.filter(pl.col("stack") == "vllm-rocm")
    assert rocm["overhead_basis"].item().startswith("from batch-1 latencies of ROCm vLLM 0.9.1 docs")
    table = validation.concurrency_latency(validated, cat.inference_runs).filter(
        pl.col("round") == "ROCm vLLM 0.9.1 docs"
    )
    assert table.height == 6
    for _, sweep in table.sort("clients").group_by("model"):
        assert sweep["predicted_value"].is_sorted() and sweep["published_value"].is_sorted()
        ratio = sweep["predicted_value"] / sweep["published_value"]
        assert ((ratio <= 1.0) & (ratio >= 1 / 1.4)).all()


@settings(max_examples=60, deadline=None)
@given(slots=st.integers(1, 3000), low=st.floats(0.0, 0.98), high=st.floats(0.0, 0.98))
def test_the_probability_of_waiting_is_a_probability_that_grows_with_load(slots, low, high):
    # Over the exact range (<= 64 slots) and the many-server one alike, as floats and as expressions.
    low, high = sorted((low, high))
    frame = pl.DataFrame({"busy": [slots * low, slots * high], "slots": [float(slots)] * 2})
    waits = frame.select(sv.waiting_probability(pl.col("busy"), pl.col("slots")))["busy"].to_list()
    assert 0.0 <= waits[0] <= waits[1] + 1e-12 <= 1.0 + 1e-12
    assert waits == pytest.approx([sv.waiting_probability(slots * f, slots) for f in (low, high)], abs=1e-6)


def test_a_lone_request_waits_for_no_slot(validated):
    # One request at a time (NIM 1.8.0, 70B FP8 on 2 H100, 5,000-token prompt): nothing is queued, so its first
    # token is the prefill and a step. Measured when written: 328 ms predicted vs 407 ms published; 2,434 ms while
    # the slot wait used the many-server Erlang C, which is 0.22, not 0, for one idle slot.
    lone = validated.filter(pl.col("run_id") == "nim-l33-70b-h100-tp2-isl5000-ttft")
    assert lone.height == 1 and lone["abs_error"].item() <= validation.TARGET_LATENCY
    assert sv.waiting_probability(0.0, 1) == 0.0


def test_one_client_reads_the_lone_request_latency(cat):
    run = cat.inference_runs.filter(pl.col("run_id") == "nim-l33-70b-h100-tp2-isl5000-c5-tpot").row(0, named=True)
    eff = serving.calibrate(cat)
    stack = eff.stacks.filter(pl.col("stack") == "trtllm").row(0, named=True)

    def predict(**changes):
        return published.predict_detail(
            cat.accelerators, {**run, **changes}, stack["eta_bw"], stack["eta_c"], eff.factors()
        )

    lone = predict(scenario="latency", batch=1)["value"]
    one, many = predict(batch=1), predict()
    # one client is read off the load curve of Poisson arrivals, where other prompts' prefill interferes with its
    # decode: 5.4% at these 5,000-token prompts with TensorRT-LLM's 2026 fixed step cost (4.7% with 2025's)
    assert one["value"] == pytest.approx(lone, rel=0.08) and one["load_fraction"] < 0.1
    assert many["value"] > one["value"] and many["load_fraction"] > one["load_fraction"]


def test_p99_latency_is_above_the_mean_and_grows_with_load(cat):
    frame = serving.evaluate_serving(_scenario(prompt_tokens_p99=3000)).filter(pl.col("feasible"))
    assert frame.height
    assert (frame["tpot_ms"] >= frame["tpot_mean_ms"]).all() and (frame["ttft_ms"] > frame["ttft_mean_ms"]).all()


def test_slot_wait_tail_and_batch_percentile():
    # Few waiters: the p99 wait is zero; with all but one slot busy the tail is long and above the mean.
    assert sv.slot_wait_percentile_seconds(10, 100, 30.0) == 0.0
    mean = sv.slot_wait_seconds(99, 100, 30.0)
    assert sv.slot_wait_percentile_seconds(99, 100, 30.0) > mean > 0
    # The batch a request lives with: above the mean, never above the slots.
    assert 100 < sv.batch_percentile(100, 1000) < 130 and sv.batch_percentile(990, 1000) == 1000
    assert sv.step_percentile_seconds(0.01, 1e-4, 0, 100) == 0.01  # no load: the weights alone


def test_headroom_is_never_exceeded_and_replicas_are_not_capped():
    # Committed pricing: no rental ceiling (on-demand's 512 chips would rule these fleets out, and say so).
    s = _scenario(requests_per_s=2000, headroom=0.6, pricing=("commit-1y",))
    frame = serving.evaluate_serving(s).filter(pl.col("feasible"))
    assert frame.height and (frame["utilisation"] <= 0.6 + 1e-9).all()
    assert frame["replicas"].max() > 16 and frame["chips"].max() > 512


def test_small_model_on_l4_gets_as_many_replicas_as_needed():
    s = _scenario(model=ModelSpec.from_params(8e9), weight_precision="int4", requests_per_s=10, accelerators=("l4",))
    frame = serving.evaluate_serving(s).filter(pl.col("feasible"))
    assert frame.height and frame["replicas"].min() >= 2


def test_70b_on_l4_uses_a_multi_card_replica_over_pcie_or_says_why():
    s = _scenario(weight_precision="int4", requests_per_s=1, tpot_ms=100, accelerators=("l4",))
    row = serving.evaluate_serving(s).row(0, named=True)
    assert (row["feasible"] and row["chips_per_replica"] > 1 and row["over_pcie"]) or row["infeasible_reason"]
    assert row["feasible"]


def test_cli_serve_contract(cli):
    out = cli("serve", "--params", "70e9", "--accelerator", "h100-sxm", "--precision", "fp8", "--rps", "10", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for key in (
        "accelerator",
        "stack",
        "utilisation",
        "headroom",
        "usd_per_month",
        "chips_per_replica",
        "replicas",
        "chips",
        "tokens_per_s_per_chip",
        "ttft_ms",
        "tpot_ms",
        "usd_per_million_tokens",
        "fits_in_memory",
    ):
        assert key in result
    assert result["tpot_ms"] <= 50 and result["ttft_ms"] <= 2000


def test_cli_compare_serve_defaults_to_on_demand(cli):
    out = cli("compare", "--mode", "serve", "--params", "8e9", "--rps", "1", "--json")
    assert out.returncode == 0, out.stderr
    options = json.loads(out.stdout)["options"]
    assert options and {o["pricing_model"] for o in options} == {"on-demand"}
    spot = json.loads(cli("compare", "--mode", "serve", "--params", "8e9", "--pricing", "spot", "--json").stdout)
    assert any("preempted" in w for w in spot["recommendation"]["warnings"])


@pytest.mark.parametrize(
    "args, flag",
    [
        (["serve", "--params", "70e9", "--accelerator", "h100-sxm", "--rps", "-1"], "--rps"),
        (
            ["serve", "--params", "70e9", "--accelerator", "h100-sxm", "--rps", "1", "--tokens-per-day", "5"],
            "--tokens-per-day",
        ),
        (["serve", "--params", "70e9", "--accelerator", "nope"], "--accelerator"),
        (["serve", "--params", "70e9", "--accelerator", "h100-sxm", "--precision", "fp2"], "--precision"),
        (["serve", "--params", "70e9", "--accelerator", "h100-sxm", "--prompt-tokens", "1.5"], "--prompt-tokens"),
        (["serve", "--params", "70e9", "--accelerator", "h100-sxm", "--headroom", "0.99"], "--headroom"),
        (["serve", "--params", "70e9", "--accelerator", "h100-sxm", "--stack", "cuda"], "--stack"),
    ],
)
def test_cli_serve_bad_input(cli, args, flag):
    out = cli(*args)
    assert out.returncode == 2 and flag in out.stderr and out.stderr.count("\n") == 1


def test_price_ties_between_clouds_come_in_a_fixed_order(cat):
    """Two clouds at the same price per token: by accelerator, then cloud name (not whichever a join left first)."""
    scenario = serving.ServeScenario(model=ModelSpec.preset("mixtral-8x7b"), requests_per_s=20)
    frame = serving.evaluate_serving(scenario, cat)
    keys = frame.filter(pl.col("feasible")).select("usd_per_million_tokens", "accelerator_id", "cloud")
    ties = keys.filter(pl.col("usd_per_million_tokens").is_duplicated())
    assert ties.height >= 2, "the scenario must have price ties for this test to mean anything"
    assert keys.rows() == keys.sort(keys.columns, maintain_order=True).rows()


@pytest.mark.parametrize("slots", [1, 2, 16, 64, 65, 1024])
@pytest.mark.parametrize("busy", [0.0, 0.1, 0.5, 0.8, 0.9, 0.95, 0.98])
def test_the_probability_of_waiting_for_a_slot_is_erlang_c(slots, busy):
    # Exact Erlang C by the Erlang B recursion, against the model's: exact up to 64 slots, the many-server form
    # above (floats and expressions alike). A lone request never waits.
    load, blocking = slots * busy, 1.0
    for k in range(1, slots + 1):
        blocking = load * blocking / (k + load * blocking)
    exact = blocking / (1 - busy * (1 - blocking))
    approx = sv.waiting_probability(load, slots)
    tolerance = 1e-9 if slots <= sv.EXACT_ERLANG_SLOTS else 0.013
    assert approx == pytest.approx(exact, abs=tolerance)
    frame = pl.DataFrame({"busy": [load], "slots": [float(slots)]})
    assert frame.select(sv.waiting_probability(pl.col("busy"), pl.col("slots"))).item() == pytest.approx(approx)


def test_long_answers_stay_in_flight_longer_so_a_batch_holds_longer_sequences():
    # Answers of 100 or 500 tokens, equally likely: the 500-token ones are in 5/6 of the decode steps, so a step's
    # sequences hold (100 x 50 + 500 x 250) / 600 = 216.7 answer tokens on average, not 300 / 2.
    lengths = [100, 500]
    squared = sum(n * n for n in lengths) / len(lengths)
    assert sv.decode_context_tokens(1000, 300, squared) == pytest.approx(1000 + (100 * 50 + 500 * 250) / 600)
    assert sv.decode_context_tokens(1000, 300) == 1000 + 150
    # from a mean and a 99th percentile: lognormal, wider for a longer tail, the mean squared without one
    assert sv.second_moment(300) == 300**2 < sv.second_moment(300, 600) < sv.second_moment(300, 1200)


def test_an_answer_tail_takes_kv_room_and_reading_time(cat):
    eff = calibrate(cat)
    one, tail = (
        options._replicas(cat, _scenario(accelerators=("h100-sxm",), output_tokens_p99=p99), eff)
        .filter(pl.col("tensor_parallel") == 4)
        .row(0, named=True)
        for p99 in (None, 1500)
    )
    assert tail["max_sequences"] < one["max_sequences"] and tail["kv_read_s"] > one["kv_read_s"]
    assert tail["prefill_s"] == one["prefill_s"]  # prompts are unchanged


def test_cli_takes_the_length_tails(capsys):
    from workbook.cli import main

    argv = ["serve", "--params", "70e9", "--accelerator", "h100-sxm", "--json", "--output-tokens", "300"]
    assert main([*argv, "--output-tokens-p99", "1500", "--prompt-tokens-p99", "4000"]) == 0
    assert json.loads(capsys.readouterr().out)["feasible"]
    assert main([*argv, "--output-tokens-p99", "100"]) == 2  # below the mean
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--output-tokens-p99" in err and "300" in err


@pytest.mark.parametrize(
    "preset, shape, field",
    [
        ("llama3-70b", dict(prompt_tokens=200_000), "prompt_tokens"),
        ("llama3-8b", dict(prompt_tokens=1_000_000), "prompt_tokens"),
        ("llama3-8b", dict(prompt_tokens=1000, prompt_tokens_p99=300_000), "prompt_tokens_p99"),
        ("llama3-8b", dict(prompt_tokens=1000, output_tokens_p99=131_000), "output_tokens_p99"),
        ("mixtral-8x7b", dict(prompt_tokens=32_000, output_tokens=1000), "prompt_tokens"),
    ],
)
def test_a_request_longer_than_the_models_context_window_is_refused(preset, shape, field):
    model = ModelSpec.preset(preset)
    with pytest.raises(InputError) as err:
        _scenario(model=model, **shape)
    assert err.value.field == field and f"{model.context_tokens:,}-token context window" in err.value.message


def test_a_request_that_fills_the_context_window_exactly_is_served_and_a_shape_without_one_is_unbounded():
    _scenario(model=ModelSpec.preset("llama3-70b"), prompt_tokens=131_072 - 300, output_tokens=300)
    _scenario(model=ModelSpec.from_params(70e9), prompt_tokens=1_000_000)  # no context window stated


def test_a_hugging_face_config_states_its_context_window(tmp_path):
    config = dict(
        hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, vocab_size=32_000, max_position_embeddings=8192
    )
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert ModelSpec.from_hf_config(tmp_path / "config.json").context_tokens == 8192


def test_a_too_slow_reason_quotes_a_speed_slower_than_the_target_and_a_replica_that_holds_the_model():
    # DeepSeek-V3 on GH200 96GB: one to four chips cannot hold its 671 GB; a pipeline of eight nodes holds it and is
    # too slow. The reason's best speed must be the one of a replica that holds it (a replica that does not is no
    # evidence), and the row shown must be that replica with about one sequence in flight.
    s = _scenario(
        model=ModelSpec.preset("deepseek-v3"),
        weight_precision="fp8",
        kv_precision="fp8",
        prompt_tokens=2000,
        output_tokens=500,
        requests_per_s=20,
        accelerators=("gh200",),
    )
    row = serving.evaluate_serving(s).row(0, named=True)
    reason = row["infeasible_reason"]
    assert "per-token target" in reason, reason
    best_ms = float(reason.split("(best ")[1].split(" ms")[0])
    assert best_ms > s.tpot_ms, reason
    assert row["fits_in_memory"] and row["memory_per_chip_gb"] <= row["hbm_gb"], row


def _fleet(**kw) -> dict:
    s = serving.ServeScenario(model=ModelSpec.preset("llama3-70b"), **kw)
    return serving.recommend_serving(serving.evaluate_serving(s), s).best


def test_a_first_token_target_near_a_long_prompts_prefill_does_not_balloon_the_fleet():
    # 100,000-token prompts, 1 a second, on B200: each prefill takes 1.7 s on a replica of 8. A normal tail on the
    # prompts arriving in a step (one step in a thousand carries one) gave every step's 99th percentile a tenth
    # of a prefill, so the fleet went 56 -> 232 -> 880 chips from a 2,000 to a 1,750 ms target.
    chips = {
        ttft: _fleet(prompt_tokens=100_000, requests_per_s=1, ttft_ms=ttft, accelerators=("b200",))["chips"]
        for ttft in (2000, 1800, 1750)
    }
    assert chips[1750] <= 2 * chips[2000], chips
    # the prompts' own prefill alone takes 1.7 s: an idle replica meets 1,750 ms, and a dozen replicas carry 1 rps
    assert chips[2000] <= 12 * 8, chips


def test_a_longer_prompt_tail_costs_chips_smoothly():
    # A mean prompt of 2,000 tokens, its 99th percentile 16k to 48k: the fleet grows with the tail, without a cliff
    # (8 -> 56 chips from 24k to 32k when the lengths' spread was an uncut lognormal past its reach).
    for router in ("least-loaded", "round-robin"):
        chips = [
            _fleet(
                prompt_tokens=2000, prompt_tokens_p99=p99, requests_per_s=5, accelerators=("h100-sxm",), router=router
            )["chips"]
            for p99 in (16_000, 24_000, 32_000)
        ]
        assert chips == sorted(chips) and chips[-1] <= 3 * chips[0], (router, chips)
    with pytest.raises(InputError, match=r"prompt_tokens_p99: .* accepted from 2,000 to 5\d,\d{3}"):
        serving.ServeScenario(model=ModelSpec.preset("llama3-70b"), prompt_tokens=2000, prompt_tokens_p99=80_000)
