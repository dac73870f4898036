"""How far the model's serving throughput has been from published results: the range the answer's cost carries
besides the price spread.

The results are those that ask the serving card's question, how much a system serves within latency limits
(MLPerf's Server and Interactive throughput: ``scenario`` server, ``tokens_per_s``), each predicted without any
result of its own system (:func:`workbook.serving.validation.validate`); for each accelerator, model and kind of
replica the newest round it ran in with the stack (the software a buyer would run on it today; a round that left out
a chip's model keeps the one before: MLPerf v6.1 ran H200 only on Llama 3.1 8B, one GPU, so v5.1's Llama 2 70B and
405B results stay in H200's range), on the stack's current engine (a result that ran vLLM's retired V0 engine,
``engine``, tests the model on that engine, not the answer's). ``low`` / ``high`` are the lowest and
highest ln(predicted / published), widened to include 0 so that the model's own answer lies inside: of the
option's chip with its stack where it has such results; else of the stack on other chips together with the chip's
results with other stacks, where it has some (without results of both, the model cannot tell an error about the chip
from one about the stack's port to it, so it carries both: vLLM on B200 or L40S, with no result of its own on vLLM's
current engine, carries TensorRT-LLM's on that chip beside vLLM's on other chips); else of the stack on other chips;
else of every result
(``model_error_scope`` says which: chip, stack and chip, stack, all). Results served from separate prefill and decode
pools (``prefill_chips`` published) test the pools' formulas, not a shared replica's; and a mixture-of-experts model
runs a step the dense results do not test (its experts split over the replica's chips), whose error has moved on its
own: MLPerf v5.1's DeepSeek-R1 Server results served 0.47x-0.57x the throughput the model predicts on B200, GB200 and
GB300, v6.0's, on TensorRT-LLM 1.2, 0.94x-1.09x on B200, B300, GB200 and GB300, where the dense models' newest on
those chips served 0.69x-1.09x. So each kind of option (``KINDS``: pools or not, experts or not) takes the errors of
its own kind at the chip and stack levels; every result at the last.

A replica count follows the throughput, so the chips the user's traffic needs scale as predicted / published: at
each end of the range, the chips needed x exp(low) or x exp(high) in whole replicas, rented as the option rents
(whole instances: :func:`workbook.serving.options._rented_at_error`), at that end's price. A fleet on one instance
rented whole with room to spare keeps its bill where the error only fills that room.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from workbook import cache
from workbook.catalog import Catalog
from workbook.serving.calibration import STACK_NAMES, calibrate
from workbook.serving.validation import is_newest, validate

BAND_COLUMNS = ["model_error_low", "model_error_high", "model_error_results", "model_error_scope"]
KINDS = ("disaggregated", "moe")  # an option takes the errors of its own kind of replica and of model


@dataclasses.dataclass(frozen=True)
class ThroughputBand:
    """``errors``: each held-out result's stack, accelerator and ln(predicted / published) (column ``error``)."""

    errors: pl.DataFrame  # run_id, stack, accelerator_id, disaggregated, moe, error

    def for_options(self, options: pl.DataFrame) -> pl.DataFrame:
        """``options`` (``stack``, ``accelerator_id``, and :data:`KINDS`: False where absent) with
        :data:`BAND_COLUMNS`: the range of the chip's own results of the option's kind with its stack, else of the
        stack's of that kind, else of every result."""
        kind = list(KINDS)
        chip = _range(self.errors, ["stack", "accelerator_id", *kind], "chip")
        stack = _range(self.errors, ["stack", *kind], "stack")
        pooled = _range(self.errors.with_columns(_all=pl.lit(0)), ["_all"], "all").drop("_all")
        options = options.with_columns(pl.lit(False).alias(k) for k in kind if k not in options.columns)
        keys = options.select("stack", "accelerator_id", *kind).unique()
        levels = [
            keys.join(chip, on=["stack", "accelerator_id", *kind], how="inner"),
            _beside(self.errors, keys),
            keys.join(stack, on=["stack", *kind], how="inner"),
            keys.join(pooled, how="cross"),
        ]
        # The most specific level of each option: the first one that has it.
        return (
            pl.concat(levels, how="vertical_relaxed")
            .unique(["stack", "accelerator_id", *kind], keep="first", maintain_order=True)
            .select("stack", "accelerator_id", *kind, *BAND_COLUMNS)
        )


def _beside(errors: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """For each option (``keys``) whose chip has results of its kind with other stacks: the range of those and of the
    option's stack on other chips (scope "stack and chip")."""
    pairs = keys.join(errors.rename({"stack": "_stack", "accelerator_id": "_chip"}), on=list(KINDS))
    other_stack = (pl.col("_chip") == pl.col("accelerator_id")) & (pl.col("_stack") != pl.col("stack"))
    keys_ = ["stack", "accelerator_id", *KINDS]
    return _range(
        pairs.filter(other_stack.any().over(keys_) & (other_stack | (pl.col("_stack") == pl.col("stack")))),
        keys_,
        "stack and chip",
    )


def _range(errors: pl.DataFrame, keys: list[str], scope: str) -> pl.DataFrame:
    return errors.group_by(keys).agg(
        model_error_low=pl.min_horizontal(pl.col("error").min(), pl.lit(0.0)),
        model_error_high=pl.max_horizontal(pl.col("error").max(), pl.lit(0.0)),
        model_error_results=pl.len(),
        model_error_scope=pl.lit(scope),
    )


@cache.per_catalog("serving-throughput-band", ThroughputBand)  # once per table content and code version
def throughput_band(cat: Catalog) -> ThroughputBand:
    """The held-out throughput errors within latency limits behind the cost ranges (module docstring)."""
    rows = cat.inference_runs.filter(
        (pl.col("scenario") == "server")
        & (pl.col("measure") == "tokens_per_s")
        & pl.col("stack").is_in(list(STACK_NAMES))
        & pl.col("engine").is_null()  # an answer runs each stack's current engine, not vLLM's retired V0
    )
    pools = pl.col("prefill_chips").is_not_null()
    newest = rows.filter(is_newest("stack", "accelerator_id", "model", pools))
    kinds = newest.select("run_id", disaggregated=pools, moe=pl.col("active_params") < pl.col("params"))
    errors = validate(cat, calibrate(cat), newest).join(kinds, on="run_id")
    return ThroughputBand(
        errors=errors.filter(pl.col("error").is_not_null()).select("run_id", "stack", "accelerator_id", *KINDS, "error")
    )
