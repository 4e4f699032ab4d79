package org.apache.kafka.controller;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.common.NodeToControllerChannelManager;
import org.apache.kafka.server.partition.AlterPartitionManager;
import org.apache.kafka.server.partition.DefaultAlterPartitionManager;
import org.apache.kafka.server.util.KafkaScheduler;

/** A broker's AlterPartition manager ({@code org.apache.kafka.server.partition}: Kafka 4.4 on), held for the {@code Partition}s it serves. */
final class KraftspecAlterPartitionManager {
    final AlterPartitionManager manager;

    /** Kafka's {@code DefaultAlterPartitionManager} over the harness's channel to the controller (4.4's keeps no clock). */
    KraftspecAlterPartitionManager(NodeToControllerChannelManager channel, KafkaScheduler scheduler, Time time,
                                   int brokerId, long brokerEpoch) {
        manager = new DefaultAlterPartitionManager(channel, scheduler, brokerId, () -> brokerEpoch);
    }
}
