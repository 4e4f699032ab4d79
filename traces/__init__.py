"""Trace formats, codecs (including KRaft metadata-log readers) and replay."""

from kraftspec import accelerate

accelerate.install()  # replay runs the reference with faster constructors (``kraftspec.accelerate``, checked equal)
