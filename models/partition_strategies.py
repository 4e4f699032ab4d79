"""Public Hypothesis strategies for partition states, broker views and change requests (rules §2).

Importable by other projects: ``from kraftspec.models.partition_strategies import partition_registrations``.
Every generated registration satisfies §2.6: ISR ⊆ replicas without duplicates, the leader in the ISR
or -1, the ELR disjoint from the ISR and inside the replicas.
"""

from __future__ import annotations

from hypothesis import strategies as st

from kraftspec.reference import metadata_version as mv
from kraftspec.reference.alter_partition import AlterPartitionPartition, AlterPartitionRequest, AlterPartitionTopic
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.partition import PartitionRegistration
from kraftspec.reference.partition_rules import RECOVERED, RECOVERING
from kraftspec.reference.records import NO_LEADER

MAX_BROKERS = 5

metadata_versions = st.sampled_from(sorted({mv.MINIMUM_4X, mv.MV_3_6_IV0, mv.MV_3_7_IV2, mv.MV_4_0_IV1,
                                            mv.LATEST_PRODUCTION}))
"""metadata.version levels where the partition rules differ (4.x range)."""


@st.composite
def partition_registrations(draw: st.DrawFn, max_replicas: int = 4, elr: bool = True) -> PartitionRegistration:
    """A valid partition: replicas from ids 0..MAX_BROKERS-1, an ordered ISR, leader in the ISR or -1."""
    replicas = tuple(draw(st.permutations(range(MAX_BROKERS)))[: draw(st.integers(1, max_replicas))])
    isr = tuple(r for r in replicas if draw(st.booleans()))
    if not isr and not elr:
        isr = replicas[:1]
    leader = draw(st.sampled_from(isr + (NO_LEADER,))) if isr else NO_LEADER
    rest = tuple(r for r in replicas if r not in isr)
    elr_members = tuple(sorted(r for r in rest if draw(st.booleans()))) if elr else ()
    last_known = (draw(st.sampled_from(replicas)),) if elr and leader == NO_LEADER and draw(st.booleans()) else ()
    return PartitionRegistration(
        replicas=replicas,
        isr=isr,
        elr=elr_members,
        last_known_elr=last_known,
        leader=leader,
        leader_recovery_state=draw(st.sampled_from((RECOVERED, RECOVERING))) if len(isr) <= 1 else RECOVERED,
        leader_epoch=draw(st.integers(0, 10)),
        partition_epoch=draw(st.integers(10, 20)),
    )


@st.composite
def broker_views(draw: st.DrawFn) -> FrozenMap[int, BrokerRegistration]:
    """Registrations for some of the ids 0..MAX_BROKERS-1, each fenced, shutting down or active."""
    regs = {}
    for b in range(MAX_BROKERS):
        state = draw(st.sampled_from(("active", "fenced", "shutting-down", "unregistered")))
        if state != "unregistered":
            regs[b] = BrokerRegistration(
                broker_id=b, epoch=100 + b, incarnation_id=f"incarnation-{b}",
                fenced=state == "fenced", in_controlled_shutdown=state == "shutting-down",
            )
    return FrozenMap(regs)


@st.composite
def alter_partition_requests(draw: st.DrawFn, topic_id: str, partition: PartitionRegistration) -> AlterPartitionRequest:
    """An AlterPartition for ``partition``, mostly from its leader at its epochs, sometimes stale or foreign."""
    requester = draw(st.sampled_from((partition.leader,) * 3 + partition.replicas))
    members = tuple(r for r in partition.replicas if draw(st.booleans())) or partition.replicas[:1]
    return AlterPartitionRequest(
        broker_id=requester,
        broker_epoch=100 + requester,
        topics=(AlterPartitionTopic(topic_id=topic_id, partitions=(AlterPartitionPartition(
            partition_index=0,
            leader_epoch=partition.leader_epoch + draw(st.sampled_from((0, 0, 0, -1, 1))),
            new_isr_with_epochs=tuple((r, draw(st.sampled_from((100 + r, 100 + r, -1, 99 + r)))) for r in members),
            partition_epoch=partition.partition_epoch + draw(st.sampled_from((0, 0, 0, -1, 1))),
            leader_recovery_state=draw(st.sampled_from((RECOVERED, RECOVERED, RECOVERING))),
        ),)),),
        version=draw(st.sampled_from((2, 3, 3))),
    )
