"""Raft inputs decoded by msgspec straight into the reference's messages: the codecs' fast path for the raft component.

Almost every raft input is unique (each states its own time), so no memo helps; instead msgspec reads each input
into types built from :data:`kraftspec.traces.format.raft.ACTIONS` and the message classes' own fields, and the
message is constructed from the fields the input gives (the class's defaults for the rest), as the checked decoder
(:class:`kraftspec.traces.format.raft.RaftComponent`) does. Anything it does not read the same way raises (an error
code given as a number, a log record given as an object, a number of 19 digits or more, a field of the wrong type,
an unknown field or action), and the checked decoder then decides; ``tests/test_fast_decode_parts.py`` holds the two
equal on generated traces and on every perturbation of their inputs.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any, Mapping, Optional, Union

import msgspec

from kraftspec.reference.errors import Errors
from kraftspec.reference.raft_log import LogEntry
from kraftspec.traces.format.raft import ACTIONS, CONTROL_RECORD_TYPES, QUORUM_EPOCH_APIS, RESPONSES, \
    decode_record_value

_UNSET = msgspec.UNSET
_PLAIN_RECORDS = (str, int, type(None))  # log records read as they are (an object goes to decode_record_value)


class Unusual(ValueError):
    """An input the typed decoding does not read as the checked decoder does: the checked decoder decides."""


class _Entry(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A log entry ``{"epoch", "record", "starts_batch"}`` (a record absent reads as null)."""

    epoch: int
    record: Any = None
    starts_batch: bool = True


def _json_type(tp: Any) -> Any:
    """The type msgspec reads for a field of type ``tp`` (an error code by name; log entries as :class:`_Entry`)."""
    if tp is Errors:
        return str
    if tp == tuple[LogEntry, ...]:
        return list[_Entry]
    if tp == tuple[Any, ...]:  # a snapshot's control records, each checked as a log record
        return list[Any]
    origin = typing.get_origin(tp)
    if origin is Union:
        return Union[tuple(_json_type(arg) for arg in typing.get_args(tp))]  # type: ignore[return-value]
    if origin is tuple:
        return tuple[tuple(_json_type(arg) if arg is not Ellipsis else arg for arg in typing.get_args(tp))]
    if tp is tuple:  # an append's records: any values, each checked as a log record
        return list[Any]
    if tp in (int, bool, str, type(None)):
        return tp
    if dataclasses.is_dataclass(tp):
        return _message_struct(tp)
    raise TypeError(f"no typed decoding for {tp!r}")


@functools.lru_cache(maxsize=None)
def _message_struct(cls: type) -> type[msgspec.Struct]:
    """A struct of ``cls``'s fields, each read as JSON gives it and UNSET when the input leaves it out."""
    hints = typing.get_type_hints(cls)
    return msgspec.defstruct(cls.__name__, [(f.name, Union[_json_type(hints[f.name]), msgspec.UnsetType], _UNSET)
                                            for f in dataclasses.fields(cls)],
                             forbid_unknown_fields=True, gc=False)


def _input_struct(action: str, tagged: bool) -> type[msgspec.Struct]:
    """The input of ``action``: tagged by its ``action`` field (a JSON Lines input), or without it and ``now`` (a
    Parquet row gives both in columns of their own)."""
    arguments = [(name, Union[_json_type(tp), msgspec.UnsetType], _UNSET)
                 for name, (tp, _) in ACTIONS[action].args.items() if tagged or name != "now"]
    options: dict[str, Any] = {"tag_field": "action", "tag": action} if tagged else {}
    return msgspec.defstruct(f"{action}_input", arguments, forbid_unknown_fields=True, gc=False, **options)


_TAGGED = msgspec.json.Decoder(Union[tuple(_input_struct(action, True) for action in ACTIONS)])  # type: ignore[arg-type]
_UNTAGGED = {action: msgspec.json.Decoder(_input_struct(action, False)) for action in ACTIONS}


def _error(name: str) -> Errors:
    member = Errors.__members__.get(name)
    if member is None:
        raise Unusual(f"unknown error code {name!r}")
    return member


def _record(value: Any) -> Any:
    return value if type(value) in _PLAIN_RECORDS else decode_record_value(value, "record")


def _control_record(value: Any) -> Any:
    record = _record(value)
    if not isinstance(record, CONTROL_RECORD_TYPES):
        raise Unusual("a snapshot's control record of another type")
    return record


@functools.lru_cache(maxsize=None)
def _error_fields(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` that hold an error code."""
    hints = typing.get_type_hints(cls)
    return tuple(f.name for f in dataclasses.fields(cls) if hints[f.name] is Errors)


def _entries(given: list[_Entry]) -> tuple[LogEntry, ...]:
    """Log entries; one continuing a batch with no entry of its epoch before it is left to the checked decoder."""
    for before, entry in zip([None, *given], given):
        if not entry.starts_batch and (before is None or before.epoch != entry.epoch):
            raise Unusual("a batch continued across epochs")
    return tuple([LogEntry(epoch=e.epoch, record=_record(e.record), starts_batch=e.starts_batch) for e in given])


def _message(cls: type, given: msgspec.Struct) -> Any:
    """The reference's message of ``cls`` from the fields ``given`` states (its defaults for the others)."""
    fields = {name: value for name, value in msgspec.structs.asdict(given).items() if value is not _UNSET}
    for name in _error_fields(cls):
        if name in fields:
            fields[name] = _error(fields[name])
    if "records" in fields:  # a fetch response's log entries
        fields["records"] = _entries(fields["records"])
    if "control_records" in fields:  # a FetchSnapshot chunk's control records
        fields["control_records"] = tuple([_control_record(r) for r in fields["control_records"]])
    if cls in RESPONSES and fields.get("correlation_id") is None:
        fields["correlation_id"] = None  # absent or null: answers the request outstanding to its source
    elif "correlation_id" in fields and fields["correlation_id"] is None:
        raise Unusual("a null correlation id on a request")
    if cls.__name__ == "QuorumEpochResponse" and fields.get("api") not in QUORUM_EPOCH_APIS:
        raise Unusual("an unknown api")
    return cls(**fields)


def _arguments(action: str, given: msgspec.Struct, now: Optional[int] = None) -> dict[str, Any]:
    """The arguments ``given`` states (and ``now`` when not None), every one ``action`` needs among them."""
    spec = ACTIONS[action].args
    arguments = {name: value for name, value in msgspec.structs.asdict(given).items() if value is not _UNSET}
    if now is not None:
        arguments["now"] = now
    if "message" in arguments:
        arguments["message"] = _message(spec["message"][0], arguments["message"])
    if "records" in arguments:
        arguments["records"] = tuple([_record(r) for r in arguments["records"]])
    for name, (_, required) in spec.items():
        if required and name not in arguments:
            raise Unusual(f"action {action!r} needs {name!r}")
    return arguments


def decode_input(text: Union[bytes, str]) -> tuple[str, Mapping[str, Any]]:
    """A JSON Lines input ``{"action", ...}``: its action and arguments (raises on anything unusual)."""
    given = _TAGGED.decode(text)
    action = given.__struct_config__.tag
    return action, _arguments(action, given)


def decode_arguments(action: str, now: Optional[int], text: Union[bytes, str]) -> tuple[str, Mapping[str, Any]]:
    """A Parquet input: the arguments' text of ``action`` and the ``now`` column (raises on anything unusual)."""
    decoder = _UNTAGGED.get(action)
    if decoder is None:
        raise Unusual(f"unknown action {action!r}")
    return action, _arguments(action, decoder.decode(text), now)
