"""The timeline written out: Standard MIDI Files, audio (built-in voices or FluidSynth), and each
cue's schedule of MIDI messages for a live show."""
