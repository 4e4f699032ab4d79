package io.kraftspec.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * One Kafka-backed instance of a kraftspec component, built from a trace's initial state and driven one
 * trace input at a time.
 */
public interface Session {
    /**
     * Applies one trace input (its JSON, {@code action} included) to Kafka's classes and returns what Kafka
     * produced in the trace format's vocabulary: {@code {"output": {"response": ..., "records": [...]}}}.
     * An exception thrown by Kafka's code propagates; the server reports it as Kafka refusing the input.
     */
    ObjectNode step(JsonNode input) throws Exception;

    /** Kafka's observable state after the last step, as a trace's {@code post} object. */
    ObjectNode post() throws Exception;

    /** Releases what the session holds outside the heap (log files of a broker-side partition, say); the server calls
     * it when the session is replaced or its run is over. */
    default void close() {
    }
}
