package org.apache.kafka.controller;

import org.apache.kafka.common.utils.AppInfoParser;

/** The partition leaders on the brokers, as this build serves them: none ({@link NoPartitionLeaders}). */
final class KraftspecLeaderSide {
    private KraftspecLeaderSide() {
    }

    static PartitionLeaderSide open(ClusterControlManager clusterControl, ReplicationControlManager replicationControl,
                                    PartitionTraceIds ids) {
        return new NoPartitionLeaders(AppInfoParser.getVersion());
    }
}
