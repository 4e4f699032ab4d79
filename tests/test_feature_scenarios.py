"""Kafka's ``FeatureControlManagerTest`` (UpdateFeatures and replay, rules §1.11), transcribed by test name, and the
registration compatibility check the other way round; each a plain function so the mutant tests can re-run them.

Follows Kafka 4.3's ``metadata/src/test/java/org/apache/kafka/controller/FeatureControlManagerTest.java`` (branch
4.3; first transcribed from trunk 1eb7644 of October 2024), judged against Kafka 4.3's ``FeatureControlManager``.
4.3's tests use metadata.version levels 4.x still defines (3.3-IV3 to 3.6-IV0, levels 7-12, of which 3.3-IV3 and
3.4-IV0 changed the metadata and 3.5-IV0 did not; 4.0-IV1, 23), so Kafka's own levels are kept. The October-2024
tests 4.3 dropped are gone: ``testNoMetadataVersionChangeDuringMigration``, and the two that
``testCannotDowngradeBeforeMinimumKraftVersion`` replaced; of those, ``testCannotDowngradeBefore3_3_IV0`` alone
reached a level this Kafka does not define, a rule now kept among those no FeatureControlManagerTest covers.
``testCanUseUnsafeDowngradeIfMetadataChanged`` is ``@Disabled`` in 4.3: its function asserts what 4.3 does instead.
The first half of ``testMetadataVersion`` (no level before any record) is outside the reference, whose controller
starts bootstrapped at a level. The reference's ``update_features`` is the whole RPC, so a failure's message
carries ``QuorumController``'s prefix and enabling ELR also writes ``ConfigurationControlManager``'s records.

Reference functions are called through their modules (``fc.update_features``), never imported by name, so an
applied mutant is what runs.
"""

from __future__ import annotations

from typing import Optional

import test_raft_reconfig_client_scenarios as client
import kraftspec.reference.broker as broker
import kraftspec.reference.feature_control as fc
from kraftspec.models.broker_strategies import directory_of
from kraftspec.reference.errors import Errors
from kraftspec.reference.feature_versions import SHORT_MAX
from kraftspec.reference import raft
from kraftspec.reference.frozen import evolve
from kraftspec.reference.raft_messages import InvalidUpdateVersionError, NotLeaderError, UpgradeKRaftVersion
from kraftspec.reference.records import FeatureLevelRecord, FeatureRange, RegisterBrokerRecord

MV = "metadata.version"
TEST = "test.feature.version"
TV = "transaction.version"
ELR = "eligible.leader.replicas.version"
PREFIX = "The update failed for all features since the following feature had an error: "


