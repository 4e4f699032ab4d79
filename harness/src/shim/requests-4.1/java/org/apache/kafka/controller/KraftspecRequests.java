package org.apache.kafka.controller;

import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.requests.AlterPartitionResponse;
import org.apache.kafka.common.requests.ElectLeadersRequest;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * The partition session's requests and responses as they cross the wire, and the metadata.version it reads: Kafka 4.1
 * and later (messages read through a {@code Readable}, KIP-1101's AllowReplicationFactorChange).
 */
final class KraftspecRequests {
    private KraftspecRequests() {
    }

    /** An AlterPartition response as the broker reads it at {@code version}. */
    static AlterPartitionResponseData received(AlterPartitionResponseData response, short version) {
        return AlterPartitionResponse.parse(MessageUtil.toByteBufferAccessor(response, version), version).data();
    }

    /** An ElectLeaders request as the controller reads it at {@code version}. */
    static ElectLeadersRequest received(ElectLeadersRequestData data, short version) {
        return ElectLeadersRequest.parse(MessageUtil.toByteBufferAccessor(data, version), version);
    }

    static void setAllowReplicationFactorChange(AlterPartitionReassignmentsRequestData request, boolean allow) {
        request.setAllowReplicationFactorChange(allow);
    }

    static MetadataVersion metadataVersion(FeatureControlManager featureControl) {
        return featureControl.metadataVersionOrThrow();
    }
}
