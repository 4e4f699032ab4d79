package org.apache.kafka.controller;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;

/** The records a producer appends to a partition leader's log ({@code common.record.internal}: Kafka 4.3 on). */
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
