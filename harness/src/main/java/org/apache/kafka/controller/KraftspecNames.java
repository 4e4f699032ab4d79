package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import org.apache.kafka.common.Uuid;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.UUID;

/**
 * A trace names incarnations, log directories and topics by strings; Kafka by {@link Uuid}s. A string that is a
 * Uuid's own text (22 characters of URL-safe base64) is that Uuid; any other string ("1", "incarnation-1-2") is
 * given a name-based Uuid, remembered both ways, so equal names are equal Uuids and Kafka's output is translated
 * back to the names the trace used. The mapping is a bijection and never reserved (its high half is never 0).
 */
final class KraftspecNames {
    private final Map<String, Uuid> byName = new HashMap<>();
    private final Map<String, String> nameOfText = new HashMap<>();

    Uuid uuid(String name) {
        Uuid known = byName.get(name);
        if (known != null) return known;
        Uuid uuid = null;
        try {
            Uuid parsed = Uuid.fromString(name);
            if (parsed.toString().equals(name)) uuid = parsed;
        } catch (IllegalArgumentException e) {
            // not a Uuid's text: named below
        }
        if (uuid == null) {
            UUID derived = UUID.nameUUIDFromBytes(("kraftspec:" + name).getBytes(StandardCharsets.UTF_8));
            uuid = new Uuid(derived.getMostSignificantBits(), derived.getLeastSignificantBits());
            nameOfText.put(uuid.toString(), name);
        }
        byName.put(name, uuid);
        return uuid;
    }

    String name(Uuid uuid) {
        String text = uuid.toString();
        return nameOfText.getOrDefault(text, text);
    }

    /** Every string in {@code json} that is the text of a named Uuid, replaced by its name (in place). */
    JsonNode toNames(JsonNode json) {
        if (nameOfText.isEmpty()) return json;
        if (json instanceof ObjectNode) {
            ObjectNode object = (ObjectNode) json;
            Iterator<Map.Entry<String, JsonNode>> fields = object.fields();
            while (fields.hasNext()) {
                Map.Entry<String, JsonNode> field = fields.next();
                JsonNode value = field.getValue();
                if (value.isTextual()) {
                    String name = nameOfText.get(value.asText());
                    if (name != null) field.setValue(TextNode.valueOf(name));
                } else {
                    toNames(value);
                }
            }
        } else if (json instanceof ArrayNode) {
            ArrayNode array = (ArrayNode) json;
            for (int i = 0; i < array.size(); i++) {
                JsonNode value = array.get(i);
                if (value.isTextual()) {
                    String name = nameOfText.get(value.asText());
                    if (name != null) array.set(i, TextNode.valueOf(name));
                } else {
                    toNames(value);
                }
            }
        }
        return json;
    }

    /** The Uuid-valued fields of a record's JSON (Kafka's camelCase names), their names made Uuid texts (in place). */
    void toUuids(JsonNode json) {
        if (json instanceof ObjectNode) {
            ObjectNode object = (ObjectNode) json;
            Iterator<Map.Entry<String, JsonNode>> fields = object.fields();
            while (fields.hasNext()) {
                Map.Entry<String, JsonNode> field = fields.next();
                JsonNode value = field.getValue();
                if (UUID_FIELDS.containsKey(field.getKey())) {
                    if (value.isTextual()) {
                        field.setValue(TextNode.valueOf(uuid(value.asText()).toString()));
                    } else if (value.isArray()) {
                        ArrayNode array = (ArrayNode) value;
                        for (int i = 0; i < array.size(); i++) {
                            if (array.get(i).isTextual()) {
                                array.set(i, TextNode.valueOf(uuid(array.get(i).asText()).toString()));
                            }
                        }
                    }
                } else {
                    toUuids(value);
                }
            }
        } else if (json instanceof ArrayNode) {
            for (JsonNode item : json) toUuids(item);
        }
    }

    private static final Map<String, Boolean> UUID_FIELDS = Map.of(
        "incarnationId", true, "logDirs", true, "cordonedLogDirs", true, "directories", true, "topicId", true);
}
