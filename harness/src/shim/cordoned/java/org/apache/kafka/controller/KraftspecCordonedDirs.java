package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;

import java.util.List;

/** Cordoned log directories (KIP-1066) in a RegisterBrokerRecord: Kafka 4.3 and later. */
final class KraftspecCordonedDirs {
    private KraftspecCordonedDirs() {
    }

    static void set(RegisterBrokerRecord record, List<Uuid> dirs) {
        record.setCordonedLogDirs(dirs);
    }
}
