"""Section J scenarios (controller registration, DescribeCluster, kafka-cluster, admin bootstrap) and the
rules of §4.1–§4.4, each a plain function so the mutant tests can re-run them.

Reference functions are called through their modules (``cr.register_controller``), never imported by
name, so an applied mutant is what runs.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import pytest

import kraftspec.reference.admin_bootstrap as ab
import kraftspec.reference.cluster_tool as ct
import kraftspec.reference.controller_registration as cr
import kraftspec.reference.describe_cluster as dc
from kraftspec.reference.broker_registration import BrokerRegistration
from kraftspec.reference.errors import Errors
from kraftspec.reference.frozen import FrozenMap
from kraftspec.reference.records import Endpoint, RegisterControllerRecord


def java_row(values: list[str], widths: list[int]) -> str:
    """``printf`` of ``%-Ns`` columns separated by one space, ending with a newline."""
    return " ".join(v.ljust(w) for v, w in zip(values, widths)) + "\n"


def broker(broker_id: int, fenced: bool, host: str = "localhost", port: int = 9092, rack: str | None = None) -> BrokerRegistration:
    return BrokerRegistration(broker_id=broker_id, epoch=100 + broker_id, incarnation_id=f"inc{broker_id}", fenced=fenced, rack=rack,
                              listeners=(Endpoint(name="PLAINTEXT", host=host, port=port),))


def image(brokers: dict[int, BrokerRegistration], controllers: dict[int, cr.ControllerRegistration] | None = None,
          leader: int = -1, mv: int = 30) -> dc.ClusterImage:
    return dc.ClusterImage(cluster_id="QtNwvtfVQ3GEFpzOmDEE-w", brokers=FrozenMap(brokers), controllers=FrozenMap(controllers or {}), raft_leader_id=leader, metadata_version=mv)


class Raised:
    """What ``expect_error`` caught."""

    value: BaseException


@contextmanager
def expect_error(kind: type[BaseException]) -> Iterator[Raised]:
    """Like ``pytest.raises`` but failing with AssertionError, so a scenario re-run under a mutant fails
    the way ``tests/mutant_layers.scenario_failures`` counts."""
    raised = Raised()
    try:
        yield raised
    except kind as exc:
        raised.value = exc
    else:
        raise AssertionError(f"expected {kind.__name__}")


# ---------------------------------------------------------------- J 122: CRM.testRetransmitRegistration

def scenario_122_retransmit_registration() -> None:
    state = cr.ManagerState(node_id=1, incarnation_id="incA", listeners=(Endpoint(name="CONTROLLER", host="localhost", port=9093),))
    state, sent = cr.start(state)
    assert sent == ()  # MV still the minimum KRaft version: cannot register yet
    state, sent = cr.on_metadata_update(state, 15, False, None)  # learns 3.7-IV0
    assert len(sent) == 1 and sent[0].incarnation_id == "incA" and sent[0].controller_id == 1
    assert state.pending_rpcs == 1
    state, sent = cr.on_response(state, Errors.UNKNOWN_CONTROLLER_ID, now_ms=1000, jitter_draw=0.5)
    assert sent == () and state.failed_rpcs == 1 and state.pending_rpcs == 0
    assert state.resend_deadline_ms == 1100  # backoff(0) = 100 ms with factor 1.0
    assert cr.on_deadline(state, 1099)[1] == ()
    state, sent = cr.on_deadline(state, 1100)
    assert len(sent) == 1 and state.pending_rpcs == 1
    state, sent = cr.on_response(state, Errors.NONE, now_ms=1200, jitter_draw=0.5)
    assert sent == () and state.successful_rpcs == 1 and state.failed_rpcs == 0
    assert not state.registered  # success does not mark it registered: only the log does


# ---------------------------------------------------------------- J 124 / 125: AuthHelperTest

def scenario_124_unknown_endpoint_type() -> None:
    img = image({1: broker(1, False)})
    r1 = dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=1, endpoint_type=123), "PLAINTEXT")
    assert (r1.error, r1.error_message) == (Errors.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 123")
    assert (r1.nodes, r1.controller_id, r1.cluster_id) == ((), -1, "")
    r0 = dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=0, endpoint_type=123), "PLAINTEXT")
    assert (r0.error, r0.error_message) == (Errors.INVALID_REQUEST, "Unsupported endpoint type 123")


def scenario_125_unexpected_endpoint_type() -> None:
    img = image({}, {3000: cr.ControllerRegistration(controller_id=3000, incarnation_id="c", listeners=(Endpoint(name="CONTROLLER", host="h", port=1),))}, 3000)
    message = "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
    r1 = dc.describe_cluster(img, dc.Receiver.CONTROLLER, dc.DescribeClusterRequest(version=1, endpoint_type=1), "CONTROLLER")
    assert (r1.error, r1.error_message) == (Errors.MISMATCHED_ENDPOINT_TYPE, message)
    r0 = dc.describe_cluster(img, dc.Receiver.CONTROLLER, dc.DescribeClusterRequest(version=0, endpoint_type=1), "CONTROLLER")
    assert (r0.error, r0.error_message) == (Errors.INVALID_REQUEST, message)


# ---------------------------------------------------------------- J 127 / 128 / 130: ClusterToolTest

def scenario_127_list_endpoints_with_bootstrap_server() -> None:
    img = image({0: broker(0, False, port=51234)})
    response = dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=2), "PLAINTEXT")
    out = ct.list_endpoints(response.nodes, list_controller_endpoints=False, include_fenced_brokers=False)
    widths = [10, 9, 10, 10, 10, 15]
    expected = (java_row(["ID", "HOST", "PORT", "RACK", "STATE", "ENDPOINT_TYPE"], widths)
                + java_row(["0", "localhost", "51234", "null", "unfenced", "broker"], widths))
    assert out == expected


def scenario_128_list_endpoints_include_fenced() -> None:
    img = image({1: broker(1, True), 2: broker(2, False)})
    request = ab.describe_cluster_request(ab.BootstrapMode.SERVERS, version=2, include_fenced_brokers=True)
    response = dc.describe_cluster(img, dc.Receiver.BROKER, request, "PLAINTEXT")
    lines = ct.list_endpoints(response.nodes, False, True).splitlines()
    assert [line.split()[4] for line in lines[1:]] == ["fenced", "unfenced"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2"]


def scenario_130_include_fenced_with_bootstrap_controller() -> None:
    with expect_error(ct.ToolArgumentError) as info:
        ct.list_endpoints((), list_controller_endpoints=True, include_fenced_brokers=True)
    assert str(info.value) == "The option --include-fenced-brokers is only supported with --bootstrap-server option"


# ---------------------------------------------------------------- §4.4 further kafka-cluster facts

def rule_list_endpoints_controller_columns() -> None:
    """CTT.testListEndpointsWithBootstrapController: no STATE column; RACK present as ``null``."""
    img = image({}, {3000: cr.ControllerRegistration(controller_id=3000, incarnation_id="c", listeners=(Endpoint(name="CONTROLLER", host="localhost", port=9093),))}, 3000)
    response = dc.describe_cluster(img, dc.Receiver.CONTROLLER, ab.describe_cluster_request(ab.BootstrapMode.CONTROLLERS, 2, False), "CONTROLLER")
    out = ct.list_endpoints(response.nodes, list_controller_endpoints=True, include_fenced_brokers=False)
    widths = [10, 9, 10, 10, 15]
    assert out == (java_row(["ID", "HOST", "PORT", "RACK", "ENDPOINT_TYPE"], widths)
                   + java_row(["3000", "localhost", "9093", "null", "controller"], widths))


def rule_list_endpoints_widths_and_order() -> None:
    """Widths: longest host, longest non-null rack; no nodes → host 100, rack 10; rows ascending by id."""
    nodes = (dc.DescribeClusterNode(node_id=7, host="a-very-long-hostname", port=1, rack="rack-12345678901"), dc.DescribeClusterNode(node_id=2, host="h", port=2, rack=None))
    lines = ct.list_endpoints(nodes, False, False).splitlines(keepends=True)
    widths = [10, 20, 10, 16, 10, 15]
    assert lines[0] == java_row(["ID", "HOST", "PORT", "RACK", "STATE", "ENDPOINT_TYPE"], widths)
    assert lines[1] == java_row(["2", "h", "2", "null", "unfenced", "broker"], widths)
    assert lines[2] == java_row(["7", "a-very-long-hostname", "1", "rack-12345678901", "unfenced", "broker"], widths)
    assert ct.list_endpoints((), False, False) == java_row(["ID", "HOST", "PORT", "RACK", "STATE", "ENDPOINT_TYPE"], [10, 100, 10, 10, 10, 15])
    assert ct.list_endpoints((), False, True, "Attempted to write a non-default includeFencedBrokers at version 1") == \
        "Attempted to write a non-default includeFencedBrokers at version 1\n"


def rule_cluster_id_and_unregister_output() -> None:
    assert ct.cluster_id_output("QtNwvtfVQ3GEFpzOmDEE-w") == "Cluster ID: QtNwvtfVQ3GEFpzOmDEE-w\n"
    assert ct.cluster_id_output(None) == "No cluster ID found. The Kafka version is probably too old.\n"
    assert ct.unregister_output(3, Errors.NONE) == "Broker 3 is no longer registered.\n"
    assert ct.unregister_output(3, Errors.UNSUPPORTED_VERSION) == "The target cluster does not support the broker unregistration API.\n"
    with expect_error(RuntimeError):
        ct.unregister_output(3, Errors.BROKER_ID_NOT_REGISTERED)
    with expect_error(ct.ToolConnectionError):
        ct.check_connection_options("b:9092", "c:9093")
    with expect_error(ct.ToolConnectionError):
        ct.check_connection_options(None, None)
    ct.check_connection_options("b:9092", None)


# ---------------------------------------------------------------- §4.3 admin bootstrap

def rule_bootstrap_exactly_one() -> None:
    with expect_error(ab.ConfigError) as neither:
        ab.bootstrap_mode((), ())
    assert str(neither.value) == "You must set either bootstrap.servers or bootstrap.controllers"
    with expect_error(ab.ConfigError) as both:
        ab.bootstrap_mode(("b:9092",), ("c:9093",))
    assert str(both.value) == "You cannot set both bootstrap.servers and bootstrap.controllers"
    assert ab.bootstrap_mode(("b:9092",), ()) is ab.BootstrapMode.SERVERS
    assert ab.bootstrap_mode((), ("c:9093",)) is ab.BootstrapMode.CONTROLLERS


def rule_admin_describe_cluster_request() -> None:
    assert ab.describe_cluster_request(ab.BootstrapMode.SERVERS, 2, True).endpoint_type == 1
    assert ab.describe_cluster_request(ab.BootstrapMode.CONTROLLERS, 2, False).endpoint_type == 2
    with expect_error(ab.IllegalArgumentError) as info:
        ab.describe_cluster_request(ab.BootstrapMode.CONTROLLERS, 2, True)
    assert str(info.value) == "Cannot request fenced brokers from controller endpoint"
    assert ab.falls_back_to_metadata(ab.BootstrapMode.SERVERS, False, False)
    assert not ab.falls_back_to_metadata(ab.BootstrapMode.SERVERS, True, False)
    assert not ab.falls_back_to_metadata(ab.BootstrapMode.SERVERS, False, True)
    assert not ab.falls_back_to_metadata(ab.BootstrapMode.CONTROLLERS, False, False)
    assert ab.admin_api_allowed(ab.BootstrapMode.CONTROLLERS, "CreateTopics")
    assert not ab.admin_api_allowed(ab.BootstrapMode.CONTROLLERS, "ListGroups")
    assert ab.admin_api_allowed(ab.BootstrapMode.SERVERS, "ListGroups")


def rule_serializer_refuses_missing_fields() -> None:
    dc.check_request_serializable(dc.DescribeClusterRequest(version=0))
    with expect_error(dc.UnsupportedVersionError) as endpoint:
        dc.check_request_serializable(dc.DescribeClusterRequest(version=0, endpoint_type=2))
    assert str(endpoint.value) == "Attempted to write a non-default endpointType at version 0"
    with expect_error(dc.UnsupportedVersionError) as fenced:
        dc.check_request_serializable(dc.DescribeClusterRequest(version=1, include_fenced_brokers=True))
    assert str(fenced.value) == "Attempted to write a non-default includeFencedBrokers at version 1"


# ---------------------------------------------------------------- §4.1 controller side, §4.2

def rule_register_controller() -> None:
    request = cr.ControllerRegistrationRequest(controller_id=3000, incarnation_id="incA", listeners=(Endpoint(name="CONTROLLER", host="h", port=9093),))
    response, records = cr.register_controller(request, mv=14, is_active=True)
    # the response carries the error code's own text (ControllerRegistrationRequest.getErrorResponse), not the
    # exception's "The current MetadataVersion is too old to support controller registrations."
    assert (response.error, response.message, records) == (
        Errors.UNSUPPORTED_VERSION, "The version of API is not supported.", ())
    assert cr.register_controller(request, mv=15, is_active=False)[0].error == Errors.NOT_CONTROLLER
    assert cr.register_controller(request, mv=15, is_active=True, authorized=False)[0].error == Errors.CLUSTER_AUTHORIZATION_FAILED
    response, records = cr.register_controller(request, mv=15, is_active=True)
    assert response.error == Errors.NONE
    assert records == (RegisterControllerRecord(controller_id=3000, incarnation_id="incA", zk_migration_ready=False, end_points=request.listeners, features=(), version=0),)
    controllers = cr.replay_register_controller(FrozenMap(), records[0])
    newer = cr.replay_register_controller(controllers, RegisterControllerRecord(controller_id=3000, incarnation_id="incB"))
    assert newer[3000].incarnation_id == "incB" and len(newer) == 1


def rule_stale_incarnation_triggers_reregistration() -> None:
    """registeredInLog only when the log's registration carries the running incarnation (§4.1)."""
    state = cr.ManagerState(node_id=1, incarnation_id="incB", metadata_version=15, channel_started=True)
    state, sent = cr.on_metadata_update(state, None, True, cr.ControllerRegistration(controller_id=1, incarnation_id="incB"))
    assert state.registered and sent == ()
    state, sent = cr.on_metadata_update(state, None, True, cr.ControllerRegistration(controller_id=1, incarnation_id="incA"))
    assert not state.registered and len(sent) == 1 and sent[0].incarnation_id == "incB"


