package io.kraftspec.harness;

import com.fasterxml.jackson.databind.JsonNode;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.util.HashMap;
import java.util.Map;

/**
 * The components this harness serves, by trace component name. A session that is built on some releases only (the
 * raft component's, in {@code src/raft}, on 4.3 and later) is registered by class name: a build for another release
 * lacks it, and the harness then does not offer that component (its {@code hello} lists what it offers).
 */
final class Components {
    private Components() {
    }

    static Map<String, SessionFactory> all() {
        Map<String, SessionFactory> all = new HashMap<>();
        all.put("echo", EchoSession::new);
        all.put("broker", org.apache.kafka.controller.KraftspecBrokerSession::new);
        all.put("controller", ControllerSession::new);
        byName(all, "partition", "org.apache.kafka.controller.PartitionSession");
        byName(all, "raft", "org.apache.kafka.raft.KraftspecRaftSession");
        byName(all, "voters", "org.apache.kafka.raft.internals.KraftspecVotersSession");
        return all;
    }

    private static void byName(Map<String, SessionFactory> all, String component, String className) {
        Constructor<?> constructor;
        try {
            constructor = Class.forName(className).getConstructor(JsonNode.class, JsonNode.class);
        } catch (ClassNotFoundException e) {
            return; // not built for this release
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException(className + " has no (JsonNode initial, JsonNode request) constructor", e);
        }
        all.put(component, (initial, request) -> {
            try {
                return (Session) constructor.newInstance(initial, request);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof Exception) throw (Exception) cause;
                throw e;
            }
        });
    }
}
