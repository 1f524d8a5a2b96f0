"""The timeline: exact time, a rite and its settings compiled to one deterministic ``Timeline``
(pieces, the 射節 engine, drums, the ensemble), and the rite as the commands chose it."""
