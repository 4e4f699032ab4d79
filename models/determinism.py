"""Hypothesis runs that depend on their seed alone, whatever the process imported before them.

Hypothesis (6.1xx) replaces about 5% of its integer, float, string and bytes draws with a constant
taken from the source code of every local (non-test) module in ``sys.modules`` at that moment. Which
modules are loaded depends on what ran earlier in the process (``kraftspec agree`` imports
``kraftspec.spec``; a test selection imports other modules than the full suite), so a derandomized or
seeded run would generate other examples after it, and a printed seed would not reproduce a failure.
Hypothesis has no setting for this, so :func:`without_local_constants` swaps its private pool getter.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from hypothesis.internal.conjecture import providers

try:
    from hypothesis.internal.constants_ast import Constants
except ImportError:  # a Hypothesis without source constants: nothing to turn off
    Constants = None  # type: ignore[assignment, misc]

HARVEST = getattr(providers, "_get_local_constants", None)
"""Hypothesis' own pool getter, as imported (tests restore it to show the dependence this module removes)."""


@contextmanager
def without_local_constants() -> Iterator[None]:
    """While the block runs, Hypothesis draws no constants harvested from loaded modules' source.

    The pool getter is swapped for an empty pool and the cache of permitted constants cleared on entry
    and exit, so no pool leaks in or out. Nested use is fine. A no-op on Hypothesis versions without
    the feature.
    """
    getter = getattr(providers, "_get_local_constants", None)  # HARVEST, or the empty pool when nested
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if getter is None or Constants is None or cache is None:
        yield
        return
    providers._get_local_constants = Constants
    cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = getter
        cache.clear()
