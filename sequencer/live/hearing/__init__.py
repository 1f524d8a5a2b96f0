"""The drum heard (``live --hear``) and followed (``live --follow``): the hearing process, the
strokes placed on the 射節's grid, and the 射節 kept on the drummer's grid."""
