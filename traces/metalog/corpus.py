"""The bundled corpus of real KRaft data directories (``traces/corpus``, see its README.md)."""

from __future__ import annotations

from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent.parent / "corpus"
RUNS_DIR = CORPUS_DIR / "kraftspec__cluster-runs"
"""The project's own clusters' logs (``kraftspec cluster run``), one folder per run and moment, node-N/data below."""


def public_dirs() -> list[Path]:
    """The bundled data directories that real clusters left in public repositories (all but :data:`RUNS_DIR`'s)."""
    return [p for p in data_dirs() if RUNS_DIR not in p.parents]


def data_dirs() -> list[Path]:
    """Every bundled data directory (a directory holding ``__cluster_metadata-0``), sorted."""
    return sorted(p.parent for p in CORPUS_DIR.glob("**/__cluster_metadata-0") if p.is_dir())


def largest_log() -> Path:
    """The largest bundled log segment (the throughput benchmark's input)."""
    return max(CORPUS_DIR.glob("**/__cluster_metadata-0/*.log"), key=lambda p: p.stat().st_size)