def default_supported(**overrides: tuple[int, int]) -> dict[str, tuple[int, int]]:
    """``QuorumFeatures.defaultSupportedFeatureMap(true)`` of Kafka 4.3 (metadata.version 3.3-IV3 to the latest testing
    level, every production feature from its lowest to its latest testing level), then the test's own ranges
    (``features(...)`` in FeatureControlManagerTest)."""
    supported = {MV: (7, 31), "kraft.version": (0, 1), TV: (0, 2), "group.version": (0, 1),
                 "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1), "streams.version": (0, 1)}
    supported.update({name.replace("__", "."): span for name, span in overrides.items()})
    return supported


def manager(metadata_version: int, supported: dict[str, tuple[int, int]],
            brokers: Optional[dict[int, dict[str, tuple[int, int]]]] = None) -> broker.ClusterControl:
    """A ``FeatureControlManager`` as the tests build it: the local controller's ranges, the finalized
    metadata.version, and the brokers its ``ClusterFeatureSupportDescriber`` reports (registered by replay)."""
    state = broker.initial_state("FeatureControlManagerA", metadata_version, controller_features=supported)
    for offset, (broker_id, ranges) in enumerate((brokers or {}).items()):
        record = RegisterBrokerRecord(broker_id=broker_id, incarnation_id=f"inc{broker_id}", broker_epoch=offset,
                                      features=tuple(FeatureRange(name=name, min_supported=low, max_supported=high)
                                                     for name, (low, high) in ranges.items()))
        state = broker.replay(state, record, offset)
    return broker.log_advanced(state, len(brokers or {}))


def update(state: broker.ClusterControl, updates: dict[str, int], types: Optional[dict[str, int]] = None,
           validate_only: bool = False) -> tuple[broker.ClusterControl, broker.Output[fc.UpdateFeaturesResponse]]:
    """``manager.updateFeatures(updates, upgradeTypes, validateOnly)``; an unnamed type is UPGRADE."""
    request = fc.UpdateFeaturesRequest(updates=tuple(
        fc.FeatureUpdate(feature=name, max_version_level=level, upgrade_type=(types or {}).get(name, fc.UPGRADE))
        for name, level in updates.items()), validate_only=validate_only)
    return fc.update_features(state, request)


def refused(out: broker.Output[fc.UpdateFeaturesResponse], message: str) -> None:
    """INVALID_UPDATE_VERSION with Kafka's message, nothing written."""
    assert out.response == fc.UpdateFeaturesResponse(error=Errors.INVALID_UPDATE_VERSION, message=PREFIX + message)
    assert out.records == ()


def accepted(out: broker.Output[fc.UpdateFeaturesResponse], *records: FeatureLevelRecord) -> None:
    """ApiError.NONE and exactly these records."""
    assert out.response == fc.UpdateFeaturesResponse(error=Errors.NONE)
    assert tuple(record for _, record in out.records) == records


# ---------------------------------------------------------------- FeatureControlManagerTest.testUpdateFeatures

def test_update_features() -> None:
    state = manager(7, default_supported(test__feature__version=(0, 2)))
    assert dict(state.finalized_features) == {MV: 7}
    _, out = update(state, {TEST: 3}, {TEST: fc.SAFE_DOWNGRADE})
    refused(out, f"Invalid update version 3 for feature {TEST}. Local controller 0 only supports versions 0-2")
    # one feature failing fails the whole request: no record for test.feature.version either
    _, out = update(state, {TEST: 1, "bar": 1})
    refused(out, "Invalid update version 1 for feature bar. Local controller 0 does not support this feature.")
    _, out = update(state, {TEST: 1})
    accepted(out, FeatureLevelRecord(name=TEST, feature_level=1))


# ---------------------------------------------------------------- FeatureControlManagerTest.testReplay

def test_replay() -> None:
    state = manager(7, default_supported(foo=(1, 2)))
    state = broker.replay(state, FeatureLevelRecord(name="foo", feature_level=2), 0)
    assert dict(state.finalized_features) == {MV: 7, "foo": 2}


# ----------------------------------------------------- FeatureControlManagerTest.testReplayKraftVersionFeatureLevel

def test_replay_kraft_version_feature_level() -> None:
    """A FeatureLevelRecord of kraft.version at its latest production level (1) is skipped: the Raft client, not the
    feature manager, owns that level (KAFKA-18979)."""
    state = manager(7, default_supported(foo=(1, 2)))
    state = broker.replay(state, FeatureLevelRecord(name="kraft.version", feature_level=1), 0)
    assert dict(state.finalized_features) == {MV: 7}


# ---------------------------------------------------------------- FeatureControlManagerTest.testUpdateFeaturesErrorCases

def test_update_features_error_cases() -> None:
    state = manager(7, default_supported(foo=(1, 5), transaction__version=(0, 3)), brokers={5: {TV: (0, 2)}})
    _, out = update(state, {"foo": 3}, {"foo": fc.SAFE_DOWNGRADE})
    refused(out, "Invalid update version 3 for feature foo. Broker 5 does not support this feature.")
    state, out = update(state, {TV: 2})
    accepted(out, FeatureLevelRecord(name=TV, feature_level=2))
    _, out = update(state, {TV: 1})
    refused(out, f"Invalid update version 1 for feature {TV}. Can't downgrade the version of this feature without "
                 f"setting the upgrade type to either safe or unsafe downgrade.")
    _, out = update(state, {TV: 1}, {TV: fc.SAFE_DOWNGRADE})
    accepted(out, FeatureLevelRecord(name=TV, feature_level=1))


# ---------------------------------------------------------------- FeatureControlManagerTest.testReplayRecords

def test_replay_records() -> None:
    state = manager(7, default_supported(test__feature__version=(0, 5), transaction__version=(0, 2)))
    state, _ = update(state, {TEST: 1, TV: 2})
    assert state.metadata_version == 7
    assert dict(state.finalized_features) == {MV: 7, TEST: 1, TV: 2}


# ---------------------------------------------------------------- FeatureControlManagerTest.createTestManager

def create_test_manager(level: int = 8) -> broker.ClusterControl:
    """``createTestManager``: the local controller supports 3.3-IV3..3.6-IV0 (7-12), at 3.4-IV0 (8); ``level`` for
    the tests that build the same manager at 3.5-IV1 (10) or 3.5-IV0 (9)."""
    return manager(level, default_supported(metadata__version=(7, 12)))


def test_apply_metadata_version_change_record() -> None:
    state = broker.replay(create_test_manager(), FeatureLevelRecord(name=MV, feature_level=9), 0)
    assert state.metadata_version == 9


def test_cannot_downgrade_to_higher_version() -> None:
    _, out = update(create_test_manager(), {MV: 9}, {MV: fc.SAFE_DOWNGRADE}, validate_only=True)
    refused(out, "Invalid update version 9 for feature metadata.version. Can't downgrade to a newer version.")


def test_cannot_unsafe_downgrade_to_higher_version() -> None:
    _, out = update(create_test_manager(), {MV: 9}, {MV: fc.UNSAFE_DOWNGRADE}, validate_only=True)
    refused(out, "Invalid update version 9 for feature metadata.version. Can't downgrade to a newer version.")


def test_cannot_upgrade_to_lower_version() -> None:
    _, out = update(create_test_manager(10), {MV: 9}, {MV: fc.UPGRADE}, validate_only=True)
    refused(out, "Invalid update version 9 for feature metadata.version. Can't downgrade the version of this feature "
                 "without setting the upgrade type to either safe or unsafe downgrade.")


def test_can_upgrade_to_higher_version() -> None:
    state, out = update(create_test_manager(), {MV: 9}, {MV: fc.UPGRADE}, validate_only=True)
    accepted(out)
    assert state.metadata_version == 8  # validate-only


def test_cannot_use_safe_downgrade_if_metadata_changed() -> None:
    _, out = update(create_test_manager(), {MV: 7}, {MV: fc.SAFE_DOWNGRADE}, validate_only=True)
    refused(out, "Unsupported metadata.version downgrade from 8 to 7. Refusing to perform the requested downgrade "
                 "because it might delete metadata information.")


def test_unsafe_downgrade_is_temporarily_disabled() -> None:
    _, out = update(create_test_manager(), {MV: 7}, {MV: fc.UNSAFE_DOWNGRADE}, validate_only=True)
    refused(out, "Unsupported metadata.version downgrade from 8 to 7. Unsafe metadata downgrade is not supported in "
                 "this version.")


def test_can_use_unsafe_downgrade_if_metadata_changed() -> None:
    """``@Disabled`` in Kafka 4.3: from ``createTestManager``'s 3.4-IV0 (8), a level that changed the metadata, it
    expects UNSAFE_DOWNGRADE to 3.3-IV3 (7) accepted, but 4.3's ``updateMetadataVersion`` refuses it (KAFKA-13896;
    ``testUnsafeDowngradeIsTemporarilyDisabled`` asserts the message). What it shows on 4.3 is the opposite of its
    name: UNSAFE_DOWNGRADE goes only where SAFE_DOWNGRADE goes, across levels that changed nothing (3.5-IV0, 9, to
    3.4-IV0)."""
    _, out = update(create_test_manager(), {MV: 7}, {MV: fc.UNSAFE_DOWNGRADE}, validate_only=True)
    assert out.response.error is Errors.INVALID_UPDATE_VERSION
    _, out = update(create_test_manager(9), {MV: 8}, {MV: fc.UNSAFE_DOWNGRADE}, validate_only=True)
    accepted(out)


def test_can_use_safe_downgrade_if_metadata_did_not_change() -> None:
    _, out = update(create_test_manager(9), {MV: 8}, {MV: fc.SAFE_DOWNGRADE}, validate_only=True)
    accepted(out)


def test_cannot_downgrade_before_minimum_kraft_version() -> None:
    """3.3-IV2 (6), the level below 4.x's lowest, is outside the local controller's range, which is checked first."""
    state = manager(7, default_supported(metadata__version=(7, 31)))
    _, out = update(state, {MV: 6}, {MV: fc.UNSAFE_DOWNGRADE}, validate_only=True)
    refused(out, "Invalid update version 6 for feature metadata.version. Local controller 0 only supports versions "
                 "7-31")


def test_create_feature_level_records() -> None:
    state = manager(7, {MV: (7, 31), TEST: (0, 2)}, brokers={1: {TEST: (0, 3)}})
    state, out = update(state, {TEST: 1}, {TEST: fc.UPGRADE})
    accepted(out, FeatureLevelRecord(name=TEST, feature_level=1))
    assert state.finalized_features.get(TEST) == 1
    state, out = update(state, {TEST: 0}, {TEST: fc.UNSAFE_DOWNGRADE})
    accepted(out, FeatureLevelRecord(name=TEST, feature_level=0))
    assert TEST not in state.finalized_features


def test_upgrade_elr_feature_level() -> None:
    """From 4.0-IV1 (23), the level ELR 1 depends on. Kafka's manager writes the one FeatureLevelRecord; the whole RPC
    writes ``ConfigurationControlManager``'s min.insync.replicas record before it."""
    state = manager(23, {MV: (23, 31), ELR: (0, 1)}, brokers={1: {ELR: (0, 1)}})
    state, out = update(state, {ELR: 1}, {ELR: fc.UPGRADE})
    assert out.response == fc.UpdateFeaturesResponse(error=Errors.NONE)
    levels = [record for _, record in out.records if isinstance(record, FeatureLevelRecord)]
    assert levels == [FeatureLevelRecord(name=ELR, feature_level=1)]
    assert state.finalized_features.get(ELR) == 1


def test_metadata_version() -> None:
    """The second half of Kafka's test: a replayed metadata.version record at the lowest level (3.3-IV3) is the
    level, here replayed over ``createTestManager``'s bootstrap level."""
    state = broker.replay(create_test_manager(), FeatureLevelRecord(name=MV, feature_level=7), 0)
    assert state.metadata_version == 7


# ---------------------------------------------------------------- rules of §1.11 no FeatureControlManagerTest covers

def test_a_metadata_version_this_kafka_does_not_define_is_refused() -> None:
    """``updateMetadataVersion``: a level the local controller's range admits but ``MetadataVersion`` does not define,
    on either side of 4.3's levels 7-31 (as the October-2024 ``testCannotDowngradeBefore3_3_IV0`` reached it)."""
    state = manager(7, default_supported(metadata__version=(1, SHORT_MAX)))
    _, out = update(state, {MV: 3}, {MV: fc.UNSAFE_DOWNGRADE}, validate_only=True)
    refused(out, "Invalid metadata.version 3. Valid versions are from 7 to 31.")
    _, out = update(state, {MV: 32}, validate_only=True)
    refused(out, "Invalid metadata.version 32. Valid versions are from 7 to 31.")


def test_a_finalized_level_refuses_brokers_that_cannot_read_it_and_the_other_way_round() -> None:
    """``processRegistrationFeature`` and ``reasonNotSupported`` are the two halves of one compatibility rule."""
    state = manager(30, default_supported(), brokers={1: {MV: (7, 30)}})
    _, out = update(state, {MV: 31})
    refused(out, "Invalid update version 31 for feature metadata.version. Broker 1 only supports versions 7-30")
    state, out = update(manager(30, default_supported(metadata__version=(7, SHORT_MAX))), {MV: 31})
    accepted(out, FeatureLevelRecord(name=MV, feature_level=31))
    request = broker.BrokerRegistrationRequest(broker_id=2, cluster_id="FeatureControlManagerA", incarnation_id="b",
                                               features=(FeatureRange(name=MV, min_supported=7, max_supported=30),),
                                               log_dirs=(directory_of(2),))
    _, registered = broker.register_broker(state, request, 0)
    assert registered.response.error is Errors.UNSUPPORTED_VERSION


def test_dependencies_are_checked_against_the_levels_the_request_proposes() -> None:
    """``Feature.validateVersion`` reads ``proposedUpdatedVersions``: ELR 1 needs metadata.version 4.0-IV1 (23), which
    the same request may bring."""
    state = manager(22, default_supported())
    _, out = update(state, {"eligible.leader.replicas.version": 1})
    refused(out, "Invalid update version 1 for feature eligible.leader.replicas.version. "
                 "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version "
                 "level 23")
    _, out = update(state, {"eligible.leader.replicas.version": 1, MV: 23})
    assert out.response.error is Errors.NONE
    names = [record.name for _, record in out.records if isinstance(record, FeatureLevelRecord)]
    assert names == [MV, "eligible.leader.replicas.version"]  # Kafka's HashMap order of the two names


def test_enabling_elr_first_sets_a_cluster_min_insync_replicas() -> None:
    """``ConfigurationControlManager.updateFeatures``: ELR safety records before the feature's record."""
    state, out = update(manager(30, default_supported()), {"eligible.leader.replicas.version": 1})
    assert [type(record).__name__ for _, record in out.records] == ["ConfigRecord", "FeatureLevelRecord"]
    assert state.elr_enabled and dict(state.min_insync_configs) == {"": "1"}


def test_kraft_version_is_upgraded_by_the_raft_client_and_never_downgraded() -> None:
    state = manager(30, default_supported(), brokers={1: {MV: (7, 30), "kraft.version": (0, 1)}})
    state = evolve(state, finalized_features=state.finalized_features.set("kraft.version", 0))
    upgraded, out = update(state, {"kraft.version": 1})
    assert out.response.error is Errors.NONE and [type(r).__name__ for _, r in out.records] == ["NoOpRecord"]
    assert upgraded.finalized_features["kraft.version"] == 1
    _, out = update(upgraded, {"kraft.version": 0}, {"kraft.version": fc.SAFE_DOWNGRADE})
    refused(out, "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature.")


def test_kraft_version_upgrade_answers_what_the_raft_client_threw() -> None:
    """Not one of Kafka's tests; Kafka 4.3 ``FeatureControlManager.updateFeature`` calls ``upgradeKRaftVersion``: a
    kraft.version 0 Raft leader not yet sent UpdateRaftVoter by every voter throws InvalidUpdateVersionException, whose
    message fails the whole request; once they have, it upgrades (the NoOpRecord to wait on); the Raft client's
    NotLeaderException is not the manager's to answer (the controller fails over)."""
    state = manager(30, default_supported(), brokers={1: {MV: (7, 30), "kraft.version": (0, 1)}})
    state = evolve(state, finalized_features=state.finalized_features.set("kraft.version", 0))
    for updated, expected in (((client.FOLLOWER,), InvalidUpdateVersionError),
                              ((client.FOLLOWER, client.NEW_VOTER), None)):
        leader, now = client.upgradable_leader(updated)
        refusal: Optional[Exception] = None
        try:
            raft.step(leader, UpgradeKRaftVersion(epoch=leader.state.epoch, kraft_version=1), now)
        except InvalidUpdateVersionError as exc:
            refusal = exc
        assert type(refusal) is expected if expected else refusal is None
        request = fc.UpdateFeaturesRequest(updates=(fc.FeatureUpdate(feature="kraft.version", max_version_level=1,
                                                                     upgrade_type=fc.UPGRADE),))
        after, out = fc.update_features(state, request, raft_refusal=refusal)
        if expected is None:
            assert out.response.error is Errors.NONE and after.finalized_features["kraft.version"] == 1
        else:
            assert out.response == fc.UpdateFeaturesResponse(
                error=Errors.INVALID_UPDATE_VERSION, message=PREFIX + "Invalid upgrade of kraft.version to "
                "KRAFT_VERSION_1 because not all of the voters support it") and out.records == ()
    try:
        fc.update_features(state, request, raft_refusal=NotLeaderError("lost leadership"))
    except NotLeaderError:
        return
    raise AssertionError("a NotLeaderException was answered by the feature manager")
