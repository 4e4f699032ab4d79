"""Hypothesis profiles: ``ci`` (derandomized, reproducible) is used when CI is set; ``dev`` otherwise.

For the whole session Hypothesis draws no constants from loaded modules' source, so a derandomized
test generates the same examples whether it runs alone, in a selection or in the full suite
(:mod:`kraftspec.models.determinism`)."""

from __future__ import annotations

import os
from typing import Iterator

import pytest
from hypothesis import HealthCheck, settings

from kraftspec.models.determinism import without_local_constants

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True, max_examples=200,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, print_blob=True, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True, scope="session")
def _examples_depend_on_the_seed_alone() -> Iterator[None]:
    with without_local_constants():
        yield
