"""The built-in voices: each instrument's model as numbers (``models``), its synthesis in numpy,
and the notes a render asks for (``notes``: keys, validation, the cache)."""
