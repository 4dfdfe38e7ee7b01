"""Zoo presets (TOML data), shipped as keras_posattn._zoo."""
