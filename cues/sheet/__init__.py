"""The cue-sheet format: a TOML sheet read into an immutable ``Rite``, every key checked with
its file, line and cue (``loader`` reads; the other modules are the tables a sheet holds)."""
