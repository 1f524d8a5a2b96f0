"""How it sounds and where it goes: tuning, voices, the mixer and audio files, MIDI bytes, the
live outputs (ports), scores. Imports only ``cues`` (docs/architecture.md)."""
