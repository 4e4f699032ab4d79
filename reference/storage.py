"""KIP-631 storage (rules §4.5): ``meta.properties`` parsing and validation, ``kafka-storage format`` and ``info``.

Pure functions over a directory *description*: a mapping of file name → text (a nested mapping for a
sub-directory), a ``str`` for a path that is a regular file, ``None`` for a path that does not exist.
Sources: KIP-631 "Storage tool"; ``metadata/.../properties/MetaProperties.java``,
``MetaPropertiesVersion.java``, ``MetaPropertiesEnsemble.java``, ``PropertiesUtils.java``,
``metadata/.../storage/Formatter.java``, ``tools/.../StorageTool.java``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Union

from kraftspec.reference.metadata_version import LATEST_PRODUCTION, name_of
from kraftspec.reference.storage_rules import is_reserved_directory_id, parse_java_int, uuid_from_string

META_PROPERTIES = "meta.properties"
CLUSTER_METADATA_DIR = "__cluster_metadata-0"
BOOTSTRAP_CHECKPOINT = "00000000000000000000-0000000000.checkpoint"
SUPPORTED_VERSIONS = (0, 1)

DirectoryEntry = Union[str, "Mapping[str, DirectoryEntry]", None]
Directory = Mapping[str, DirectoryEntry]


class StorageError(Exception):
    """A storage problem naming the ``file`` and, when one is at fault, its 1-based ``line`` and ``key``."""

    def __init__(self, message: str, file: str, line: Optional[int] = None, key: Optional[str] = None) -> None:
        """Keep the parts; the text reads ``file[:line]: message``."""
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {message}")
        self.message = message
        self.file = file
        self.line = line
        self.key = key


class FormatError(Exception):
    """``FormatterException`` / ``TerseException`` of ``kafka-storage format``: the message printed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PropertyEntry:
    """One ``key=value`` of a properties file and the line it starts on."""

    key: str
    value: str
    line: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MetaProperties:
    """A parsed meta.properties: version 0 (legacy, ``broker.id``) or 1 (KRaft, ``node.id``)."""

    version: int
    cluster_id: Optional[str]
    node_id: Optional[int]
    directory_id: Optional[str]

    def to_properties(self) -> dict[str, str]:
        """``MetaProperties.toProperties``: the keys written back (broker.id in v0, node.id in v1)."""
        props = {"version": str(self.version)}
        if self.cluster_id is not None:
            props["cluster.id"] = self.cluster_id
        if self.node_id is not None:
            props["broker.id" if self.version == 0 else "node.id"] = str(self.node_id)
        if self.directory_id is not None:
            props["directory.id"] = self.directory_id
        return props


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    """``Properties.loadConvert``: ``\\t \\n \\r \\f``, ``\\uXXXX`` (malformed → ValueError), ``\\x`` → ``x``."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u":
                digits = text[i + 2:i + 6]
                if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise ValueError("Malformed \\uxxxx encoding.")
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join backslash-continued lines (odd number of trailing backslashes), dropping blanks and comments."""
    result: list[tuple[int, str]] = []
    physical = text.splitlines()
    i = 0
    while i < len(physical):
        start, line = i + 1, physical[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(physical):
            line = line[:-1] + physical[i].lstrip(" \t\f")
            i += 1
        result.append((start, line))
    return result


def parse_properties(text: str, file: str) -> tuple[PropertyEntry, ...]:
    """``java.util.Properties.load`` (the subset meta.properties uses): ``#``/``!`` comments, key ended by
    an unescaped ``=``, ``:`` or whitespace, escapes and continuations. A key given twice is a
    StorageError here; Java keeps the last value silently (issue text asks for the error)."""
    entries: list[PropertyEntry] = []
    seen: dict[str, int] = {}
    for line_no, line in _logical_lines(text):
        i = 0
        while i < len(line) and line[i] not in "=: \t\f":
            i += 2 if line[i] == "\\" else 1
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        try:
            key, value = _unescape(line[:i]), _unescape(rest)
        except ValueError as exc:
            raise StorageError(str(exc), file, line_no, line[:i]) from None
        if key in seen:
            raise StorageError(f"duplicate key {key} (first on line {seen[key]})", file, line_no, key)
        seen[key] = line_no
        entries.append(PropertyEntry(key=key, value=value, line=line_no))
    return tuple(entries)


def _int_prop(entries: dict[str, PropertyEntry], key: str, file: str) -> int:
    """``PropertiesUtils.loadRequiredIntProp``: "Failed to find K" / "Unable to read K as a base-10 number."."""
    entry = entries.get(key)
    if entry is None:
        raise StorageError(f"Failed to find {key}", file, None, key)
    try:
        return parse_java_int(entry.value)
    except ValueError:
        raise StorageError(f"Unable to read {key} as a base-10 number.", file, entry.line, key) from None


def parse_meta_properties(text: str, file: str) -> MetaProperties:
    """``new MetaProperties.Builder(props).build()`` with the issue's stricter checks (KIP-631).

    ``version`` absent → 0; not an integer → "Invalid meta.properties version string"; not 0/1 →
    "Unknown meta.properties version number" (version 2 exists only on trunk). v1 requires ``node.id``
    (int) and ``cluster.id``; v0 reads an optional ``broker.id``. ``directory.id`` must be a Kafka UUID.
    Stricter than Kafka, which stores any string: ``cluster.id`` must be a Kafka UUID (22 base64url chars).
    """
    entries = {e.key: e for e in parse_properties(text, file)}
    version_entry = entries.get("version")
    version_text = "0" if version_entry is None else version_entry.value
    line = None if version_entry is None else version_entry.line
    try:
        version = parse_java_int(version_text.strip())
    except ValueError:
        raise StorageError(f"Invalid meta.properties version string '{version_text}'", file, line, "version") from None
    if version not in SUPPORTED_VERSIONS:
        raise StorageError(f"Unknown meta.properties version number {version}", file, line, "version")
    if version == 0:
        node_id = _int_prop(entries, "broker.id", file) if "broker.id" in entries else None
    else:
        node_id = _int_prop(entries, "node.id", file)
    cluster_entry = entries.get("cluster.id")
    if cluster_entry is None and version == 1:
        raise StorageError("cluster.id was not found.", file, None, "cluster.id")
    if cluster_entry is not None:
        try:
            uuid_from_string(cluster_entry.value)
        except ValueError as exc:
            raise StorageError(f"cluster.id is not a base64 UUID: {exc}", file, cluster_entry.line, "cluster.id") from None
    directory_entry = entries.get("directory.id")
    if directory_entry is not None:
        try:
            uuid_from_string(directory_entry.value)
        except ValueError as exc:
            raise StorageError(f"Unable to read directory.id as a Uuid: {exc}", file, directory_entry.line, "directory.id") from None
    return MetaProperties(
        version=version,
        cluster_id=None if cluster_entry is None else cluster_entry.value,
        node_id=node_id,
        directory_id=None if directory_entry is None else directory_entry.value,
    )


def render_meta_properties(meta: MetaProperties, date_comment: str) -> str:
    """``PropertiesUtils.writePropertiesFile``: ``Properties.store(pw, "")`` → ``#``, ``#<date>``, then the
    keys. JDK 18+ sorts keys (the corpus's 4-key files); JDK 9–17 wrote hash order (its 3-key files)."""
    body = "".join(f"{k}={v}\n" for k, v in sorted(meta.to_properties().items()))
    return f"#\n#{date_comment}\n{body}"


def meta_path(directory: str) -> str:
    """The meta.properties path of a log directory, as Kafka names it in messages."""
    return f"{directory.rstrip('/')}/{META_PROPERTIES}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ensemble:
    """``MetaPropertiesEnsemble``: per directory, empty (no meta.properties), error, or parsed."""

    empty: tuple[str, ...]
    errors: tuple[tuple[str, StorageError], ...]
    props: tuple[tuple[str, MetaProperties], ...]


def load_ensemble(log_dirs: Mapping[str, DirectoryEntry]) -> Ensemble:
    """``MetaPropertiesEnsemble.Loader.load``: a missing directory or file is empty; unreadable → error."""
    empty, errors, props = [], [], []
    for path in sorted(log_dirs):
        contents = log_dirs[path]
        files = contents if isinstance(contents, Mapping) else {}
        text = files.get(META_PROPERTIES)
        if text is None:
            empty.append(path)
        elif not isinstance(text, str):
            errors.append((path, StorageError("meta.properties is a directory", meta_path(path))))
        else:
            try:
                props.append((path, parse_meta_properties(text, meta_path(path))))
            except StorageError as exc:
                errors.append((path, exc))
    return Ensemble(empty=tuple(empty), errors=tuple(errors), props=tuple(props))


def verify_ensemble(ensemble: Ensemble, expected_cluster_id: Optional[str], expected_node_id: Optional[int]) -> None:
    """``MetaPropertiesEnsemble.verify`` (no flags): one cluster id and node id across directories;
    directory ids not reserved and not shared. Raises FormatError with Kafka's message."""
    seen: dict[str, str] = {}
    for path, meta in ensemble.props:
        file = meta_path(path)
        if meta.cluster_id is not None:
            if expected_cluster_id is None:
                expected_cluster_id = meta.cluster_id
            elif meta.cluster_id != expected_cluster_id:
                raise FormatError(f"Invalid cluster.id in: {file}. Expected {expected_cluster_id}, but read {meta.cluster_id}")
        if meta.node_id is not None:
            if expected_node_id is None:
                expected_node_id = meta.node_id
            elif meta.node_id != expected_node_id:
                raise FormatError(
                    f"Stored node id {meta.node_id} doesn't match previous node id {expected_node_id} in {file}. "
                    "If you moved your data, make sure your configured node id matches. If you intend to create "
                    "a new node, you should remove all data in your data directories."
                )
        if meta.directory_id is not None:
            if is_reserved_directory_id(*uuid_from_string(meta.directory_id)):
                raise FormatError(f"Invalid resrved directory ID {meta.directory_id} found in {path}")
            if meta.directory_id in seen:
                raise FormatError(
                    f"Duplicate directory ID Optional[{meta.directory_id}] found. It was the ID of "
                    f"{seen[meta.directory_id]}, but also of {path}"
                )
            seen[meta.directory_id] = path


@dataclass(frozen=True, slots=True, kw_only=True)
class BootstrapSnapshot:
    """The bootstrap checkpoint's content: the format command's FeatureLevelRecord(s), MV first."""

    feature_levels: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FormatResult:
    """What ``format`` writes (path → files, where the checkpoint is a ``BootstrapSnapshot``) and prints."""

    written: tuple[tuple[str, Mapping[str, object]], ...]
    output: str


def format_directories(
    log_dirs: Mapping[str, DirectoryEntry],
    cluster_id: Optional[str],
    node_id: int,
    metadata_log_dir: str,
    release_version: int = LATEST_PRODUCTION,
    ignore_formatted: bool = False,
    unstable_enabled: bool = False,
    directory_ids: tuple[str, ...] = (),
    date_comment: str = "",
) -> FormatResult:
    """``Formatter.run`` (4.x) for a static quorum: checks in Kafka's order, then a v1 meta.properties with
    a fresh directory id (taken from ``directory_ids`` in sorted directory order) in every *empty*
    directory, and the bootstrap checkpoint ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``
    in the metadata log directory. A directory is formatted iff it holds meta.properties.

    Before 4.1 every directory also got ``bootstrap.checkpoint`` (the corpus's 3.x directories). The
    cluster id must be a Kafka UUID, as 3.x ``StorageTool`` checked ("does not appear to be a valid UUID");
    the 4.x Formatter as read takes any string. The output omits Kafka's "Bootstrap metadata: ..." line
    (a Java ``toString`` of the records).
    """
    if node_id < 0:
        raise FormatError("You must specify a valid non-negative node ID.")
    if cluster_id is None:
        raise FormatError("You must specify the cluster id.")
    try:
        uuid_from_string(cluster_id)
    except ValueError as exc:
        raise FormatError(f"Cluster ID string {cluster_id} does not appear to be a valid UUID: {exc}") from None
    if not log_dirs:
        raise FormatError("You must specify at least one directory to format")
    if metadata_log_dir not in log_dirs:
        raise FormatError(
            f"The specified metadata log directory, {metadata_log_dir} was not one of the given directories: "
            f"[{', '.join(sorted(log_dirs))}]"
        )
    if release_version > LATEST_PRODUCTION and not unstable_enabled:
        raise FormatError(f"metadata.version {name_of(release_version)} is not yet stable.")
    ensemble = load_ensemble(log_dirs)
    verify_ensemble(ensemble, cluster_id, node_id)
    if ensemble.props and not ignore_formatted:
        raise FormatError(
            f"Log directory {ensemble.props[0][0]} is already formatted. "
            "Use --ignore-formatted to ignore this directory and format the others."
        )
    lines = [f"I/O error trying to read log directory {path}. Ignoring..." for path, _ in ensemble.errors]
    if ensemble.errors and not ensemble.empty and not ensemble.props:
        raise FormatError("No available log directories to format.")
    if not ensemble.empty:
        lines = lines + ["All of the log directories are already formatted."]
        return FormatResult(written=(), output="".join(line + "\n" for line in lines))
    if len(directory_ids) < len(ensemble.empty):
        raise ValueError(f"need {len(ensemble.empty)} directory ids, got {len(directory_ids)}")
    written = []
    for path, directory_id in zip(ensemble.empty, directory_ids):
        meta = MetaProperties(version=1, cluster_id=cluster_id, node_id=node_id, directory_id=directory_id)
        files: dict[str, object] = {META_PROPERTIES: render_meta_properties(meta, date_comment)}
        kind = "data directory"
        if path == metadata_log_dir:
            kind = "metadata directory"
            snapshot = BootstrapSnapshot(feature_levels=(("metadata.version", release_version),))
            files[CLUSTER_METADATA_DIR] = {BOOTSTRAP_CHECKPOINT: snapshot}
        lines.append(f"Formatting {kind} {path} with metadata.version {name_of(release_version)}.")
        written.append((path, files))
    return FormatResult(written=tuple(written), output="".join(line + "\n" for line in lines))


@dataclass(frozen=True, slots=True, kw_only=True)
class InfoResult:
    """``kafka-storage info``: exit code and printed text."""

    exit_code: int
    output: str


def info(log_dirs: Mapping[str, DirectoryEntry], self_managed: bool) -> InfoResult:
    """``StorageTool.infoCommand``: list found directories (sorted, as the config's TreeSet), the first
    directory's metadata, and problems (missing/not-a-directory/unformatted, load errors, mismatched
    cluster or node ids, KRaft vs legacy). Load errors include this module's stricter checks."""
    if not log_dirs:
        return InfoResult(exit_code=0, output="No directories specified.\n")
    problems: list[str] = []
    found: list[str] = []
    first: Optional[MetaProperties] = None
    for path in sorted(log_dirs):
        contents = log_dirs[path]
        if contents is None:
            problems.append(f"{path} does not exist")
            continue
        if not isinstance(contents, Mapping):
            problems.append(f"{path} is not a directory")
            continue
        found.append(path)
        text = contents.get(META_PROPERTIES)
        if not isinstance(text, str):
            problems.append(f"{path} is not formatted.")
            continue
        try:
            current = parse_meta_properties(text, meta_path(path))
        except StorageError as exc:
            problems.append(f"Error loading {meta_path(path)}: {exc.message}")
            continue
        if first is None:
            first = current
        elif first.cluster_id != current.cluster_id:
            problems.append("Mismatched cluster IDs between storage directories.")
        elif first.node_id != current.node_id:
            problems.append("Mismatched node IDs between storage directories.")
    if first is not None:
        if self_managed and first.version == 0:
            problems.append("The kafka configuration file appears to be for a cluster in KRaft mode, "
                            "but the directories are formatted for legacy mode.")
        elif not self_managed and first.version == 1:
            problems.append("The kafka configuration file appears to be for a legacy cluster, "
                            "but the directories are formatted for a cluster in KRaft mode.")
    out: list[str] = []
    if found:
        out.append("Found log directory:" if len(found) == 1 else "Found log directories:")
        out.extend(f"  {d}" for d in found)
        out.append("")
    if first is not None:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(first.to_properties().items()))
        out.extend([f"Found metadata: {{{shown}}}", ""])
    if problems:
        out.append("Found problem:" if len(problems) == 1 else "Found problems:")
        out.extend(f"  {p}" for p in problems)
        out.append("")
    return InfoResult(exit_code=1 if problems else 0, output="".join(line + "\n" for line in out))
