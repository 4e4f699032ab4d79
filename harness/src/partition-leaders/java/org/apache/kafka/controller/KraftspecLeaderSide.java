package org.apache.kafka.controller;

/** The partition leaders on the brokers, as this build serves them: Kafka's {@code kafka.cluster.Partition} ({@link PartitionLeaders}). */
final class KraftspecLeaderSide {
    private KraftspecLeaderSide() {
    }

    static PartitionLeaderSide open(ClusterControlManager clusterControl, ReplicationControlManager replicationControl,
                                    PartitionTraceIds ids) {
        return new PartitionLeaders(clusterControl, replicationControl, ids);
    }
}
