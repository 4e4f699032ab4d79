"""Apache Kafka in the loop: a JVM harness around Kafka's released jars, driven by kraftspec trace inputs.

The Maven project beside this file (``pom.xml``, ``src/``) runs Kafka's own controller-side classes and Raft
client under a clock and a random source that the trace gives. :mod:`kraftspec.harness.jvm` builds it for a
Kafka version and keeps one JVM per run; :mod:`kraftspec.harness.adapter` makes it a
:class:`kraftspec.oracle.Adapter`; :mod:`kraftspec.harness.conform` judges what Kafka did with the reference.
"""
