"""The offline render's pipeline: notes placed in the courtyard, mixed in blocks, measured for
loudness, limited and written (``render_files``), on several processes where it pays."""
