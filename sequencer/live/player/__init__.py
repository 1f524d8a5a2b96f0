"""The live player: the cue state machine driving the sending process, the operator's commands,
the show log, and what it shows (``snapshot``)."""
