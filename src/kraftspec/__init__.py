"""kraftspec: an executable, formally checked reference implementation of Apache Kafka's KRaft control plane.

Layers (one name per rule in every layer): ``kraftspec.reference`` (pure transition functions),
``kraftspec.spec`` (TLA+ modules and the TLC bridge), ``kraftspec.models`` (Hypothesis strategies and
state machines), ``kraftspec.proofs`` (CrossHair contracts) and ``kraftspec.traces`` (trace formats,
codecs and replay).
"""

__version__ = "0.1.0"
