"""Replaying traces through the reference: the verdict of one trace, each component's step replay, the stated-value
comparison, ``kraftspec check`` (and ``--with-tlc``) and the test vectors exported from replays."""
