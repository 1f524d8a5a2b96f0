"""Hot standby (docs/standby.md): the main/backup pair, its signed packets, the key."""
