"""Pictures of a rite: the timeline and the hang from above (matplotlib)."""