def rule_backoff_bounds() -> None:
    assert [cr.backoff_ms(n, 0.5) for n in range(4)] == [100, 200, 400, 800]
    assert cr.backoff_ms(0, 0.0) == 98 and cr.backoff_ms(0, 0.999999) == 101
    assert cr.backoff_ms(11, 0.0) == 117600 and cr.backoff_ms(40, 0.999) == 120000


def rule_appendix_b12_describe_cluster_nodes() -> None:
    img = image({1: broker(1, True), 2: broker(2, False), 3: broker(3, False), 4: broker(4, True)},
                {3000: cr.ControllerRegistration(controller_id=3000, incarnation_id="c0", listeners=(Endpoint(name="CONTROLLER", host="h0", port=1),)),
                 3001: cr.ControllerRegistration(controller_id=3001, incarnation_id="c1", listeners=(Endpoint(name="CONTROLLER", host="h1", port=2),))}, leader=3002)
    picks = {dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=2), "PLAINTEXT", chooser=i).controller_id for i in range(4)}
    assert picks == {2, 3}  # a random *unfenced* broker
    v1 = dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=1), "PLAINTEXT")
    assert [n.node_id for n in v1.nodes] == [2, 3]
    v2 = dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=2, include_fenced_brokers=True), "PLAINTEXT")
    assert [(n.node_id, n.is_fenced) for n in v2.nodes] == [(1, True), (2, False), (3, False), (4, True)]
    ctl = dc.describe_cluster(img, dc.Receiver.CONTROLLER, dc.DescribeClusterRequest(version=2, endpoint_type=2), "CONTROLLER")
    assert [n.node_id for n in ctl.nodes] == [3000, 3001] and ctl.controller_id == -1  # leader 3002 not listed
    assert all(n.rack is None and not n.is_fenced for n in ctl.nodes) and ctl.endpoint_type == 2
    old = dc.describe_cluster(image({}, mv=14), dc.Receiver.CONTROLLER, dc.DescribeClusterRequest(version=2, endpoint_type=2), "CONTROLLER")
    assert old.error == Errors.UNSUPPORTED_VERSION
    denied = dc.describe_cluster(img, dc.Receiver.CONTROLLER, dc.DescribeClusterRequest(version=2, endpoint_type=2), "CONTROLLER",
                                 dc.Authorization(alter_cluster=False))
    assert denied.error == Errors.CLUSTER_AUTHORIZATION_FAILED
    ops = dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=2, include_cluster_authorized_operations=True),
                              "PLAINTEXT", dc.Authorization(describe_cluster=False, authorized_operations=1234))
    assert ops.cluster_authorized_operations == 0
    assert dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=2), "PLAINTEXT").cluster_authorized_operations == -(2**31)


