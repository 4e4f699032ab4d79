package io.kraftspec.harness;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.util.List;

/**
 * Metadata records as Kafka's own JSON converters write them: {@code {"offset", "type", "version", "data"}}, the
 * data in the schema's camelCase names. kraftspec.harness.kafka_records maps them onto the trace format.
 */
public final class Records {
    private Records() {
    }

    public static ObjectNode toJson(long offset, ApiMessageAndVersion record) {
        ObjectNode json = Main.JSON.createObjectNode();
        json.put("offset", offset);
        String name = record.message().getClass().getSimpleName();
        json.put("type", name.endsWith("Data") ? name.substring(0, name.length() - 4) : name);
        json.put("version", record.version());
        json.set("data", MetadataJsonConverters.writeJson(record.message(), record.version()));
        return json;
    }

    /** The records of one operation, appended at consecutive offsets from {@code firstOffset}. */
    public static ArrayNode toJson(long firstOffset, List<ApiMessageAndVersion> records) {
        ArrayNode array = Main.JSON.createArrayNode();
        long offset = firstOffset;
        for (ApiMessageAndVersion record : records) array.add(toJson(offset++, record));
        return array;
    }
}
