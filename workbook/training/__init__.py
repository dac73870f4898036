"""Training: scenario -> calibration -> options (evaluate) -> rules -> recommend -> validation."""
