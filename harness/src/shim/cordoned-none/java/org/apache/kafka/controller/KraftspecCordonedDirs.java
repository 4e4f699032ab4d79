package org.apache.kafka.controller;

import io.kraftspec.harness.HarnessError;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;

import java.util.List;

/** Cordoned log directories (KIP-1066) in a RegisterBrokerRecord: Kafka before 4.3 has none. */
final class KraftspecCordonedDirs {
    private KraftspecCordonedDirs() {
    }

    static void set(RegisterBrokerRecord record, List<Uuid> dirs) {
        if (!dirs.isEmpty()) throw new HarnessError("cordoned log directories: Kafka before 4.3 registers none");
    }
}
