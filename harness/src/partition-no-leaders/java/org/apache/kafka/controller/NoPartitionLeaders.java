package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.kraftspec.harness.HarnessError;

/**
 * The leader side on Kafka 3.9 to 4.1: not served. Their broker-side partition ({@code kafka.cluster.Partition},
 * {@code Replica}, {@code PartitionState}) is Scala with other constructors and collection types, which the harness
 * does not drive; a trace with leader-side inputs or initial leaders is not expressible there, and the post-state
 * has no leaders.
 */
final class NoPartitionLeaders implements PartitionLeaderSide {
    private final String version;

    NoPartitionLeaders(String version) {
        this.version = version;
    }

    @Override
    public ObjectNode step(String action, JsonNode input) {
        throw new HarnessError(action + ": the harness drives the partition leader (kafka.cluster.Partition) on "
            + "Kafka 4.2 and later only, not on " + version);
    }

    @Override
    public ObjectNode post() {
        return PartitionSession.JSON.createObjectNode();
    }

    @Override
    public void setClock(long now) {
    }

    @Override
    public void dropBroker(int brokerId) {
    }

    @Override
    public void close() {
    }
}
