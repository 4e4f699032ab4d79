package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.Map;

/**
 * The harness's translation between a trace's id strings (topic ids, incarnation ids, directory ids) and Kafka's
 * {@link Uuid}s. A string that is already a Uuid in Kafka's base64 form stands for itself; any other string (the
 * bundled traces name topics {@code "spec-topic"}, incarnations {@code "incarnation-1-0"}) gets a Uuid derived from
 * its SHA-256, remembered so that Kafka's answers name it by the trace's string again.
 */
final class PartitionTraceIds {
    private final Map<String, Uuid> toKafka = new HashMap<>();
    private final Map<Uuid, String> toTrace = new HashMap<>();

    Uuid kafka(String id) {
        Uuid known = toKafka.get(id);
        if (known != null) return known;
        Uuid uuid = direct(id);
        if (uuid == null) uuid = derived(id);
        String previous = toTrace.putIfAbsent(uuid, id);
        if (previous != null && !previous.equals(id)) {
            throw new io.kraftspec.harness.HarnessError("trace ids " + previous + " and " + id + " map to one Uuid");
        }
        toKafka.put(id, uuid);
        return uuid;
    }

    String trace(Uuid uuid) {
        String id = toTrace.get(uuid);
        return id != null ? id : uuid.toString();
    }

    private static Uuid direct(String id) {
        try {
            Uuid uuid = Uuid.fromString(id);
            return uuid.toString().equals(id) ? uuid : null;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static Uuid derived(String id) {
        try {
            ByteBuffer digest = ByteBuffer.wrap(MessageDigest.getInstance("SHA-256").digest(id.getBytes(StandardCharsets.UTF_8)));
            long msb = digest.getLong() | 1L << 62; // never a reserved id (msb 0) nor ZERO_UUID
            return new Uuid(msb, digest.getLong());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
