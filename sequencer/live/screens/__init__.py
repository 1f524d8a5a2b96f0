"""The operator's and performers' screens: the curses console, the plain console for screen
readers, the web pages (``web/``), and what they all show of a live show (``show_state``)."""
