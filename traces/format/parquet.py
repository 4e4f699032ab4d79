"""Parquet codec: one row per trace, steps as a list column (pyarrow).

Columns: ``format``, ``component``, ``id``, ``meta`` and ``initial`` (JSON text), and ``steps``, a
list of structs ``{action, now, input, response, records, post}`` where ``records`` is a list of
``{offset, type, fields}``. ``action``, ``now``, ``offset`` and ``type`` are typed columns so a Spark
``mapInArrow`` job can filter and group a whole Arrow batch without parsing; the variable parts
(arguments, response fields, record fields, post-state) are JSON text, parsed once per row. Rows
are written in row groups of ``batch_size`` as they come (bounded memory); reading yields each
row's trace or the error that makes it unreadable, with its 0-based row number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

import pyarrow as pa
import pyarrow.parquet as pq

from kraftspec.traces.format import fastdecode
from kraftspec.traces.format.envelope import Step, Trace, components, step_from_json, trace_from_json, trace_to_json
from kraftspec.traces.format.limits import (
    LimitError,
    describe_os_error,
    escape_controls,
    has_surrogate_escape,
    is_regular,
    loads,
    too_deep,
)
from kraftspec.traces.format.values import TraceError

RECORD = pa.struct([("offset", pa.int64()), ("type", pa.string()), ("fields", pa.string())])
STEP = pa.struct([("action", pa.string()), ("now", pa.int64()), ("input", pa.string()), ("response", pa.string()),
                  ("records", pa.list_(RECORD)), ("post", pa.string())])
SCHEMA = pa.schema([("format", pa.string()), ("component", pa.string()), ("id", pa.string()), ("meta", pa.string()),
                    ("initial", pa.string()), ("steps", pa.list_(STEP))])


_ENCODER = json.JSONEncoder(separators=(",", ":"))  # json.dumps(value, separators=(",", ":")), built once


def _dump(value: Any) -> Optional[str]:
    return None if value is None else _ENCODER.encode(value)


def to_row(trace: Trace) -> dict[str, Any]:
    """The Parquet row of one trace; a :class:`TraceError` for a trace with a ``view`` (no column holds it)."""
    if trace.view is not None:
        raise TraceError("a trace with a view cannot be written to Parquet (the trace-v1 columns carry no view); "
                         "write it as JSON Lines")
    obj = trace_to_json(trace)
    steps = []
    for step in obj["steps"]:
        given = dict(step["input"])
        action, now = given.pop("action"), given.pop("now", None)
        output = step.get("output", {})
        records = output.get("records")
        steps.append({
            "action": action, "now": now, "input": _dump(given), "response": _dump(output.get("response")),
            "records": None if records is None else [
                {"offset": r["offset"], "type": r["type"],
                 "fields": _dump({k: v for k, v in r.items() if k not in ("offset", "type")})} for r in records],
            "post": _dump(step.get("post"))})
    return {"format": obj["format"], "component": obj["component"], "id": obj.get("id"),
            "meta": _dump(obj.get("meta")), "initial": _dump(obj["initial"]), "steps": steps}


def _load(text: Optional[str], what: str) -> Any:
    if text is None:
        return None
    try:
        return loads(text)  # within the limits on nesting and number size (kraftspec.traces.format.limits)
    except (json.JSONDecodeError, TypeError) as exc:
        raise TraceError(f"{what}: invalid JSON text: {exc}") from None
    except LimitError as exc:
        raise TraceError(f"{what}: {exc}") from None


_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # one JSON value at an index: (value, end)


def _load_each(texts: list[Optional[str]], names: list[str]) -> Iterator[Any]:
    """Each JSON text of a row parsed in turn (null stays None); a text that is not exactly one JSON value
    gets ``json.loads``'s treatment (surrounding whitespace is fine, anything else is an error naming it)."""
    for text, name in zip(texts, names):
        if text is None:
            yield None
            continue
        try:
            value, end = _scan(text, 0)
        except Exception:  # noqa: BLE001 - StopIteration, a syntax error, RecursionError, a 4,301-digit number...
            end = -1  # ... json.loads's treatment below names it
        yield value if end == len(text) and not too_deep(value) and not has_surrogate_escape(text) else _load(text, name)


