"""Control values (plain dict) -> Scenario. Pure: no widgets here, so it is tested without a kernel.

Units in the app are those a manager reads: billions of parameters and tokens, days, millions of USD.
"""

from __future__ import annotations

from workbook.errors import InputError, check_number
from workbook.model.spec import PRESET_NAMES, PRESETS
from workbook.training.scenario import (
    COMPUTE_OPTIMAL_TOKENS_PER_PARAM,
    TODAYS_PRACTICE_TOKENS,
    Assumptions,
    Constraints,
    ModelSpec,
    Scenario,
)

# Token budget presets (label, source): the default is compute-optimal, not what current models are trained on.
TOKEN_PRESETS = {
    "compute_optimal": "Compute-optimal: 20 tokens per parameter (Hoffmann et al. 2022, 'Chinchilla')",
    "todays_practice": "Today's practice: 15T tokens (Llama 3 8B/70B and 3.1 405B, arXiv:2407.21783; "
    "DeepSeek-V3 14.8T)",
    "custom": "Your own number",
}

# The model: any size, its shape derived from the parameter count, or a published architecture (its shape, size and
# attention from workbook.model.spec.PRESETS: a mixture of experts' active parameters, DeepSeek's latent KV cache).
CUSTOM_MODEL = "custom"


def model_choices() -> list[tuple[str, str]]:
    """(label, key) of the model menu: any size first, then each preset by name, "Llama 3.1 405B (dense)",
    "DeepSeek-V3 / R1: 671B, 37B active" (short enough to read in the menu)."""
    return [("Any size (shape from the parameter count)", CUSTOM_MODEL)] + [
        (_menu_label(key, spec), key) for key, spec in PRESETS.items()
    ]


def _menu_label(key: str, spec: ModelSpec) -> str:
    if spec.active_params == spec.params:
        return f"{PRESET_NAMES[key]} (dense)"
    return f"{PRESET_NAMES[key]}: {spec.params / 1e9:,.0f}B, {spec.active_params / 1e9:,.0f}B active"


DEFAULTS = {
    "model": CUSTOM_MODEL,
    "params_b": 70.0,
    "moe": False,
    "active_params_b": 70.0,
    "tokens_preset": "compute_optimal",
    "tokens_b": 1400.0,
    "framework": "pytorch",
    "current_platform": "nvidia",
    "days": 30,
    "precision": "bf16",
    "pricing": "on-demand",
    "cloud": "any",
    "multi_cloud": False,
    "lock_in": False,
    "budget_musd": 0.0,
    "use_mfu_override": False,
    "mfu_override": 0.4,
    "use_goodput_override": False,
    "goodput_override": 0.8,
    "include_migration_cost": True,
    "usd_per_engineer_week": 6000.0,
}


def preset_model(values: dict) -> ModelSpec | None:
    """The published architecture chosen in the model menu; None for a model of any size."""
    key = values.get("model", CUSTOM_MODEL)
    return None if key == CUSTOM_MODEL else ModelSpec.preset(key)


def preset_sizes(preset: ModelSpec) -> dict:
    """The size controls' values (``params_b``, ``moe``, ``active_params_b``) of an architecture, as the page
    shows them (locked) while it is chosen."""
    return {
        "params_b": preset.params / 1e9,
        "moe": preset.is_moe,
        "active_params_b": preset.active_params / 1e9,
    }


def set_by_model(values: dict) -> list[str]:
    """The size controls among ``values`` (a link's) whose value the chosen architecture replaces with its own
    (:func:`preset_sizes`): the page shows the architecture's, and the link's message says so."""
    preset = preset_model(values)
    own = {} if preset is None else preset_sizes(preset)
    return [name for name in own if name in values and values[name] != own[name]]


def params_b(values: dict) -> float:
    """The model's parameters in billions: the chosen architecture's, else the size control's."""
    preset = preset_model(values)
    return values["params_b"] if preset is None else preset.params / 1e9


def tokens_b(values: dict) -> float:
    """Training tokens in billions for the chosen preset (TOKEN_PRESETS) or the user's own number."""
    preset = values["tokens_preset"]
    if preset == "compute_optimal":
        return COMPUTE_OPTIMAL_TOKENS_PER_PARAM * params_b(values)
    return TODAYS_PRACTICE_TOKENS / 1e9 if preset == "todays_practice" else values["tokens_b"]


# Scenario field -> the control (key in DEFAULTS) that sets it, in the same unit; fields set in other units
# (params, tokens, budget) are checked in the control's unit below, before the scenario sees them.
CONTROL_OF_FIELD = {
    "deadline_days": "days",
    "mfu_override": "mfu_override",
    "goodput_override": "goodput_override",
    "usd_per_engineer_week": "usd_per_engineer_week",
    "clouds": "cloud",
}
MAX_BUDGET_MUSD = 1e6  # $1T: the scenario's budget_usd bound, in the control's unit


def scenario_from(values: dict) -> Scenario:
    """Build the Scenario; raises InputError whose ``field`` is the control's key (``budget_musd``) and whose
    message is in that control's unit, when a value is out of range."""
    v = {**DEFAULTS, **values}
    model = _model(v)
    if v["budget_musd"] != 0:
        check_number("budget_musd", v["budget_musd"], 1e-6, MAX_BUDGET_MUSD)
    try:
        return Scenario(
            model=model,
            tokens=tokens_b(v) * 1e9,
            framework=v["framework"],
            current_platform=v["current_platform"],
            precision=v["precision"],
            days=float(v["days"]),
            pricing=(v["pricing"],),
            constraints=Constraints(
                deadline_days=float(v["days"]),
                budget_usd=v["budget_musd"] * 1e6 or None,
                framework_lock_in=v["lock_in"],
                multi_cloud=v["multi_cloud"],
                clouds=() if v["cloud"] == "any" else (v["cloud"],),
            ),
            assumptions=Assumptions(
                mfu_override=v["mfu_override"] if v["use_mfu_override"] else None,
                goodput_override=v["goodput_override"] if v["use_goodput_override"] else None,
                include_migration_cost=v["include_migration_cost"],
                usd_per_engineer_week=v["usd_per_engineer_week"],
            ),
        )
    except InputError as err:  # name the control, not the scenario field
        raise InputError(CONTROL_OF_FIELD.get(err.field, err.field), err.message) from None


def _model(v: dict) -> ModelSpec:
    """The chosen architecture, else a shape derived from the size controls (active parameters within the total)."""
    preset = preset_model(v)
    if preset is not None:
        return preset
    params = v["params_b"] * 1e9
    active = v["active_params_b"] * 1e9 if v["moe"] else params
    if v["moe"] and active > params:
        raise InputError(
            "active_params_b",
            f"must not exceed the model size ({v['params_b']:g}B), got {v['active_params_b']:g}B",
        )
    return ModelSpec.from_params(params, active)
