package org.apache.kafka.controller;

import org.apache.kafka.common.utils.Time;

import java.util.function.Supplier;

/**
 * Kafka's clock as the trace drives it (a MockTime that only the trace moves). One trace time unit is one
 * millisecond: {@link #NS_PER_UNIT} nanoseconds, the unit in which the harness also gives Kafka the session
 * timeout, so Kafka's {@code BrokerHeartbeatTracker.isExpired} (strict inequalities) decides exactly as the
 * reference's {@code session_expired} does on the trace's integers.
 */
final class KraftspecTraceTime implements Time {
    static final long NS_PER_UNIT = 1_000_000L;

    private long units;

    void set(long units) {
        this.units = units;
    }

    long units() {
        return units;
    }

    static long toNs(long units) {
        return Math.multiplyExact(units, NS_PER_UNIT);
    }

    static long toUnits(long ns) {
        if (ns % NS_PER_UNIT != 0) throw new IllegalStateException("a Kafka time of " + ns + " ns is not a whole trace unit");
        return ns / NS_PER_UNIT;
    }

    @Override
    public long milliseconds() {
        return units;
    }

    @Override
    public long nanoseconds() {
        return toNs(units);
    }

    @Override
    public void sleep(long ms) {
        throw new UnsupportedOperationException("the trace's clock does not sleep");
    }

    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        throw new UnsupportedOperationException("the trace's clock does not wait");
    }
}