# ---------------------------------------------------------------- rules Kafka itself showed (tests/test_kafka_controller.py)

def rule_kafka_4x_registration() -> None:
    """Kafka 4.3 ``ClusterControlManager.registerController`` writes ZkMigrationReady false whatever the request
    says (3.9 copied it); responses carry the error code's own text, success ``""``; a registration's endpoints
    and features are maps keyed by name (``ControllerRegistration.Builder``: the last of a name, any order)."""
    listeners = (Endpoint(name="PLAINTEXT", host="h", port=1), Endpoint(name="CONTROLLER", host="h", port=2), Endpoint(name="PLAINTEXT", host="h", port=3))
    request = cr.ControllerRegistrationRequest(controller_id=3000, incarnation_id="incA", zk_migration_ready=True, listeners=listeners)
    response, records = cr.register_controller(request, mv=30, is_active=True)
    assert (response.error, response.message) == (Errors.NONE, "") and records[0].zk_migration_ready is False
    assert cr.register_controller(request, mv=30, is_active=True, behaviour=cr.KAFKA_3_9)[1][0].zk_migration_ready
    assert cr.register_controller(request, mv=30, is_active=False)[0].message == "This is not the correct controller for this cluster."
    assert cr.register_controller(request, mv=30, is_active=True, authorized=False)[0].message == "Cluster authorization failed."
    registered = cr.replay_register_controller(FrozenMap(), records[0])[3000]
    assert registered.listeners == (Endpoint(name="CONTROLLER", host="h", port=2), Endpoint(name="PLAINTEXT", host="h", port=3))


