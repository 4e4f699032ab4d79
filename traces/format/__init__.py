"""The trace format v1 (``traces/FORMAT.md``) and its codecs: the envelope, each component's part, JSON Lines and
Parquet, the fast decoding path, the limits on hostile input and the fuzzing engine for every reader."""
