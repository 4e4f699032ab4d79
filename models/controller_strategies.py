"""Public Hypothesis strategies for controller registration and DescribeCluster inputs.

Values are the reference's own types (``kraftspec.reference.controller_registration``,
``kraftspec.reference.describe_cluster``), small enough to shrink well.
"""

from __future__ import annotations

from hypothesis import strategies as st

from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.controller_registration import ControllerRegistration
from kraftspec.reference.describe_cluster import ClusterImage, DescribeClusterRequest
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.records import Endpoint

LISTENERS = ("PLAINTEXT", "CONTROLLER", "INTERNAL")

REGISTRATION_FAILURES = (
    Errors.NOT_CONTROLLER, Errors.UNKNOWN_CONTROLLER_ID, Errors.UNSUPPORTED_VERSION,
    Errors.REQUEST_TIMED_OUT, Errors.CLUSTER_AUTHORIZATION_FAILED,
)


def jitter_draws() -> st.SearchStrategy[float]:
    """The backoff's random draw in [0, 1)."""
    return st.floats(min_value=0.0, max_value=1.0, exclude_max=True, allow_nan=False)


def registration_failures() -> st.SearchStrategy[Errors]:
    """Error outcomes of a ControllerRegistration RPC (transport failures appear as REQUEST_TIMED_OUT)."""
    return st.sampled_from(REGISTRATION_FAILURES)


def endpoints() -> st.SearchStrategy[Endpoint]:
    """A listener endpoint on one of ``LISTENERS``."""
    return st.builds(Endpoint, name=st.sampled_from(LISTENERS),
                     host=st.sampled_from(("localhost", "h1", "broker-long-name")),
                     port=st.integers(1, 65535))


def _unique_listeners() -> st.SearchStrategy[tuple[Endpoint, ...]]:
    """Up to three endpoints with distinct listener names."""
    return st.lists(endpoints(), max_size=3, unique_by=lambda e: e.name).map(tuple)


def broker_registrations(broker_id: int) -> st.SearchStrategy[BrokerRegistration]:
    """A broker registration with random fencing, rack and listeners."""
    return st.builds(
        BrokerRegistration, broker_id=st.just(broker_id), epoch=st.integers(0, 1000),
        incarnation_id=st.just(f"b{broker_id}"), fenced=st.booleans(),
        in_controlled_shutdown=st.just(False), rack=st.one_of(st.none(), st.sampled_from(("r1", "rack-long"))),
        listeners=_unique_listeners(),
    )


def controller_registrations(controller_id: int) -> st.SearchStrategy[ControllerRegistration]:
    """A controller registration with a random incarnation and listeners."""
    return st.builds(ControllerRegistration, controller_id=st.just(controller_id),
                     incarnation_id=st.sampled_from(("incA", "incB", "incC")),
                     zk_migration_ready=st.just(False), listeners=_unique_listeners())


def cluster_images() -> st.SearchStrategy[ClusterImage]:
    """Up to 4 brokers (ids 1–4) and 3 controllers (ids 3000–3002), a Raft leader and an MV."""
    brokers = st.lists(st.integers(1, 4), unique=True, max_size=4).flatmap(
        lambda ids: st.tuples(*(broker_registrations(i) for i in ids)))
    controllers = st.lists(st.integers(3000, 3002), unique=True, max_size=3).flatmap(
        lambda ids: st.tuples(*(controller_registrations(i) for i in ids)))
    return st.builds(
        lambda b, c, leader,
        mv: ClusterImage(cluster_id="QtNwvtfVQ3GEFpzOmDEE-w", brokers=FrozenMap({r.broker_id: r for r in b}),
                                              controllers=FrozenMap({r.controller_id: r for r in c}),
                                              raft_leader_id=leader, metadata_version=mv),
        brokers, controllers, st.sampled_from((-1, 3000, 3001, 3002)), st.sampled_from((14, 15, 30)),
    )


def describe_cluster_requests() -> st.SearchStrategy[DescribeClusterRequest]:
    """Requests of any version with any endpoint type (including unknown values) and flags."""
    return st.builds(DescribeClusterRequest, version=st.integers(0, 2),
                     include_cluster_authorized_operations=st.booleans(),
                     endpoint_type=st.sampled_from((0, 1, 2, 3, 123, -1)), include_fenced_brokers=st.booleans())
