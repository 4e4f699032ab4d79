"""A minimal Kafka protocol client for the live answers: DescribeCluster (apiKey 60, v0–v2) and DescribeQuorum
(apiKey 55, v0–v2), each sent at an exact version (Kafka's Admin client picks the version itself, so it cannot
ask for v0 or v1). Flexible versions only: request header v2, response header v1 (KIP-482 compact types and
tagged fields). Only the cluster's own nodes are contacted (127.0.0.1 ports, or its test hosts on the runner's bridge).
"""

from __future__ import annotations

import base64
import socket
import struct
from dataclasses import dataclass, field
from typing import Optional

from kraftspec.cluster.netns import SUBNET_PREFIX

DESCRIBE_CLUSTER = 60
DESCRIBE_QUORUM = 55
API_VERSIONS = 18
CLIENT_ID = "kraftspec"
METADATA_TOPIC = "__cluster_metadata"


class WireError(RuntimeError):
    """The node closed the connection or sent bytes this reader does not understand."""


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _compact_string(text: Optional[str]) -> bytes:
    if text is None:
        return _uvarint(0)
    raw = text.encode()
    return _uvarint(len(raw) + 1) + raw


class Reader:
    """Reads the fields of a flexible-version response body."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        s = struct.Struct(">" + fmt)
        if self.pos + s.size > len(self.data):
            raise WireError(f"response ends at byte {len(self.data)} inside a field at {self.pos}")
        (value,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.take("B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise WireError("varint longer than 5 bytes")

    def compact_string(self) -> Optional[str]:
        length = self.uvarint() - 1
        if length < 0:
            return None
        if self.pos + length > len(self.data):
            raise WireError("string past the end of the response")
        text = self.data[self.pos:self.pos + length].decode()
        self.pos += length
        return text

    def array_length(self) -> int:
        return self.uvarint() - 1

    def uuid(self) -> bytes:
        if self.pos + 16 > len(self.data):
            raise WireError("uuid past the end of the response")
        raw = self.data[self.pos:self.pos + 16]
        self.pos += 16
        return raw

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            size = self.uvarint()
            self.pos += size


def _check_loopback(host: str) -> None:
    """Refuse any address but loopback and the runner's test hosts (``netns.SUBNET_PREFIX``)."""
    if not host.startswith(("127.", SUBNET_PREFIX)) and host != "localhost":
        raise WireError(f"refusing to contact {host}: kraftspec cluster only talks to loopback addresses and its "
                        f"own test hosts ({SUBNET_PREFIX}X.N)")


def call(host: str, port: int, api_key: int, version: int, body: bytes, timeout: float = 5.0,
         correlation_id: int = 1, response_header_tagged: bool = True) -> bytes:
    """Send one request (header v2) and return the response body after its header (v1; v0 for ApiVersions)."""
    _check_loopback(host)
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client + _uvarint(0)
    payload = header + body
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _recv(sock, 4))[0]
        data = _recv(sock, size)
    reader = Reader(data)
    if reader.take("i") != correlation_id:
        raise WireError("response correlation id differs from the request's")
    if response_header_tagged:
        reader.tagged_fields()
    return data[reader.pos:]


def _recv(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 16))
        if not chunk:
            raise WireError("the node closed the connection (it does not serve this request or version)")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class ClusterNode:
    node_id: int
    host: str
    port: int
    rack: Optional[str]
    is_fenced: bool


@dataclass(frozen=True)
class DescribeClusterAnswer:
    error_code: int
    error_message: Optional[str]
    endpoint_type: int
    cluster_id: str
    controller_id: int
    nodes: tuple[ClusterNode, ...]
    cluster_authorized_operations: int


