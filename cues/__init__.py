"""What is played: the model, the cue-sheet format, its loader and validator, the catalog of
instruments, the standard hangs, the repertoire, the built-in rites. Imports nothing of the project
above it (docs/architecture.md)."""
