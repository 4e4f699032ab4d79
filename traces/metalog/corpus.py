"""The bundled corpus of real KRaft data directories (``traces/corpus``, see its README.md)."""

from __future__ import annotations

from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent.parent / "corpus"


def data_dirs() -> list[Path]:
    """Every bundled data directory (a directory holding ``__cluster_metadata-0``), sorted."""
    return sorted(p.parent for p in CORPUS_DIR.glob("**/__cluster_metadata-0") if p.is_dir())


def largest_log() -> Path:
    """The largest bundled log segment (the throughput benchmark's input)."""
    return max(CORPUS_DIR.glob("**/__cluster_metadata-0/*.log"), key=lambda p: p.stat().st_size)
