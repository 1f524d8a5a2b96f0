"""Ableton Link (docs/link.md): the session's clock and the show in a session."""
