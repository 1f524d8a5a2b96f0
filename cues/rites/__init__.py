"""The built-in rites, as cue sheets (TOML) with citations."""
