"""Notation: the 詩譜 as music21 scores, and their MusicXML/PDF files."""
