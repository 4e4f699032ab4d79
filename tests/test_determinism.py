"""A derandomized Hypothesis run draws the same examples whatever was imported before it
(``kraftspec.models.determinism``), and would not without it: importing a module changes the draws."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers

from kraftspec.models import determinism


def draws() -> list[int]:
    """The integers a derandomized 200-example run draws."""
    seen: list[int] = []

    @settings(derandomize=True, max_examples=200, database=None)
    @given(st.integers())
    def record(x: int) -> None:
        seen.append(x)

    record()
    return seen


def import_module_with_constants(folder: Path, name: str, family: int) -> None:
    """Import a fresh local module whose source holds 300 integer constants of its own ``family``
    (Hypothesis caches constants by source, so two probes must differ)."""
    (folder / f"{name}.py").write_text("".join(f"C{i} = {1_000_003 * (i + 7) + family}\n" for i in range(300)))
    sys.path.insert(0, str(folder))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))


@pytest.mark.skipif(determinism.HARVEST is None, reason="this Hypothesis draws no source constants")
def test_draws_do_not_depend_on_imported_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with determinism.without_local_constants():
        before = draws()
        import_module_with_constants(tmp_path, "kraftspec_determinism_probe_a", 1)
        assert draws() == before
    # The dependence removed: with Hypothesis' own pool, the same import changes what is drawn.
    monkeypatch.setattr(providers, "_get_local_constants", determinism.HARVEST)
    providers.CONSTANTS_CACHE.cache.clear()
    before = draws()
    import_module_with_constants(tmp_path, "kraftspec_determinism_probe_b", 2)
    providers.CONSTANTS_CACHE.cache.clear()
    after = draws()
    providers.CONSTANTS_CACHE.cache.clear()
    assert after != before
