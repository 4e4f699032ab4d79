"""A Parquet trace set with every kind of unreadable input, for the validate tests."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kraftspec.traces.format import parquet
from kraftspec.traces.recording.broker_simulate import generate_sim


def make_bad_set(folder: Path) -> dict[str, Path]:
    """Good traces, a corrupt file, a file without ``steps``, a wrong major and a null column, a corrupt row group."""
    folder.mkdir()
    files = {name: folder / f"{name}.parquet" for name in ("good", "corrupt", "no_steps", "mixed", "bad_group")}
    parquet.write_parquet(files["good"], generate_sim(5, 6, 12), batch_size=4)
    files["corrupt"].write_bytes(b"PAR1 this is not a Parquet file at all")
    table = pa.Table.from_pylist([parquet.to_row(t) for t in generate_sim(6, 3, 5)], schema=parquet.SCHEMA)
    pq.write_table(table.drop_columns(["steps"]), files["no_steps"])
    mixed = [parquet.to_row(t) for t in generate_sim(7, 3, 5)]
    mixed[1]["format"] = "2.0"
    mixed[2]["initial"] = None
    pq.write_table(pa.Table.from_pylist(mixed, schema=parquet.SCHEMA), files["mixed"])
    pq.write_table(pa.Table.from_pylist([parquet.to_row(t) for t in generate_sim(8, 4, 5)], schema=parquet.SCHEMA),
                   files["bad_group"], row_group_size=2, compression="none")
    data = bytearray(files["bad_group"].read_bytes())
    data[4:400] = b"\xff" * 396  # the first row group's pages; the footer (and the second group) stay readable
    files["bad_group"].write_bytes(bytes(data))
    return files
