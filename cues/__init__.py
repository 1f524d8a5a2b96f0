"""What is played: the cue-sheet format, its loader and validator, the repertoire, the rites."""
