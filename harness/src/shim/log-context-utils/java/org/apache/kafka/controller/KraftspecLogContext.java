package org.apache.kafka.controller;

import org.apache.kafka.common.utils.LogContext;

/** The partition session's LogContext: {@code common.utils.LogContext} (Kafka 4.3 and before). */
final class KraftspecLogContext {
    private KraftspecLogContext() {
    }

    static LogContext of(String prefix) {
        return new LogContext(prefix);
    }
}
