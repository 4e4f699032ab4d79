"""Trace formats, codecs (including KRaft metadata-log readers) and replay."""
