"""Engines that run trace sets and metadata logs at scale (``kraftspec validate``): local (``--jobs N``), Spark, and
a one-machine Spark cluster; the per-unit work and the report summary."""
