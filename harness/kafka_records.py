"""Metadata records as Kafka's JSON converters write them, mapped onto the trace format's records.

The harness sends ``{"offset", "type", "version", "data"}`` with the schema's camelCase field names
(``MetadataJsonConverters.writeJson``); the trace format names fields as ``kraftspec.reference.records``
does: snake_case, with the feature ranges' ``min_supported`` / ``max_supported``. A field Kafka wrote that the
reference does not model is kept, so the trace decoder refuses it by name instead of dropping it.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

_RENAMED = {"minSupportedVersion": "min_supported", "maxSupportedVersion": "max_supported"}
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """``inControlledShutdown`` -> ``in_controlled_shutdown``; the feature range bounds by their reference names."""
    renamed = _RENAMED.get(name)
    return renamed if renamed is not None else _CAMEL_HUMP.sub(r"_\1", name).lower()


def _fields(value: Any) -> Any:
    if isinstance(value, dict):
        return {snake_case(key): _fields(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fields(item) for item in value]
    return value


def to_trace(record: Mapping[str, Any]) -> dict[str, Any]:
    """One record of a harness answer as a trace record: offset, type, the schema version, then the fields."""
    return {"offset": record["offset"], "type": record["type"], "version": record["version"],
            **_fields(record["data"])}
