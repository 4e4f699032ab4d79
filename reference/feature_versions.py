"""What one Kafka release knows of feature levels, as data (rules §1.11): ``MetadataVersion`` and ``Feature``.

Kept apart from ``feature_control`` so that ``broker.KafkaBehaviour`` can name a release's table.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftspec.reference import metadata_version as mv
from kraftspec.reference.frozen import FrozenMap

METADATA_VERSION = "metadata.version"
ELR_FEATURE = "eligible.leader.replicas.version"
KRAFT_VERSION = "kraft.version"
SHORT_MAX = 32767  # Short.MAX_VALUE: VersionRange.ALL's top


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureVersions:
    """What one Kafka release knows of feature levels (``MetadataVersion``, ``Feature`` and its ``FeatureVersion``s).

    ``metadata_versions``: the metadata.version levels it defines (``MetadataVersion.fromFeatureLevel``), of which
    those up to ``latest_production`` are production-ready (a controller's software supports those by default,
    ``QuorumFeatures.defaultSupportedFeatureMap``);
    ``metadata_changing``: those whose ``didMetadataChange`` is true; ``features``: each other feature's levels,
    each with its dependencies (name to minimum level; ``Feature.FEATURES``, the test-only ``test.feature.version``
    included, as Kafka's own unit tests use it); ``downgrade_names_versions``: 4.2+ words a refused
    metadata.version downgrade as "Unsupported metadata.version downgrade from A to B." (4.0–4.1: "Invalid
    metadata.version N."); ``kraft_version_by_raft_client``: 4.1+ reads and upgrades kraft.version through the Raft
    client (``KRaftVersionAccessor``); 4.0 treats it as any other feature, whose level its replay never finalizes
    (so it is always at 0 for UpdateFeatures).
    """

    name: str
    metadata_versions: tuple[int, int]
    latest_production: int
    metadata_changing: frozenset[int]
    features: FrozenMap[str, FrozenMap[int, FrozenMap[str, int]]]
    downgrade_names_versions: bool = True
    kraft_version_by_raft_client: bool = True


_NO_DEPENDENCY: FrozenMap[str, int] = FrozenMap()
_CHANGING = frozenset({7, 8, 11, 13, 14, 15, 17, 23, 30})  # didMetadataChange (4.3's table; 31 did not)


def _release(name: str, latest_production: int, latest_testing: int, *, minimum: int = mv.MINIMUM_4X,
             changing: frozenset[int] = _CHANGING, share_and_streams: bool = True,
             downgrade_names_versions: bool = True, kraft_version_by_raft_client: bool = True) -> FeatureVersions:
    """A 4.x release's table: metadata.version 3.3-IV3 to its latest testing level, and ``Feature.FEATURES`` (the
    test-only ``test.feature.version`` 2 depends on the latest testing metadata.version)."""
    features = {
        KRAFT_VERSION: FrozenMap({0: _NO_DEPENDENCY, 1: _NO_DEPENDENCY}),
        "transaction.version": FrozenMap({0: _NO_DEPENDENCY, 1: _NO_DEPENDENCY, 2: _NO_DEPENDENCY}),
        "group.version": FrozenMap({0: _NO_DEPENDENCY, 1: _NO_DEPENDENCY}),
        ELR_FEATURE: FrozenMap({0: _NO_DEPENDENCY, 1: FrozenMap({METADATA_VERSION: mv.MV_4_0_IV1})}),
        "test.feature.version": FrozenMap({0: _NO_DEPENDENCY, 1: _NO_DEPENDENCY,
                                           2: FrozenMap({METADATA_VERSION: latest_testing})}),
    }
    if share_and_streams:
        features.update({"share.version": FrozenMap({0: _NO_DEPENDENCY, 1: _NO_DEPENDENCY}),
                         "streams.version": FrozenMap({0: _NO_DEPENDENCY, 1: _NO_DEPENDENCY})})
    return FeatureVersions(name=name, metadata_versions=(minimum, latest_testing), latest_production=latest_production,
                           metadata_changing=frozenset(level for level in changing if level <= latest_testing),
                           features=FrozenMap(features), downgrade_names_versions=downgrade_names_versions,
                           kraft_version_by_raft_client=kraft_version_by_raft_client)


KAFKA_3_9 = _release("3.9", 21, 23, minimum=1, share_and_streams=False, downgrade_names_versions=False,
                     kraft_version_by_raft_client=False)
"""Kafka 3.9 (``MetadataVersion`` 3.0-IV1 to 4.0-IV1, 3.9-IV0 the latest production one); only its defaults are used
(its UpdateFeatures answers per feature, which is not modelled)."""
KAFKA_4_0 = _release("4.0", 25, 26, share_and_streams=False, downgrade_names_versions=False,
                     kraft_version_by_raft_client=False)
"""Kafka 4.0 (``MetadataVersion`` 7–26, production up to 25; no share.version or streams.version yet)."""
KAFKA_4_1 = _release("4.1", 27, 29, downgrade_names_versions=False)
"""Kafka 4.1 (``MetadataVersion`` 7–29, production up to 27)."""
KAFKA_4_2 = _release("4.2", 29, 30)
"""Kafka 4.2 (``MetadataVersion`` 7–30, production up to 29)."""
KAFKA_4_3 = _release("4.3", 30, 31)
"""Kafka 4.3 (``MetadataVersion`` 7–31, production up to 4.3-IV0, 30)."""
KAFKA_4_4 = _release("4.4", 33, 34, changing=_CHANGING | {32, 33})
"""Kafka 4.4 (``MetadataVersion`` 7–34, production up to 33; 4.4-IV1 and 4.4-IV2 changed the metadata, as its
released ``MetadataVersion`` says); its features are taken as 4.3's (checked on the harness against Kafka 4.4.0)."""
