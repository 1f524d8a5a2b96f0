"""The one sending process of a live show: the parent's handle (``sender``), the child
(``process``), a cue as it plays, what it delivered, a muted output."""
