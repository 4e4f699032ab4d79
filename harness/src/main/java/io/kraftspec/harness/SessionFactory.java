package io.kraftspec.harness;

import com.fasterxml.jackson.databind.JsonNode;

/** Builds a {@link Session} for a component from a trace's {@code initial} object and the open request. */
@FunctionalInterface
public interface SessionFactory {
    Session open(JsonNode initial, JsonNode request) throws Exception;
}
