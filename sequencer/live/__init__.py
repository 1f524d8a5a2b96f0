"""``yuezheng live``: a rite played cue by cue to a MIDI output (docs/architecture.md).

Its rooms, each importing only those before it: ``protocol`` (the typed messages between threads
and processes), ``cuelist`` (the cue state machine, pure) and ``go_safety``; ``sending/`` (the
one sending process); ``player/`` (the player, built from a show plan, and its parts);
``control/`` (OSC, MIDI input); ``standby/`` (hot standby); ``link/`` (Ableton Link);
``screens/`` (the curses and plain consoles, the web pages); ``show`` (the show assembled).
"""
