"""Pure reference functions for KRaft: every transition is ``(state, input) -> (state', output)``.

No I/O, clocks or randomness: time, offsets and metadata.version are arguments.
"""
