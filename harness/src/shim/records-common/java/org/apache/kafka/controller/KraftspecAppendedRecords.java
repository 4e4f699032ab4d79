package org.apache.kafka.controller;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.SimpleRecord;

/** The records a producer appends to a partition leader's log ({@code common.record}: Kafka 4.2). */
final class KraftspecAppendedRecords {
    private KraftspecAppendedRecords() {
    }

    /** {@code count} records in one batch. */
    static MemoryRecords of(int count) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) records[i] = new SimpleRecord(("r" + i).getBytes());
        return MemoryRecords.withRecords(Compression.NONE, records);
    }
}
