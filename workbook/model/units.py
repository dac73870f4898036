"""Shared constants: one home for every unit conversion and convention the formulas use."""

FMA_FLOPS = 2  # one fused multiply-add = 2 FLOPs
SECONDS_PER_HOUR = 3_600
SECONDS_PER_DAY = 86_400
HOURS_PER_YEAR = 8_760
HOURS_PER_MONTH = HOURS_PER_YEAR / 12  # 730
DAYS_PER_YEAR = HOURS_PER_YEAR / 24  # 365
HEAD_DIM = 128  # attention head size when a model does not state it (Llama 2/3, GPT-3, Mistral)

# Dense peak column of data/accelerators.csv for each training/serving compute precision.
PEAK_COLUMN = {"bf16": "bf16_flops_per_s", "fp8": "fp8_flops_per_s", "int8": "int8_ops_per_s"}
