"""``yuezheng check``: 「間若一」 proven on a MIDI file, an audio recording or a live show log
(the inputs, the onset detector, the equal-interval grid, the report)."""
