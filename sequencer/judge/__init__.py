"""「不鼓不釋」: the 釋獲者's tally of a round shot to music (``tally``) and its report
(``report``)."""
