package org.apache.kafka.controller;

import kafka.server.AlterPartitionManager;
import kafka.server.DefaultAlterPartitionManager;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.common.NodeToControllerChannelManager;
import org.apache.kafka.server.util.KafkaScheduler;

/** A broker's AlterPartition manager ({@code kafka.server}: Scala core, Kafka 4.2 and 4.3), held for the {@code Partition}s it serves. */
final class KraftspecAlterPartitionManager {
    final AlterPartitionManager manager;

    /** Kafka's {@code DefaultAlterPartitionManager} over the harness's channel to the controller. */
    KraftspecAlterPartitionManager(NodeToControllerChannelManager channel, KafkaScheduler scheduler, Time time,
                                   int brokerId, long brokerEpoch) {
        manager = new DefaultAlterPartitionManager(channel, scheduler, time, brokerId, () -> brokerEpoch);
    }
}