def from_row(row: dict[str, Any]) -> Trace:
    """The trace of one Parquet row (the JSON object the row encodes, decoded and checked).

    Rows of a set repeat the same texts (the same requests, responses, records, post-states), so a
    row is first decoded from memos of texts already decoded (:func:`_from_row_memoized`); a row that
    does not decode there (anything unusual, or an error) is decoded by :func:`_from_row_checked`,
    which decides and names the first error. Both give the same trace.
    """
    try:
        with fastdecode.no_gc():
            return _from_row_memoized(row)
    except Exception:  # noqa: BLE001 - any doubt: the checked decoder decides (and names the error), below
        pass
    return _from_row_checked(row)


_INPUTS = fastdecode.Memo()  # (component, action, now, input text) -> the step's action and arguments (shared)
_RECORDS = fastdecode.Memo()  # (component, record type, fields text) -> the record


StepColumns = tuple[Any, Any, Any, Any, Optional[list[tuple[Any, Any, Any]]], Any]
"""A step's columns as Python values: action, now, input, response, records (offset, type, fields) or None, post."""


def _from_row_memoized(row: dict[str, Any]) -> Trace:
    """:func:`_from_row_checked`'s trace, each part decoded once per distinct text and then shared (:func:`_memoized`)."""
    return _memoized(row["format"], row["component"], row.get("id"), row.get("meta"), row["initial"], (
        (step["action"], step["now"], step["input"], step["response"],
         None if step["records"] is None else [(r["offset"], r["type"], r["fields"]) for r in step["records"]],
         step["post"]) for step in row["steps"] or ()))


def _memoized(format: Any, name: Any, given_id: Any, meta: Any, initial: Any, given: Iterable[StepColumns]) -> Trace:
    """The trace of one row's columns, each part decoded once per distinct text and then shared.

    A step's parts decode independently (``step_from_json`` checks its input, response, records
    and post-state in turn), so each is memoized on its own: the input on (component, action, now,
    text), a record on (component, type, fields text), a response or post-state on its text. A part seen for the first
    time is decoded by ``step_from_json`` / ``decode_record`` themselves. Raises on anything the
    checked decoder might refuse or read differently (the caller then asks it).
    """
    steps = []
    component = components()[name]
    for i, (action, now, text, response_text, listed, post_text) in enumerate(given):
        if now is not None and type(now) is not int:  # a key equal to an integer's (True, 1.0) would share its entry
            raise TraceError(f"steps[{i}].now: {now!r}")
        decoded = _INPUTS.get((name, action, now, text))
        typed = fastdecode.TYPED_INPUTS.get(name)
        if decoded is None and typed is not None:
            if fastdecode.long_number(text):
                raise TraceError(f"steps[{i}].input: a number of 19 digits or more")
            decoded = _INPUTS.put((name, action, now, text), typed.decode_arguments(action, now, text))
        if decoded is None:
            arguments = fastdecode.parsed_object(text)
            if type(arguments) is not dict:
                raise TraceError(f"steps[{i}].input: expected a JSON object")
            step = step_from_json(component, {"input": {"action": action, **({"now": now} if now is not None else {}),
                                                        **arguments}}, f"steps[{i}]")
            decoded = _INPUTS.put((name, action, now, text), (step.action, step.input))
        response = None if response_text is None else fastdecode.parsed_object(response_text)
        records = None if listed is None else tuple([(r[0], _record(name, r, f"steps[{i}]")) for r in listed])
        post = None if post_text is None else fastdecode.post_state(post_text)
        steps.append(Step(decoded[0], decoded[1], response, records, post))
    header, _ = fastdecode.header(format, name, initial, None)
    if given_id is not None and type(given_id) is not str:
        raise TraceError(f"id: {given_id!r}")
    return Trace(header.component, tuple(steps), header.standard, header.explicit, given_id, fastdecode.meta(meta),
                 header.format)


