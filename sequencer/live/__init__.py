"""``yuezheng live``: a rite played cue by cue to a MIDI output.

- ``protocol``: the typed messages between threads and processes (cue states, player commands,
  sender commands and events);
- ``cuelist``: the cue state machine (pure); ``player``: drives it and the sender, keeps the
  show log (``showlog``); ``views``: the state it shows;
- ``sender`` (parent) and ``sending_process`` (child, with ``playing_cue``): the one sending
  process of the show; ``schedule``: a cue's schedule as the sender gets it;
- ``console`` (keys, screen, curses loop), ``osc`` and ``midi_in``: the controls.
"""
