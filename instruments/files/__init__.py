"""File writing below every output: whole or not at all (``atomic``), and 24-bit WAV (``wav24``)."""