def rule_due_resend_fires_before_the_response() -> None:
    """The manager's event queue runs a due deferred resend before a queued response (``KafkaEventQueue``): a
    success handled at or after the deadline leaves no resend scheduled."""
    state = cr.ManagerState(node_id=1, incarnation_id="inc", metadata_version=30, channel_started=True,
                            pending_rpcs=1, failed_rpcs=1, resend_deadline_ms=100)
    after, sent = cr.on_response(state, Errors.NONE, 100, 0.5)
    assert (after.resend_deadline_ms, after.pending_rpcs, sent) == (None, 0, ())
    before, _ = cr.on_response(state, Errors.NONE, 99, 0.5)
    assert before.resend_deadline_ms == 100


def rule_describe_cluster_as_kafka_answers() -> None:
    """Kafka lists nodes in its image's HashMap order (stated as ``order``), reports only the CLUSTER resource's
    operations, and a controller's ALTER denial names the request."""
    img = image({1: broker(1, False), 2: broker(2, False)},
                {c: cr.ControllerRegistration(controller_id=c, incarnation_id="c", listeners=(Endpoint(name="CONTROLLER", host="h", port=c),)) for c in (1, 3000, 3001)})
    ctl = dc.describe_cluster(img, dc.Receiver.CONTROLLER, dc.DescribeClusterRequest(version=1, endpoint_type=2), "CONTROLLER",
                              order=(3000, 3001, 1))
    assert [n.node_id for n in ctl.nodes] == [3000, 3001, 1]
    ops = dc.describe_cluster(img, dc.Receiver.BROKER, dc.DescribeClusterRequest(version=2, include_cluster_authorized_operations=True),
                              "PLAINTEXT", dc.Authorization(authorized_operations=0xFFFF))
    assert ops.cluster_authorized_operations == 0x1FA0
    denied = dc.describe_cluster(img, dc.Receiver.CONTROLLER, dc.DescribeClusterRequest(version=1, endpoint_type=2), "CONTROLLER",
                                 dc.Authorization(alter_cluster=False))
    assert denied.error_message == "Request <request> needs ALTER permission."


