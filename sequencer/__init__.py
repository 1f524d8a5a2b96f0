"""When it is played: exact time, the compiler from a rite to a timeline, the 射節, the player."""
