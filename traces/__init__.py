"""Traces, laid out as the path a trace takes: ``format`` (trace format v1 and its codecs), ``recording`` (simulations
and TLC walks that write traces), ``replay`` (replaying traces through the reference, ``kraftspec check``, vectors),
``engines`` (``kraftspec validate`` at scale: local, ``--jobs``, Spark) and ``metalog`` (KRaft metadata-log readers
and the audit)."""

from kraftspec import accelerate

accelerate.install()  # replay runs the reference with faster constructors (``kraftspec.accelerate``, checked equal)