SCENARIOS: dict[str, Callable[[], None]] = {
    "122": scenario_122_retransmit_registration,
    "124": scenario_124_unknown_endpoint_type,
    "125": scenario_125_unexpected_endpoint_type,
    "127": scenario_127_list_endpoints_with_bootstrap_server,
    "128": scenario_128_list_endpoints_include_fenced,
    "130": scenario_130_include_fenced_with_bootstrap_controller,
    "controller-columns": rule_list_endpoints_controller_columns,
    "widths-order": rule_list_endpoints_widths_and_order,
    "cluster-id-unregister": rule_cluster_id_and_unregister_output,
    "bootstrap-exactly-one": rule_bootstrap_exactly_one,
    "admin-describe-cluster": rule_admin_describe_cluster_request,
    "serializer": rule_serializer_refuses_missing_fields,
    "register-controller": rule_register_controller,
    "stale-incarnation": rule_stale_incarnation_triggers_reregistration,
    "backoff": rule_backoff_bounds,
    "appendix-b12": rule_appendix_b12_describe_cluster_nodes,
    "kafka-4x-registration": rule_kafka_4x_registration,
    "due-resend-first": rule_due_resend_fires_before_the_response,
    "describe-cluster-as-kafka": rule_describe_cluster_as_kafka_answers,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(name: str) -> None:
    SCENARIOS[name]()
