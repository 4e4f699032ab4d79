package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The partition leaders on the brokers, as the partition session drives them: Kafka's broker-side
 * {@code kafka.cluster.Partition} ({@link PartitionLeaders}) where the release's broker-side classes are served to
 * the harness (4.2 and later), {@link NoPartitionLeaders} before.
 */
interface PartitionLeaderSide extends AutoCloseable {
    /** Applies a broker-side input of the trace; its response, or null for none. */
    ObjectNode step(String action, JsonNode input) throws Exception;

    /** The post-state's {@code leaders}. */
    ObjectNode post();

    /** The trace's clock, before a broker event. */
    void setClock(long now);

    /** A broker process restarted: its leader states and AlterPartition paths are gone. */
    void dropBroker(int brokerId);

    @Override
    void close();
}
