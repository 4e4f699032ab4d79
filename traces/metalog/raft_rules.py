"""Raft-level and file-level rules of a metadata partition, named like the record rules (their docs live in
``RULE_DOCS``). The audit applies them while streaming the log; each doc states the fact and the tolerance."""

from __future__ import annotations

from kraftspec.traces.metalog.rules import RULE_DOCS
from kraftspec.traces.metalog.snapshot import STRUCTURE, STRUCTURE_DOC

OFFSETS_CONTIGUOUS = "offsets_contiguous"
LEADER_EPOCH_MONOTONIC = "leader_epoch_monotonic"
EPOCH_STARTS_WITH_LEADER_CHANGE = "epoch_starts_with_leader_change"
LEADER_CHANGE_CONSISTENT = "leader_change_consistent"
BATCH_KRAFT_FIELDS = "batch_kraft_fields"
CONTROL_BATCH_RECORDS = "control_batch_records"
SEGMENT_NAME_MATCHES_BASE_OFFSET = "segment_name_matches_base_offset"
LOG_START_HAS_SNAPSHOT = "log_start_has_snapshot"
LEADER_EPOCH_CHECKPOINT_MATCHES = "leader_epoch_checkpoint_matches"
QUORUM_STATE_MATCHES_LOG = "quorum_state_matches_log"
PARTITION_METADATA_TOPIC_ID = "partition_metadata_topic_id"
SNAPSHOT_MATCHES_LOG = "snapshot_matches_log"
SNAPSHOT_ID_MATCHES_LOG = "snapshot_id_matches_log"
BOOTSTRAP_MATCHES_LOG = "bootstrap_matches_log"

RULE_DOCS.update({
    OFFSETS_CONTIGUOUS: "rules §5.2: record offset = baseOffset + offsetDelta; a batch's deltas are 0..count−1 "
                        "(lastOffsetDelta = count−1) and each batch starts right after the previous one, across segments.",
    LEADER_EPOCH_MONOTONIC: "rules §5.2, rules §3.6: partitionLeaderEpoch is the epoch of the leader "
                            "that appended the batch; along the log it never decreases.",
    EPOCH_STARTS_WITH_LEADER_CHANGE: "rules §3.6, §3.11: a new leader's first batch is a control batch opening "
                                     "with LeaderChangeMessage. Tolerances: epochs may skip values (lost elections); "
                                     "a log starting at offset 0 may open with another (bootstrap) batch, the "
                                     "LeaderChange then opens the next batch; an epoch already running at the log start "
                                     "is not judged.",
    LEADER_CHANGE_CONSISTENT: "rules §5.9 notes: LeaderChangeMessage Voters are the epoch's voters and "
                              "GrantingVoters the voters that granted the vote, leader included; one per epoch.",
    BATCH_KRAFT_FIELDS: "rules §5.2: KRaft batches carry producerId, producerEpoch and baseSequence −1 and are "
                        "not transactional.",
    CONTROL_BATCH_RECORDS: "rules §5.2: data records have a null key and a framed value; control batches hold "
                           "control records only, and KRaft writes no ABORT/COMMIT markers (unknown types are ignored).",
    SEGMENT_NAME_MATCHES_BASE_OFFSET: "rules §5.1: a segment is named after its base offset (20 digits), the "
                                      "offset of its first batch.",
    LOG_START_HAS_SNAPSHOT: "rules §5.1: a log whose first offset is above 0 lost its prefix to a snapshot, so "
                            "a snapshot must end at or after that offset for the image to be rebuilt.",
    LEADER_EPOCH_CHECKPOINT_MATCHES: "rules §5.1: leader-epoch-checkpoint lists (epoch, start offset) of every "
                                     "epoch in the log. Tolerances: entries before the log start are ignored, the "
                                     "first one may be raised to the log start offset, and the newest epochs may be "
                                     "missing (the file can lag a log that was not shut down cleanly).",
    QUORUM_STATE_MATCHES_LOG: "rules §3.3: quorum-state holds the latest election: its leaderEpoch is at least "
                              "the log's last epoch, and for that epoch its leader and voters are the LeaderChange's. "
                              "Tolerance: a data_version 0 file with no currentVoters in a kraft.version 1 log "
                              "(written by a node without static voters before it read the KRaftVersionRecord).",
    PARTITION_METADATA_TOPIC_ID: "rules §5.1: the metadata partition's topic id is UUID(0,1) AAAAAAAAAAAAAAAAAAAAAQ.",
    STRUCTURE: STRUCTURE_DOC,
    SNAPSHOT_MATCHES_LOG: "rules §5.1, rules §1.2: a snapshot ending at offset E holds the image the "
                          "log's records below E build (brokers, controllers, topics, partitions, features except "
                          "kraft.version, configs, quotas, producer ids, ACLs, credentials, tokens, ZK migration state). "
                          "Tolerance: a snapshot without ZkMigrationStateRecord (replayed as a no-op in 4.x) is not "
                          "compared on it.",
    SNAPSHOT_ID_MATCHES_LOG: "rules §5.1, §5.9: snapshot <E>-<epoch> names the epoch of the log record E−1, and "
                             "its header's LastContainedLogTimestamp is that record's append time.",
    BOOTSTRAP_MATCHES_LOG: "rules §5.1, §5.7: the bootstrap snapshot's metadata.version is the one the log's "
                           "bootstrap FeatureLevelRecord finalizes first.",
})
