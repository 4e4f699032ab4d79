package org.apache.kafka.controller;

import io.kraftspec.harness.HarnessError;

import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.requests.AlterPartitionResponse;
import org.apache.kafka.common.requests.ElectLeadersRequest;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * The partition session's requests and responses as they cross the wire, and the metadata.version it reads: Kafka 4.0
 * (messages parsed from a ByteBuffer, no AllowReplicationFactorChange, {@code FeatureControlManager.metadataVersion()}).
 */
final class KraftspecRequests {
    private KraftspecRequests() {
    }

    /** An AlterPartition response as the broker reads it at {@code version}. */
    static AlterPartitionResponseData received(AlterPartitionResponseData response, short version) {
        return AlterPartitionResponse.parse(MessageUtil.toByteBuffer(response, version), version).data();
    }

    /** An ElectLeaders request as the controller reads it at {@code version}. */
    static ElectLeadersRequest received(ElectLeadersRequestData data, short version) {
        return ElectLeadersRequest.parse(MessageUtil.toByteBuffer(data, version), version);
    }

    /** 4.0's reassignment request has no {@code AllowReplicationFactorChange} (KIP-1101, 4.1): it always allows. */
    static void setAllowReplicationFactorChange(AlterPartitionReassignmentsRequestData request, boolean allow) {
        if (!allow) throw new HarnessError("allow_replication_factor_change false: Kafka 4.0's request cannot say it");
    }

    static MetadataVersion metadataVersion(FeatureControlManager featureControl) {
        return featureControl.metadataVersion();
    }
}