def _record(name: str, given: tuple[Any, Any, Any], path: str) -> Any:
    """One record of a step, (offset, type, fields text): the offset is an integer column; the fields text names
    neither offset nor type."""
    offset, kind, text = given
    if type(offset) is not int:
        raise TraceError(f"{path}: record offset {offset!r}")
    record = _RECORDS.get((name, kind, text))
    if record is None:
        fields = (None if text is None else fastdecode.parsed_object(text)) or {}
        if type(fields) is not dict or "offset" in fields or "type" in fields:
            raise TraceError(f"{path}: record fields {text!r}")
        _, record = components()[name].decode_record({"offset": offset, "type": kind, **fields}, path)
        _RECORDS.put((name, kind, text), record)
    return record


def _from_row_checked(row: dict[str, Any]) -> Trace:
    """The trace of one Parquet row, every check in the order of the format's definition (the errors' order)."""
    try:
        given = row["steps"] or []
        texts: list[Optional[str]] = []
        names: list[str] = []
        for i, step in enumerate(given):  # in the order they are checked below
            texts += (step["input"], step["response"])
            names += (f"steps[{i}].input", f"steps[{i}].response")
            for j, r in enumerate(step["records"] or ()):
                texts.append(r["fields"])
                names.append(f"steps[{i}].records[{j}]")
            texts.append(step["post"])
            names.append(f"steps[{i}].post")
        parsed = _load_each(texts, names)
        steps = []
        for i, step in enumerate(given):
            arguments = next(parsed)
            if not isinstance(arguments, dict):
                raise TraceError(f"steps[{i}].input: expected a JSON object")
            obj: dict[str, Any] = {"input": {"action": step["action"],
                                             **({"now": step["now"]} if step["now"] is not None else {}), **arguments}}
            output: dict[str, Any] = {}
            response = next(parsed)
            if step["response"] is not None:
                output["response"] = response
            if step["records"] is not None:
                output["records"] = [{"offset": r["offset"], "type": r["type"], **(next(parsed) or {})}
                                     for r in step["records"]]
            if output:
                obj["output"] = output
            post = next(parsed)
            if step["post"] is not None:
                obj["post"] = post
            steps.append(obj)
        trace = {"format": row["format"], "component": row["component"], "initial": _load(row["initial"], "initial"),
                 "steps": steps}
    except (KeyError, TypeError, AttributeError) as exc:
        raise TraceError(f"row does not have the trace-v1 Parquet schema: {exc!r}") from exc
    if row.get("id") is not None:
        trace["id"] = row["id"]
    if row.get("meta") is not None:
        trace["meta"] = _load(row["meta"], "meta")
    return trace_from_json(trace)


def write_parquet(path: Union[str, Path], traces: Iterable[Trace], batch_size: int = 1000) -> int:
    """Write ``traces`` in row groups of ``batch_size`` as they come; returns how many were written."""
    count = 0
    with pq.ParquetWriter(path, SCHEMA) as writer:
        batch: list[dict[str, Any]] = []
        for trace in traces:
            batch.append(to_row(trace))
            count += 1
            if len(batch) == batch_size:
                writer.write_table(pa.Table.from_pylist(batch, schema=SCHEMA))
                batch = []
        if batch or count == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=SCHEMA))
    return count


