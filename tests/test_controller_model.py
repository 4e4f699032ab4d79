"""The controller-registration state machine, the case it was built for, and DescribeCluster properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

import kraftspec.models.controller as model
import kraftspec.reference.controller_registration as cr
import kraftspec.reference.describe_cluster as dc
from kraftspec.models.controller_strategies import cluster_images, describe_cluster_requests
from kraftspec.reference.errors import Errors


def test_state_machine() -> None:
    run_state_machine_as_test(
        model.ControllerRegistrationMachine,
        settings=settings(max_examples=150, stateful_step_count=40, deadline=None, derandomize=True, database=None),
    )


def delayed_old_incarnation_wins() -> model.World:
    """Incarnation inc0 sends, restarts as inc1; inc1's record is written, then inc0's delayed request is,
    and inc1 learns it while its own RPC is still pending."""
    world = model.World(manager=model.new_manager("inc0"), mv=15, publish_mv=True)
    world.manager, sent = cr.start(world.manager)
    model.send(world, sent)
    model.publish(world)
    world.manager = model.new_manager("inc1")
    world.publish_registration = world.publish_mv = True
    world.manager, sent = cr.start(world.manager)
    model.publish(world)
    model.handle_request(world, 1, respond=True)  # inc1's registration
    model.handle_request(world, 0, respond=True)  # inc0's delayed registration replaces it
    model.publish(world)
    assert not world.manager.registered and world.manager.pending_rpcs == 1
    model.deliver_response(world, 0, 0.5)  # inc1's success: no resend, registered stays False
    return world


def test_kafka_events_alone_leave_the_stale_registration() -> None:
    """Kafka 4.3 only re-sends on metadata updates, the resend timer and start: here none follows, so the
    log keeps inc0 while inc1 runs, until the self-check (``maybe_send``) re-registers."""
    world = delayed_old_incarnation_wins()
    assert world.log[1].incarnation_id == "inc0" and world.manager.resend_deadline_ms is None
    settled = model.settle(world)
    assert settled.log[1].incarnation_id == "inc1" and settled.manager.registered


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(image=cluster_images(), request=describe_cluster_requests(), chooser=st.integers(0, 7))
def test_describe_cluster_properties(image: dc.ClusterImage, request: dc.DescribeClusterRequest, chooser: int) -> None:
    for receiver, listener in ((dc.Receiver.BROKER, "PLAINTEXT"), (dc.Receiver.CONTROLLER, "CONTROLLER")):
        response = dc.describe_cluster(image, receiver, request, listener, chooser=chooser)
        if response.error != Errors.NONE:
            assert response.nodes == () and response.controller_id == -1 and response.cluster_id == ""
            continue
        ids = [n.node_id for n in response.nodes]
        assert ids == sorted(ids)
        assert response.controller_id == -1 or response.controller_id in ids
        if receiver is dc.Receiver.BROKER:
            assert request.include_fenced_brokers or not any(n.is_fenced for n in response.nodes)
            if response.controller_id != -1:
                assert not image.brokers[response.controller_id].fenced
        else:
            assert set(ids) <= set(image.controllers) and all(n.rack is None for n in response.nodes)
