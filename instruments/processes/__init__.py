"""Forked children: the workers of a render, and a child that dies with its parent."""
