"""How it sounds and where: tuning, the 樂懸 layouts, the instrument catalog, voices, outputs."""
