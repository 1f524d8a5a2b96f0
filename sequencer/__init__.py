"""When it is played: exact time, the compiler from a rite to a timeline, the SMF writer, render,
the checks, the judge, pictures, the live show. Imports ``cues`` and ``instruments``
(docs/architecture.md)."""
