"""Build the harness for a Kafka version and talk to it: one JVM process, JSON lines both ways.

Maven resolves Kafka's jars from the package registry on the first build of a version (later builds reuse its
local repository) and compiles the harness into ``$KRAFTSPEC_CACHE/harness/VERSION-HASH`` (default cache
``~/.cache/kraftspec``), the hash being that of the harness sources, so an edited harness is rebuilt.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections import deque
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

SOURCE = Path(__file__).resolve().parent
DEFAULT_VERSION = "4.3.1"
# Versions whose kafka-raft test jar (Kafka's Raft test utilities) the registry does not serve: the nearest served one.
TEST_JAR_VERSION = {"4.2.2": "4.2.1", "4.4.0": "4.3.1"}
JVM_OPTIONS = ("-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")


class HarnessUnavailable(RuntimeError):
    """The harness cannot be built or started (no Java or Maven, the version not served, a compile error)."""


class HarnessError(RuntimeError):
    """The harness could not serve a request (an input it cannot express to Kafka, a protocol error)."""


def kafka_release(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a Kafka version the harness covers (3.9 and later)."""
    parts = version.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise HarnessUnavailable(f"not a Kafka version: {version!r} (expected e.g. {DEFAULT_VERSION})")
    major, minor = int(parts[0]), int(parts[1])
    if (major, minor) < (3, 9):
        raise HarnessUnavailable(f"Kafka {version}: the harness covers 3.9 and later")
    return major, minor


def kafka_line(version: str) -> str:
    """The source folder (``src/line-LINE``) whose classes follow this Kafka version's APIs."""
    return "3.9" if kafka_release(version)[0] == 3 else "4.x"


def source_folders(version: str) -> dict[str, str]:
    """The pom's source-folder properties for ``version``: its API line, the sessions built from one release on (the
    partition component from 4.0, whose ELR and shutdown handling 3.9 lacks; its leader side from 4.2, where
    ``kafka.cluster.Partition``'s collaborators became Java; the raft client on 4.3, whose network channel and
    record classes it is written against), and one shim per Kafka API change the partition session meets."""
    release = kafka_release(version)
    partition, leaders = release >= (4, 0), release >= (4, 2)

    def variant(used: bool, since: tuple[int, int], new: str, old: str) -> str:
        return "none" if not used else new if release >= since else old

    return {"kafka.line": kafka_line(version),
            "harness.partition": "partition" if partition else "none",
            "harness.leaders": variant(partition, (4, 2), "partition-leaders", "partition-no-leaders"),
            "harness.raft": "raft" if release == (4, 3) else "none",
            "shim.log-context": variant(partition, (4, 4), "log-context-internals", "log-context-utils"),
            "shim.requests": variant(partition, (4, 1), "requests-4.1", "requests-4.0"),
            "shim.cordoned": variant(partition, (4, 3), "cordoned", "cordoned-none"),
            "shim.records": variant(leaders, (4, 3), "records-internal", "records-common"),
            "shim.alter-partition": variant(leaders, (4, 4), "alter-partition-server", "alter-partition-core")}


def cache_dir() -> Path:
    return Path(os.environ.get("KRAFTSPEC_CACHE") or Path.home() / ".cache" / "kraftspec")


def _sources_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted([SOURCE / "pom.xml", *SOURCE.glob("src/**/*.java")]):
        digest.update(str(path.relative_to(SOURCE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build(version: str = DEFAULT_VERSION, *, quiet: bool = True) -> tuple[Path, str]:
    """Build the harness for ``version`` (once per source hash); returns its output folder and class path."""
    folders = source_folders(version)
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise HarnessUnavailable(f"the Kafka harness needs {tool} on the PATH (Java 17 and Maven)")
    out = cache_dir() / "harness" / f"{version}-{_sources_hash()}"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test processes build once
        classpath_file = out / "classpath.txt"
        if not classpath_file.exists():
            command = ["mvn", "-B", "-f", str(SOURCE / "pom.xml"), f"-Dkafka.version={version}",
                       *(f"-D{name}={folder}" for name, folder in folders.items()),
                       f"-Dkafka.testjar.version={TEST_JAR_VERSION.get(version, version)}",
                       f"-Dharness.out={out}", "package"]
            if quiet:
                command.insert(1, "-q")
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                shutil.rmtree(out / "classes", ignore_errors=True)
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
                raise HarnessUnavailable(f"building the harness for Kafka {version} failed "
                                         f"({' '.join(command)}):\n{tail}")
    classpath = f"{out / 'classes'}{os.pathsep}{classpath_file.read_text().strip()}"
    return out, classpath


class KafkaProcess:
    """One harness JVM: requests are JSON objects, each answered by one JSON line. Use as a context manager."""

    def __init__(self, version: str = DEFAULT_VERSION) -> None:
        self.version = version
        _, classpath = build(version)
        self._stderr: deque[str] = deque(maxlen=200)
        self._process = subprocess.Popen(
            ["java", *JVM_OPTIONS, "-cp", classpath, "io.kraftspec.harness.Main"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1 << 16)
        threading.Thread(target=self._drain, daemon=True).start()
        hello = self.request({"op": "hello"})
        self.kafka_version: str = hello["kafka_version"]
        self.components: tuple[str, ...] = tuple(hello["components"])
        if self.kafka_version != version:
            self.close()
            raise HarnessUnavailable(f"asked for Kafka {version}, the class path holds {self.kafka_version}")

    def _drain(self) -> None:
        assert self._process.stderr is not None
        for line in self._process.stderr:
            self._stderr.append(line.rstrip("\n"))

    def request(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request and read its answer; a harness error raises :class:`HarnessError`."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(obj, separators=(",", ":")) + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            process.wait(timeout=10)
            raise HarnessUnavailable(f"the harness JVM exited ({process.returncode}):\n" + "\n".join(self._stderr))
        answer = json.loads(line)
        if "error" in answer:
            raise HarnessError(answer["error"])
        return answer

    def open(self, component: str, initial: Mapping[str, Any], **options: Any) -> None:
        self.request({"op": "open", "component": component, "initial": initial, **options})

    def step(self, input: Mapping[str, Any]) -> dict[str, Any]:
        return self.request({"op": "step", "input": input})

    def run(self, component: str, initial: Mapping[str, Any], inputs: Sequence[Mapping[str, Any]],
            **options: Any) -> list[dict[str, Any]]:
        """A whole trace's inputs in one round trip; stops after the first input Kafka refuses."""
        answer = self.request({"op": "run", "component": component, "initial": initial,
                               "inputs": list(inputs), **options})
        return answer["steps"]

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> "KafkaProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SHARED: dict[str, KafkaProcess] = {}


def shared(version: str = DEFAULT_VERSION) -> KafkaProcess:
    """One JVM per version for the whole Python process (tests, conform, the differential machines)."""
    process = _SHARED.get(version)
    if process is None or process._process.poll() is not None:
        process = _SHARED[version] = KafkaProcess(version)
    return process
