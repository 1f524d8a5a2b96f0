"""Remote controls of a live show: OSC, MIDI input and MIDI Show Control, through one gate."""
