"""A Hypothesis state machine over several brokers and one active controller, checking the spec's invariants.

Rules have the reference's names (``register``, ``heartbeat``, ``controlled_shutdown``,
``unclean_restart``, ``unregister``, ``fence_stale_broker``, ``update_features``, ``failover``, ``advance_clock``). The
invariants are those of ``spec/BrokerLifecycle.tla``, computed from the model's own bookkeeping
(its own session clock and an independent replay of every record written), never by asking the
reference's rule functions, so a wrong rule is caught rather than mirrored.

Use from another suite: ``TestBrokerLifecycle = BrokerLifecycleMachine.TestCase``.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kraftspec.models.broker_strategies import (BROKER_IDS, MODEL_CONTROLLER_FEATURES, SESSION_TIMEOUT, directory_of,
                                                registration_request, running_cluster, update_features_requests)
from kraftspec.reference import broker, feature_control
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap, evolve
from kraftspec.reference.records import RegisterBrokerRecord


ENVIRONMENT_RULES = frozenset({"advance_clock", "failover"})
"""Rules that move the environment, named for what happens rather than after a reference rule: the clock, and a
controller failover (``deactivate`` then ``activate``)."""


class BrokerLifecycleMachine(RuleBasedStateMachine):
    """Brokers registering, heartbeating in any state, restarting, shutting down, and a controller failing over."""

    def __init__(self) -> None:
        super().__init__()
        self.control, log = running_cluster()
        supported = FrozenMap(MODEL_CONTROLLER_FEATURES)
        self.control = evolve(self.control, controller_features=supported)
        self.now = 0
        self.incarnation: dict[int, int] = {b: 1 for b in BROKER_IDS}
        # the model's own session clock, (id, epoch) -> last contact: every broker heartbeated at time 0
        self.contacts: dict[tuple[int, int], int] = {(b, r.epoch): 0 for b, r in self.control.brokers.items()}
        self.register_offset: dict[int, int] = {}
        self.highest_epoch: dict[int, int] = {b: r.epoch for b, r in self.control.brokers.items()}
        self.shut_down: set[int] = set()
        self.partition_epochs = {key: (p.leader_epoch, p.partition_epoch) for key, p in self.control.partitions.items()}
        # an independent image: an inactive controller that only replays the records written, as a standby does
        self.image = broker.deactivate(broker.initial_state(self.control.cluster_id, self.control.metadata_version,
                                                            controller_features=dict(supported)))
        for offset, record in log:
            self.image = broker.replay(self.image, record, offset)
        for offset, record in log:
            if isinstance(record, RegisterBrokerRecord):
                self.register_offset[record.broker_id] = offset

    # --- helpers --------------------------------------------------------------------------------

    def _live(self, broker_id: int, epoch: int) -> bool:
        """Live by the model's clock: heard from within the session timeout (or "in the future")."""
        contact = self.contacts.get((broker_id, epoch))
        return contact is not None and (self.now - contact <= SESSION_TIMEOUT or self.now <= contact)

    def _written(self, records: broker.Written) -> None:
        for offset, record in records:
            self.image = broker.replay(self.image, record, offset)
            if isinstance(record, RegisterBrokerRecord):
                self.register_offset[record.broker_id] = offset

    def _register(self, broker_id: int, incarnation: int, previous_epoch: int, highest_metadata_version: int = 30) -> None:
        before = self.control.brokers.get(broker_id)
        request = registration_request(broker_id, incarnation, previous_epoch, highest_metadata_version)
        self.control, out = broker.register_broker(self.control, request, self.now)
        if out.response.error is not Errors.NONE:
            return
        if before is not None and before.incarnation_id != request.incarnation_id:
            assert not self._live(broker_id, before.epoch), (
                f"broker {broker_id}: incarnation {request.incarnation_id} took over while incarnation "
                f"{before.incarnation_id}'s session (epoch {before.epoch}) was live")
        epoch = out.response.broker_epoch
        assert epoch >= self.highest_epoch.get(broker_id, -1), f"broker {broker_id}'s epoch went back to {epoch}"
        if before is not None and before.incarnation_id != request.incarnation_id:
            assert epoch > before.epoch, f"broker {broker_id}'s new incarnation reuses epoch {epoch}"
        self.highest_epoch[broker_id] = epoch
        self.incarnation[broker_id] = incarnation
        self.shut_down.discard(broker_id)
        self._written(out.records)

    def _heartbeat(self, broker_id: int, epoch: int, offset: int, want_fence: bool, want_shut_down: bool,
                   offline_log_dirs: tuple[str, ...] = ()) -> None:
        before = self.control.brokers.get(broker_id)
        if before is not None and before.epoch == epoch and before.in_controlled_shutdown:
            want_shut_down = True  # a broker never retracts a controlled shutdown (BrokerLifecycleManager)
        self.contacts[(broker_id, epoch)] = self.now  # every heartbeat refreshes its (id, epoch) session
        request = broker.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch,
                                                current_metadata_offset=offset, want_fence=want_fence,
                                                want_shut_down=want_shut_down, offline_log_dirs=offline_log_dirs)
        self.control, out = broker.heartbeat(self.control, request, self.now)
        self._written(out.records)
        if out.response.error is not Errors.NONE:
            return
        after = self.control.brokers[broker_id]
        if before is not None and before.fenced and not after.fenced:
            assert offset >= self.register_offset[broker_id], (
                f"broker {broker_id} unfenced at reported offset {offset} before reaching its "
                f"RegisterBrokerRecord at {self.register_offset[broker_id]}")
        if out.response.should_shut_down:
            self.shut_down.add(broker_id)
        elif not out.response.is_fenced:
            self.shut_down.discard(broker_id)

    # --- rules ----------------------------------------------------------------------------------

    @rule(broker_id=st.sampled_from(BROKER_IDS))
    def register_broker(self, broker_id: int) -> None:
        """A broker (re-)registers with the incarnation it runs (an amendment when already registered)."""
        self._register(broker_id, self.incarnation[broker_id], -1)

    @rule(broker_id=st.sampled_from(BROKER_IDS), clean=st.booleans(), highest=st.sampled_from((29, 30, 30, 31)))
    def register_broker_after_unclean_restart(self, broker_id: int, clean: bool, highest: int) -> None:
        """The process restarts with a new incarnation (maybe another Kafka version: it reads metadata.version up to
        ``highest``); a clean one reports its previous broker epoch."""
        existing = self.control.brokers.get(broker_id)
        previous = existing.epoch if (clean and existing is not None) else -1
        self._register(broker_id, self.incarnation[broker_id] + 1, previous, highest)

    @rule(data=st.data())
    def update_features(self, data: st.DataObject) -> None:
        """An administrator changes feature levels (§1.11): any upgrade type, sometimes validate-only."""
        request = data.draw(update_features_requests(dict(self.control.finalized_features)), label="request")
        before = dict(self.control.finalized_features)
        self.control, out = feature_control.update_features(self.control, request)
        self._written(out.records)
        if out.response.error is not Errors.NONE or request.validate_only:
            assert not out.records, f"{request} wrote records although it answered {out.response}"
            return
        for update in {u.feature: u for u in request.updates}.values():
            # a level goes down only when the request asked for a downgrade
            assert update.max_version_level >= before.get(update.feature, 0) or update.upgrade_type in (
                feature_control.SAFE_DOWNGRADE, feature_control.UNSAFE_DOWNGRADE), f"{update} lowered the level"

    @rule(data=st.data(), broker_id=st.sampled_from(BROKER_IDS), want_fence=st.booleans(), want_shut_down=st.booleans())
    def heartbeat(self, data: st.DataObject, broker_id: int, want_fence: bool, want_shut_down: bool) -> None:
        """A heartbeat in any state: current or stale epoch, any offset up to the log end."""
        registration = self.control.brokers.get(broker_id)
        epochs = sorted({e for (b, e) in self.contacts if b == broker_id}
                        | ({registration.epoch} if registration else {0}))
        epoch = data.draw(st.sampled_from(epochs), label="epoch")
        offset = data.draw(st.integers(-1, self.control.next_offset), label="offset")
        self._heartbeat(broker_id, epoch, offset, want_fence, want_shut_down)

    @precondition(lambda self: bool(self.control.brokers))
    @rule(data=st.data())
    def heartbeat_with_a_log_dir_offline(self, data: st.DataObject) -> None:
        """A registered broker's disk fails: its heartbeat reports the directory offline (§1.5 step 7)."""
        broker_id = data.draw(st.sampled_from(sorted(self.control.brokers)), label="broker")
        self._heartbeat(broker_id, self.control.brokers[broker_id].epoch, self.control.next_offset, False, False,
                        offline_log_dirs=(directory_of(broker_id),))

    @precondition(lambda self: bool(self.control.brokers))
    @rule(data=st.data())
    def heartbeat_to_shut_down(self, data: st.DataObject) -> None:
        """A registered, caught-up broker asks for a controlled shutdown."""
        broker_id = data.draw(st.sampled_from(sorted(self.control.brokers)), label="broker")
        self._heartbeat(broker_id, self.control.brokers[broker_id].epoch, self.control.next_offset, False, True)

    @rule(broker_id=st.sampled_from(BROKER_IDS))
    def unregister_broker(self, broker_id: int) -> None:
        self.control, out = broker.unregister_broker(self.control, broker_id)
        if out.response.error is Errors.NONE:
            self.shut_down.discard(broker_id)
        self._written(out.records)

    @rule()
    def fence_stale_broker(self) -> None:
        self.control, out = broker.fence_stale_broker(self.control, self.now)
        self._written(out.records)

    @rule()
    def failover(self) -> None:
        """A new active controller: soft state rebuilt; only unfenced brokers get a session (4.1+)."""
        self.control = broker.activate(broker.deactivate(self.control), self.now)
        self.contacts = {(b, r.epoch): self.now for b, r in self.control.brokers.items() if not r.fenced}

    @rule(ticks=st.integers(1, 2 * SESSION_TIMEOUT))
    def advance_clock(self, ticks: int) -> None:
        self.now += ticks

    @rule(records=st.integers(1, 5))
    def log_advanced(self, records: int) -> None:
        """NoOpRecords and other components' writes move the log end."""
        self.control = broker.log_advanced(self.control, self.control.next_offset + records)

    # --- invariants (the spec's) ----------------------------------------------------------------

    @invariant()
    def only_active_brokers_lead(self) -> None:
        for key, partition in self.control.partitions.items():
            if partition.leader != -1:
                registration = self.control.brokers.get(partition.leader)
                assert registration is not None and not registration.fenced and \
                    not registration.in_controlled_shutdown, f"{key} is led by {registration or partition.leader}"

    @invariant()
    def leader_in_isr(self) -> None:
        for key, partition in self.control.partitions.items():
            assert partition.isr, f"{key} has an empty ISR without ELR"
            assert set(partition.isr) <= set(partition.replicas), f"{key}: ISR {partition.isr} not in replicas"
            assert partition.leader == -1 or partition.leader in partition.isr, f"{key}: leader outside the ISR"

    @invariant()
    def shutdown_now_leads_nothing(self) -> None:
        for broker_id in self.shut_down:
            assert all(p.leader != broker_id for p in self.control.partitions.values()), \
                f"broker {broker_id} was granted SHUTDOWN_NOW but leads a partition"

    @invariant()
    def partition_epochs_grow(self) -> None:
        for key, partition in self.control.partitions.items():
            leader_epoch, partition_epoch = self.partition_epochs[key]
            assert partition.leader_epoch >= leader_epoch and partition.partition_epoch >= partition_epoch
            assert partition.leader_epoch == leader_epoch or partition.partition_epoch > partition_epoch
            self.partition_epochs[key] = (partition.leader_epoch, partition.partition_epoch)

    @invariant()
    def every_registered_broker_reads_the_finalized_levels(self) -> None:
        """Computed from the replayed image: each registered broker's ranges hold every finalized level (a broker
        that does not list a feature reads only level 0); kraft.version is the Raft client's, not in the log."""
        for broker_id, registration in self.image.brokers.items():
            ranges = {f.name: (f.min_supported, f.max_supported) for f in registration.features}
            for name, level in self.image.finalized_features.items():
                low, high = ranges.get(name, (0, 0))
                assert name == "kraft.version" or level == 0 or low <= level <= high, (
                    f"{name} is finalized at {level}, which broker {broker_id} (range {low}-{high}) cannot read")

    @invariant()
    def log_replays_to_the_same_image(self) -> None:
        """Replaying every record written, from an empty image, gives the controller's hard state."""
        assert self.image.brokers == self.control.brokers
        assert self.image.register_offsets == self.control.register_offsets
        assert self.image.partitions == self.control.partitions
