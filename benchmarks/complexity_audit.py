"""Audit time and memory at n and 10n records of each kind (issue 21): linear means a ratio of about 10.

    python benchmarks/complexity_audit.py [--n 2000] [--factor 10] [--kind NAME ...] [--repeat 3]

For each record kind a synthetic metadata log is built (``kraftspec.traces.metalog.segments.encode_batch``, correct
CRC-32C) with a short preamble (metadata.version 4.0-IV1, ELR on, two unfenced brokers, a topic) and then n records of
that kind (with whatever they need: partitions for ClearElrRecord, topics for RemoveTopicRecord...). It is audited
with ``audit_paths`` as ``kraftspec audit`` does: the best of ``--repeat`` CPU times (the process's, so other load on
the machine counts less), and the peak of memory
traced by ``tracemalloc`` during one more audit. The ``big-batch`` kind is one batch of n small records (the
records are streamed out of it, not listed). Printed: per kind, time and peak at n and at factor x n and
their ratios (target: about the factor; quadratic would be its square).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable, Iterator

from kraftspec.reference.metadata_version import LEVELS
from kraftspec.traces.metalog.audit import audit_paths
from kraftspec.traces.metalog.control import encode_control
from kraftspec.traces.metalog.schema import encode_metadata_value
from kraftspec.traces.metalog.segments import Record, encode_batch

MV = LEVELS["4.0-IV1"]
TOPIC = "AAAAAAAAAAAAAAAAAAAAAQ"
BATCH = 200
Value = bytes


def _uuid(i: int) -> str:
    import base64

    return base64.urlsafe_b64encode(i.to_bytes(16, "big")).decode().rstrip("=")


def topic(i: int) -> Value:
    return encode_metadata_value(2, 0, {"name": f"topic-{i}", "topic_id": _uuid(1000 + i)})


def partition(topic_index: int, p: int, leader: int = 1, elr: tuple[int, ...] = ()) -> Value:
    return encode_metadata_value(3, 2, {"partition_id": p, "topic_id": _uuid(1000 + topic_index), "replicas": (1, 2),
                                        "isr": (1, 2), "leader": leader, "leader_epoch": 0, "partition_epoch": 0,
                                        "directories": (_uuid(0), _uuid(0)), "eligible_leader_replicas": elr or None,
                                        "last_known_elr": None})


def preamble() -> list[Value]:
    out = [encode_metadata_value(12, 0, {"name": "metadata.version", "feature_level": MV}),
           encode_metadata_value(12, 0, {"name": "eligible.leader.replicas.version", "feature_level": 1})]
    for broker in (1, 2):
        out.append(encode_metadata_value(0, 3, {"broker_id": broker, "incarnation_id": _uuid(broker), "broker_epoch": 2 + broker,
                                                "end_points": (), "features": (), "rack": None, "fenced": True,
                                                "in_controlled_shutdown": False, "log_dirs": (_uuid(0),)}))
    return out


def unfence(broker: int, epoch: int, fenced: int = -1) -> Value:
    return encode_metadata_value(17, 2, {"broker_id": broker, "broker_epoch": epoch, "fenced": fenced})


def kinds() -> dict[str, Callable[[int], Iterator[Value]]]:
    def topics(n: int) -> Iterator[Value]:
        yield from (topic(i) for i in range(n))

    def partitions(n: int) -> Iterator[Value]:
        yield topic(0)
        yield from (partition(0, p) for p in range(n))

    def partition_changes(n: int) -> Iterator[Value]:
        yield topic(0)
        yield from (partition(0, p) for p in range(100))
        for i in range(n):
            yield encode_metadata_value(5, 2, {"partition_id": i % 100, "topic_id": _uuid(1000), "leader": 1 + (i // 100) % 2})

    def clear_elr(n: int) -> Iterator[Value]:  # n partitions with an ELR, then n ClearElrRecords naming the topic
        yield topic(0)
        yield from (partition(0, p, elr=(2,)) for p in range(n))
        for i in range(n):
            yield encode_metadata_value(28, 0, {"topic_name": "topic-0"})

    def remove_topic(n: int) -> Iterator[Value]:  # n topics of one partition each, then each removed
        for i in range(n):
            yield topic(i)
            yield partition(i, 0)
        yield from (encode_metadata_value(9, 0, {"topic_id": _uuid(1000 + i)}) for i in range(n))

    def fencing(n: int) -> Iterator[Value]:  # n partitions led by broker 1, then broker 2 fenced and unfenced n times
        yield topic(0)
        yield from (partition(0, p, leader=1) for p in range(n))
        for i in range(n):
            yield unfence(2, 4, fenced=1 if i % 2 == 0 else -1)

    def register_broker(n: int) -> Iterator[Value]:
        for i in range(n):
            yield encode_metadata_value(0, 3, {"broker_id": 10 + i, "incarnation_id": _uuid(10 + i), "broker_epoch": 5,
                                               "end_points": (), "features": (), "rack": None, "fenced": True,
                                               "in_controlled_shutdown": False, "log_dirs": (_uuid(0),)})

    def configs(n: int) -> Iterator[Value]:  # n config keys on one topic
        yield topic(0)
        yield from (encode_metadata_value(4, 0, {"resource_type": 2, "resource_name": "topic-0", "name": f"key.{i}",
                                                 "value": str(i)}) for i in range(n))

    def client_quotas(n: int) -> Iterator[Value]:  # n quota keys on one entity
        entity = ({"entity_type": "user", "entity_name": "alice"},)
        yield from (encode_metadata_value(14, 0, {"entity": entity, "key": f"k{i}", "value": 1.0, "remove": False})
                    for i in range(n))

    def acls(n: int) -> Iterator[Value]:
        yield from (encode_metadata_value(18, 0, {"id": _uuid(5000 + i), "resource_type": 2, "resource_name": f"t{i}",
                                                  "pattern_type": 3, "principal": "User:a", "host": "*", "operation": 2,
                                                  "permission_type": 3}) for i in range(n))

    def noops(n: int) -> Iterator[Value]:
        yield from (b"\x01\x14\x00\x00" for _ in range(n))

    return {"TopicRecord": topics, "PartitionRecord": partitions, "PartitionChangeRecord": partition_changes,
            "ClearElrRecord": clear_elr, "RemoveTopicRecord": remove_topic, "fencing (BrokerRegistrationChange)": fencing,
            "RegisterBrokerRecord": register_broker, "ConfigRecord": configs, "ClientQuotaRecord": client_quotas,
            "AccessControlEntryRecord": acls, "NoOpRecord": noops}


def write_log(path: Path, values: Iterator[Value], batch: int = BATCH) -> None:
    """A log: a LeaderChange control batch, the preamble, then ``values`` in batches of ``batch`` records."""
    key, value = encode_control(2, {"version": 0, "leader_id": 1, "voters": ({"voter_id": 1},),
                                    "granting_voters": ({"voter_id": 1},)})
    offset = 0
    with open(path, "wb") as out:
        out.write(encode_batch(0, 1, [Record(0, 0, 0, key, value, 0)], attributes=0x20))
        offset = 1
        pending: list[Value] = list(preamble())
        pending.append(unfence(1, 3))
        pending.append(unfence(2, 4))

        def flush() -> None:
            nonlocal offset, pending
            if pending:
                records = [Record(0, offset + i, 0, None, v, 0) for i, v in enumerate(pending)]
                out.write(encode_batch(offset, 1, records))
                offset += len(pending)
                pending = []
        flush()
        for v in values:
            pending.append(v)
            if len(pending) >= batch:
                flush()
        flush()


def measure(path: Path, repeat: int) -> tuple[float, int, int, int]:
    """(best CPU seconds, peak traced bytes, records audited, violations) of ``audit_paths([path])``."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        started = time.process_time()  # CPU time: robust to other load on the machine
        report = audit_paths([str(path)])
        best = min(best, time.process_time() - started)
    gc.collect()
    tracemalloc.start()
    audit_paths([str(path)])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    (directory,) = report.directories
    if directory.errors:
        raise SystemExit(f"{path}: unreadable: {directory.errors[0].error}")
    return best, peak, sum(directory.record_counts.values()), directory.violation_count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="records of the kind in the small log (default 2000)")
    parser.add_argument("--factor", type=int, default=10, help="the large log has factor x n (default 10)")
    parser.add_argument("--kind", action="append", help="only these kinds (default: all, and big-batch)")
    parser.add_argument("--repeat", type=int, default=3, help="timed audits per log, best taken (default 3)")
    args = parser.parse_args(argv)
    table = kinds()
    selected = args.kind or [*table, "big-batch"]
    print(f"audit complexity: n = {args.n}, {args.factor}n = {args.n * args.factor}; ratios should be about "
          f"{args.factor} (linear), {args.factor ** 2} would be quadratic")
    print(f"{'kind':36} {'time n':>9} {'time 10n':>9} {'ratio':>6} {'peak n':>9} {'peak 10n':>9} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in selected:
            results = []
            for n in (args.n, args.n * args.factor):
                path = Path(tmp) / "00000000000000000000.log"
                if kind == "big-batch":  # one batch of 5n NoOp records: streamed, never listed
                    write_log(path, (b"\x01\x14\x00\x00" for _ in range(5 * n)), batch=5 * n)
                else:
                    write_log(path, table[kind](n))
                results.append(measure(path, args.repeat))
            (t1, m1, r1, _), (t2, m2, r2, _) = results
            print(f"{kind:36} {t1:8.3f}s {t2:8.3f}s {t2 / t1:6.1f} {m1 / 2**20:7.1f}MB {m2 / 2**20:7.1f}MB {m2 / m1:6.1f}"
                  f"   ({r1} / {r2} records)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