def describe_cluster(host: str, port: int, version: int, endpoint_type: int = 1, include_fenced: bool = False,
                     include_authorized_operations: bool = False) -> DescribeClusterAnswer:
    """DescribeCluster at ``version``; fields a version lacks are not sent (v0: no endpoint type; v0–v1: no
    include-fenced flag), as Kafka's serializer would refuse non-default values there."""
    body = struct.pack(">?", include_authorized_operations)
    if version >= 1:
        body += struct.pack(">b", endpoint_type)
    if version >= 2:
        body += struct.pack(">?", include_fenced)
    body += _uvarint(0)
    r = Reader(call(host, port, DESCRIBE_CLUSTER, version, body))
    r.take("i")  # throttle time
    error_code = r.take("h")
    error_message = r.compact_string()
    answered_type = r.take("b") if version >= 1 else 1
    cluster_id = r.compact_string() or ""
    controller_id = r.take("i")
    nodes = []
    for _ in range(max(r.array_length(), 0)):
        node_id = r.take("i")
        node_host = r.compact_string() or ""
        node_port = r.take("i")
        rack = r.compact_string()
        fenced = bool(r.take("?")) if version >= 2 else False
        r.tagged_fields()
        nodes.append(ClusterNode(node_id, node_host, node_port, rack, fenced))
    operations = r.take("i")
    r.tagged_fields()
    return DescribeClusterAnswer(error_code, error_message, answered_type, cluster_id, controller_id, tuple(nodes),
                                 operations)


@dataclass(frozen=True)
class ReplicaStateAnswer:
    replica_id: int
    log_end_offset: int
    directory_id: Optional[str] = None
    """v2: ``ReplicaDirectoryId`` as Kafka prints a ``Uuid`` (URL-safe base64, no padding); None before v2."""


@dataclass(frozen=True)
class DescribeQuorumAnswer:
    error_code: int
    partition_error_code: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaStateAnswer, ...]
    observers: tuple[ReplicaStateAnswer, ...]
    nodes: dict[int, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)
    """v2: node id -> its listeners (name, host, port)."""


def describe_quorum(host: str, port: int, version: int = 2) -> DescribeQuorumAnswer:
    """DescribeQuorum for ``__cluster_metadata-0`` at ``version`` (served by the active controller)."""
    body = (_uvarint(2) + _compact_string(METADATA_TOPIC) + _uvarint(2) + struct.pack(">i", 0) + _uvarint(0)
            + _uvarint(0) + _uvarint(0))
    r = Reader(call(host, port, DESCRIBE_QUORUM, version, body))
    error_code = r.take("h")
    if version >= 2:
        r.compact_string()
    partition_error = leader_id = leader_epoch = high_watermark = -1
    voters: list[ReplicaStateAnswer] = []
    observers: list[ReplicaStateAnswer] = []
    for _ in range(max(r.array_length(), 0)):
        r.compact_string()
        for _ in range(max(r.array_length(), 0)):
            r.take("i")
            partition_error = r.take("h")
            if version >= 2:
                r.compact_string()
            leader_id, leader_epoch, high_watermark = r.take("i"), r.take("i"), r.take("q")
            for target in (voters, observers):
                for _ in range(max(r.array_length(), 0)):
                    replica_id = r.take("i")
                    directory = base64.urlsafe_b64encode(r.uuid()).decode().rstrip("=") if version >= 2 else None
                    end = r.take("q")
                    if version >= 1:
                        r.take("q"), r.take("q")
                    r.tagged_fields()
                    target.append(ReplicaStateAnswer(replica_id, end, directory))
            r.tagged_fields()
        r.tagged_fields()
    nodes: dict[int, tuple[tuple[str, str, int], ...]] = {}
    if version >= 2:
        for _ in range(max(r.array_length(), 0)):
            node_id = r.take("i")
            listeners = []
            for _ in range(max(r.array_length(), 0)):
                name = r.compact_string() or ""
                lhost = r.compact_string() or ""
                lport = r.take("H")
                r.tagged_fields()
                listeners.append((name, lhost, lport))
            r.tagged_fields()
            nodes[node_id] = tuple(listeners)
    r.tagged_fields()
    return DescribeQuorumAnswer(error_code, partition_error, leader_id, leader_epoch, high_watermark, tuple(voters),
                                tuple(observers), nodes)


def api_versions(host: str, port: int) -> dict[int, tuple[int, int]]:
    """ApiVersions v3: api key -> (min, max) version the listener serves (its response header is always v0)."""
    body = _compact_string(CLIENT_ID) + _compact_string("1") + _uvarint(0)
    r = Reader(call(host, port, API_VERSIONS, 3, body, response_header_tagged=False))
    error_code = r.take("h")
    if error_code != 0:
        raise WireError(f"ApiVersions answered error {error_code}")
    versions = {}
    for _ in range(max(r.array_length(), 0)):
        key, low, high = r.take("h"), r.take("h"), r.take("h")
        r.tagged_fields()
        versions[key] = (low, high)
    return versions
