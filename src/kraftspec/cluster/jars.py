"""Apache Kafka's released server and tools jars for a version: resolved by Maven from the package registry
(``harness/server/pom.xml``, a dependency-only project) into ``$KRAFTSPEC_CACHE/server/VERSION-HASH/classpath.txt``.

The first call for a version downloads the jars into Maven's local repository; later calls read the cached class
path. Main classes differ between Kafka lines (``main_class``).
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

from kraftspec.harness.jvm import DEFAULT_VERSION, cache_dir

POM = Path(__file__).resolve().parents[3] / "harness" / "server" / "pom.xml"
"""The pom in a source checkout (``src/kraftspec/cluster/`` -> ``harness/server/pom.xml``)."""


class JarsUnavailable(RuntimeError):
    """Kafka's jars cannot be had: no Java or Maven, or the version is not served."""


def _pom() -> Path:
    """The dependency-only pom: installed beside ``kraftspec.harness`` (package data), or in the source tree."""
    try:
        import kraftspec.harness as harness

        installed = Path(harness.__file__).resolve().parent / "server" / "pom.xml"
        if installed.exists():
            return installed
    except ImportError:  # pragma: no cover - the harness package is part of kraftspec
        pass
    return POM


def version_tuple(version: str) -> tuple[int, int, int]:
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:3]]
    if len(parts) < 2:
        raise JarsUnavailable(f"not a Kafka version: {version!r} (expected e.g. {DEFAULT_VERSION})")
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def classpath(version: str = DEFAULT_VERSION, *, quiet: bool = True) -> str:
    """The class path of Kafka ``version``'s server and tools jars (built once per version and pom)."""
    if version_tuple(version) < (3, 7, 0):
        raise JarsUnavailable(f"Kafka {version}: the cluster runner covers 3.7 and later (controller registrations)")
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise JarsUnavailable(f"the cluster runner needs {tool} on the PATH (Java 17 and Maven)")
    pom = _pom()
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:12]
    out = cache_dir() / "server" / f"{version}-{digest}"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        listing = out / "classpath.txt"
        if not listing.exists():
            command = ["mvn", "-B", "-f", str(pom), f"-Dkafka.version={version}", f"-Dserver.out={out}", "package"]
            if quiet:
                command.insert(1, "-q")
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0 or not listing.exists():
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
                raise JarsUnavailable(f"fetching Kafka {version}'s jars failed ({' '.join(command)}):\n{tail}")
    return listing.read_text().strip()


def main_class(tool: str, version: str = DEFAULT_VERSION) -> str:
    """The main class of ``tool`` (``server``, ``storage``, ``dump-log``, ``cluster``, ``metadata-quorum``,
    ``producer-perf``) in ``version``: DumpLogSegments moved from core (Scala) to the tools jar in 4.0."""
    v = version_tuple(version)
    classes = {
        "server": "kafka.Kafka",
        "storage": "kafka.tools.StorageTool",
        "dump-log": "org.apache.kafka.tools.DumpLogSegments" if v >= (4, 0, 0) else "kafka.tools.DumpLogSegments",
        "cluster": "org.apache.kafka.tools.ClusterTool",
        "metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
        "producer-perf": "org.apache.kafka.tools.ProducerPerformance",
        "topics": "org.apache.kafka.tools.TopicCommand",
    }
    return classes[tool]
