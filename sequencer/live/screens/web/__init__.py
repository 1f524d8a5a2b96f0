"""The screens for the room (``yuezheng live … --web [ADDR:]PORT``): the performers' 節 display
(``/``) and the operator remote (``/operator``), bundled pages over one WebSocket feed.

``view`` is the narrow interface to the show, ``player_view`` its adapter for the live player
(and the screens' options), ``feed`` the messages, ``server`` the HTTP/WebSocket server (its own
thread and event loop), ``static/`` the pages; ``announce`` says what changed (``--speak``,
``--plain``), ``plain`` is the console for screen readers.
"""