def reason(exc: BaseException) -> str:
    """Why pyarrow could not read something, one line (its type when the message is not enough)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid UTF-8 in a string ({exc.reason} at byte {exc.start})"
    if isinstance(exc, OSError) and not isinstance(exc, pa.ArrowException):
        return describe_os_error(exc)
    text = " ".join(str(exc).split())[:500]
    return escape_controls(text if isinstance(exc, (pa.ArrowException, OSError)) else f"{type(exc).__name__}: {text}")


def read_group(parquet: pq.ParquetFile, group: int) -> pa.Table:
    """A row group, checked whole (invalid UTF-8 anywhere in it raises as converting the whole group would)."""
    table = parquet.read_row_group(group)
    try:
        table.validate(full=True)  # invalid UTF-8 anywhere in the group, without converting it
    except pa.ArrowException:
        table.to_pylist()  # the whole group's own error, as reading the group whole raises it
    return table


def row_group_rows(parquet: pq.ParquetFile, group: int, start: int, stop: int) -> list[dict[str, Any]]:
    """Rows ``start``..``stop - 1`` of a row group as Python values (pyarrow's conversion); raises exactly as
    converting the whole group would (invalid UTF-8 anywhere in it, for one), so a part of a group fails with it."""
    table = read_group(parquet, group)
    with fastdecode.no_gc():
        return table.slice(start, stop - start).to_pylist()


class Columns:
    """A row group of the trace-v1 schema converted column by column (pyarrow's conversion of each column, no
    dictionary per row or step): each row's columns for :func:`_memoized`."""

    def __init__(self, table: pa.Table) -> None:
        head = {name: table.column(name).to_pylist() for name in ("format", "component", "id", "meta", "initial")}
        self.format, self.component, self.id, self.meta, self.initial = head.values()
        steps = table.column("steps").combine_chunks()
        values = steps.values
        records = values.field("records")
        fields = records.values
        if steps.null_count or values.null_count or fields.null_count:
            raise ValueError("a null list of steps, step or record: the rows' own conversion decides")
        self.steps_at, self.records_at = steps.offsets.to_pylist(), records.offsets.to_pylist()
        self.step_columns = [values.field(name).to_pylist() for name in ("action", "now", "input", "response", "post")]
        self.stated = records.is_valid().to_pylist()
        self.records = list(zip(*(fields.field(name).to_pylist() for name in ("offset", "type", "fields"))))

    @staticmethod
    def of(table: pa.Table) -> Optional["Columns"]:
        """The group's columns; None when it is not exactly of the trace-v1 schema or has a null list of steps,
        a null step or record (its rows are then converted whole, as before)."""
        if not table.schema.equals(SCHEMA):
            return None
        try:
            return Columns(table)
        except Exception:  # noqa: BLE001 - any doubt: the rows' own conversion decides
            return None

    def trace(self, row: int) -> Trace:
        """Row ``row``'s trace through the memos; raises on anything the checked decoder must decide."""
        action, now, given, response, post = self.step_columns
        records_at, stated, records = self.records_at, self.stated, self.records
        steps = ((action[i], now[i], given[i], response[i],
                  records[records_at[i]:records_at[i + 1]] if stated[i] else None, post[i])
                 for i in range(self.steps_at[row], self.steps_at[row + 1]))
        return _memoized(self.format[row], self.component[row], self.id[row], self.meta[row], self.initial[row], steps)


def read_parquet(path: Union[str, Path]) -> Iterator[tuple[Optional[int], int, Union[Trace, TraceError]]]:
    """(first row, row count, trace or error) per row; an unreadable file or row group is one error item.

    A row yields ``(row, 1, ...)``; a corrupt row group yields ``(first row, its rows, error)``; a file
    that is not Parquet at all yields ``(None, 1, error)`` (its row count is unknown). A group is converted
    column by column and each row decoded through the memos (:class:`Columns`); a row that does not decode
    there is converted on its own and decoded by :func:`from_row`.
    """
    if not is_regular(path):
        yield None, 1, TraceError("not a regular file")
        return
    try:
        parquet = pq.ParquetFile(path)
        groups = [parquet.metadata.row_group(group).num_rows for group in range(parquet.num_row_groups)]
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowException, OSError, UnicodeDecodeError (names)...
        yield None, 1, TraceError(f"not a readable Parquet file: {reason(exc)}")
        return
    first = 0
    for group, rows in enumerate(groups):
        try:
            table = read_group(parquet, group)
            with fastdecode.no_gc():
                columns = Columns.of(table)
                batch = table.to_pylist() if columns is None else None
        except Exception as exc:  # noqa: BLE001 - as above: any failure of pyarrow on these bytes
            yield first, rows, TraceError(f"row group {group} (rows {first}-{first + rows - 1}) unreadable: "
                                          f"{reason(exc)}")
            first += rows
            continue
        for offset in range(rows):
            try:
                yield first + offset, 1, _from_columns(columns, table, offset) if batch is None else from_row(batch[offset])
            except TraceError as exc:
                yield first + offset, 1, exc
        first += rows


def _from_columns(columns: Columns, table: pa.Table, row: int) -> Trace:
    """Row ``row``'s trace from the group's columns; a row that does not decode there is converted on its own and
    decoded by :func:`from_row` (which decides and names any error)."""
    try:
        with fastdecode.no_gc():
            return columns.trace(row)
    except Exception:  # noqa: BLE001 - any doubt: the row's own conversion and the checked decoder decide
        pass
    return from_row(table.slice(row, 1).to_pylist()[0])
