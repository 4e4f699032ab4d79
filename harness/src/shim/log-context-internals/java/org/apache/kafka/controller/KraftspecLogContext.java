package org.apache.kafka.controller;

import org.apache.kafka.common.utils.internals.LogContext;

/** The partition session's LogContext: {@code common.utils.internals.LogContext} (Kafka 4.4 on). */
final class KraftspecLogContext {
    private KraftspecLogContext() {
    }

    static LogContext of(String prefix) {
        return new LogContext(prefix);
    }
}
