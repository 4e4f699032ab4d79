"""Reading a TLC config's CONSTANTS, so the reference is explored under exactly the bounds TLC checks."""

from __future__ import annotations

import re
from pathlib import Path

from kraftspec.spec.tla_values import TlaValue

_SECTION = re.compile(r"^(CONSTANTS?|INIT|NEXT|SPECIFICATION|INVARIANTS?|PROPERTY|PROPERTIES|CONSTRAINTS?|"
                      r"ACTION_CONSTRAINTS?|SYMMETRY|VIEW)\b")
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+?)\s*$")


class ConfigError(ValueError):
    """A TLC config the bridge cannot read, with the file and line."""


def read_constants(config_path: Path) -> dict[str, TlaValue]:
    """The ``Name = value`` assignments of the CONSTANTS section(s), values parsed as TLA+ values."""
    from kraftspec.spec.tla_parse import parse_value

    constants: dict[str, TlaValue] = {}
    in_constants = False
    for number, raw in enumerate(Path(config_path).read_text().splitlines(), start=1):
        line = raw.split("\\*", 1)[0].strip()
        if not line:
            continue
        section = _SECTION.match(line)
        if section:
            in_constants = section.group(1).startswith("CONSTANT")
            line = line[section.end():].strip()
            if not line:
                continue
        if not in_constants:
            continue
        match = _ASSIGNMENT.match(line)
        if match is None:
            raise ConfigError(f"{config_path}:{number}: expected 'Name = value' in CONSTANTS, found {raw.strip()!r}")
        try:
            constants[match.group(1)] = parse_value(match.group(2))
        except ValueError as exc:
            raise ConfigError(f"{config_path}:{number}: cannot read the value of {match.group(1)}: {exc}") from exc
    return constants
