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
from typing import Any, Iterable, Iterator, Mapping, Optional, Union

import pyarrow as pa
import pyarrow.parquet as pq

from kraftspec.traces import fastdecode
from kraftspec.traces.format import Step, Trace, components, step_from_json, trace_from_json, trace_to_json
from kraftspec.traces.limits import (
    LimitError,
    describe_os_error,
    escape_controls,
    has_surrogate_escape,
    is_regular,
    loads,
    too_deep,
)
from kraftspec.traces.values import TraceError

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
        return loads(text)  # within the limits on nesting and number size (kraftspec.traces.limits)
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


_INPUTS: dict[tuple[str, str, Optional[int], str], tuple[str, Mapping[str, Any]]] = {}  # (component, action, now,
# input text) -> the step's action and arguments (shared, never mutated)
_RECORDS: dict[tuple[str, str, Optional[str]], Any] = {}  # (component, record type, fields text) -> the record


def _from_row_memoized(row: dict[str, Any]) -> Trace:
    """:func:`_from_row_checked`'s trace, each part decoded once per distinct text and then shared.

    A step's parts decode independently (``step_from_json`` checks its input, response, records
    and post-state in turn), so each is memoized on its own: the input on (component, action, now,
    text), a record on (component, type, fields text), a response or post-state on its text. A part seen for the first
    time is decoded by ``step_from_json`` / ``decode_record`` themselves. Raises on anything the
    checked decoder might refuse or read differently (the caller then asks it).
    """
    steps = []
    name, initial = row["component"], row["initial"]
    component = components()[name]
    for i, step in enumerate(row["steps"] or ()):
        action, now, text = step["action"], step["now"], step["input"]
        if now is not None and type(now) is not int:  # a key equal to an integer's (True, 1.0) would share its entry
            raise TraceError(f"steps[{i}].now: {now!r}")
        decoded = _INPUTS.get((name, action, now, text))
        if decoded is None:
            arguments = fastdecode.parsed_object(text)
            if type(arguments) is not dict:
                raise TraceError(f"steps[{i}].input: expected a JSON object")
            given = step_from_json(component, {"input": {"action": action, **({"now": now} if now is not None else {}),
                                                         **arguments}}, f"steps[{i}]")
            decoded = fastdecode.memo_put(_INPUTS, (name, action, now, text), (given.action, given.input))
        response = None if step["response"] is None else fastdecode.parsed_object(step["response"])
        if response is not None and type(response) is not dict:
            raise TraceError(f"steps[{i}].output.response: expected an object")
        listed = step["records"]
        records = None if listed is None else tuple([(r["offset"], _record(name, r, f"steps[{i}]")) for r in listed])
        post = None if step["post"] is None else fastdecode.parsed_object(step["post"])
        if post is not None and type(post) is not dict:
            raise TraceError(f"steps[{i}].post: expected an object")
        steps.append(Step(decoded[0], decoded[1], response, records, post))
    header = trace_from_json({"format": row["format"], "component": name,
                              "initial": None if initial is None else fastdecode.parsed_object(initial), "steps": [],
                              **({"id": row["id"]} if row.get("id") is not None else {}),
                              **({"meta": _load(row["meta"], "meta")} if row.get("meta") is not None else {})})
    return Trace(header.component, tuple(steps), header.standard, header.explicit, header.id, header.meta,
                 header.format)


def _record(name: str, given: dict[str, Any], path: str) -> Any:
    """One record of a step (its offset is an integer column; its fields text names neither offset nor type)."""
    kind, text = given["type"], given["fields"]
    if type(given["offset"]) is not int:
        raise TraceError(f"{path}: record offset {given['offset']!r}")
    record = _RECORDS.get((name, kind, text))
    if record is None:
        fields = (None if text is None else fastdecode.parsed_object(text)) or {}
        if type(fields) is not dict or "offset" in fields or "type" in fields:
            raise TraceError(f"{path}: record fields {text!r}")
        _, record = components()[name].decode_record({"offset": given["offset"], "type": kind, **fields}, path)
        fastdecode.memo_put(_RECORDS, (name, kind, text), record)
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


def row_group_rows(parquet: pq.ParquetFile, group: int, start: int, stop: int) -> list[dict[str, Any]]:
    """Rows ``start``..``stop - 1`` of a row group as Python values (pyarrow's conversion); raises exactly as
    converting the whole group would (invalid UTF-8 anywhere in it, for one), so a part of a group fails with it."""
    table = parquet.read_row_group(group)
    try:
        table.validate(full=True)  # invalid UTF-8 anywhere in the group, without converting it
    except pa.ArrowException:
        table.to_pylist()  # the whole group's own error, as reading the group whole raises it
    with fastdecode.no_gc():
        return table.slice(start, stop - start).to_pylist()


def read_parquet(path: Union[str, Path]) -> Iterator[tuple[Optional[int], int, Union[Trace, TraceError]]]:
    """(first row, row count, trace or error) per row; an unreadable file or row group is one error item.

    A row yields ``(row, 1, ...)``; a corrupt row group yields ``(first row, its rows, error)``; a file
    that is not Parquet at all yields ``(None, 1, error)`` (its row count is unknown).
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
            batch = row_group_rows(parquet, group, 0, rows)
        except Exception as exc:  # noqa: BLE001 - as above: any failure of pyarrow on these bytes
            yield first, rows, TraceError(f"row group {group} (rows {first}-{first + rows - 1}) unreadable: "
                                          f"{reason(exc)}")
            first += rows
            continue
        for offset, row in enumerate(batch):
            try:
                yield first + offset, 1, from_row(row)
            except TraceError as exc:
                yield first + offset, 1, exc
        first += rows
