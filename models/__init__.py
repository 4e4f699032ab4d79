"""Hypothesis strategies and rule-based state machines over the reference functions."""
