"""The rule book's sections: the project's own account of each part of KRaft that the reference implements.

Written for kraftspec from Kafka's source (the 4.x line, file and method named in each section) and the KIPs.
A citation ``§N`` or ``§N.M`` (``rules §1.5``) anywhere in the project names one of these sections; the rule
entries of ``kraftspec.rulebook`` list the reference functions citing each one. ``kip_differs`` says where the
KIP's text and Kafka as implemented part ways ("" when they agree on what the section covers).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """One section of the rule book: what it decides, Kafka's code, the KIP, and where the two differ."""

    title: str
    decides: str
    kafka: str
    kip: str
    kip_differs: str = ""


_CONTROLLER = "metadata/src/main/java/org/apache/kafka/controller/"
_RAFT = "raft/src/main/java/org/apache/kafka/raft/"

SECTIONS: dict[str, Section] = {
    "1": Section(
        "Brokers seen from the controller: registration, heartbeats, fencing, lifecycle",
        "How the active controller admits brokers, keeps their sessions alive, fences and unfences them, lets them "
        "shut down in a controlled way and forgets them; and how a broker moves through its own states.",
        f"{_CONTROLLER}ClusterControlManager.java, BrokerHeartbeatManager.java, BrokerHeartbeatTracker.java, "
        "ReplicationControlManager.java, QuorumController.java; "
        "server/src/main/java/org/apache/kafka/server/BrokerLifecycleManager.java",
        "KIP-631 (broker registration, heartbeats and fencing)",
        "KIP-631 calls the broker epoch a monotonically increasing number; Kafka uses the log offset of the first "
        "record the registration writes. Sessions are keyed by (broker id, epoch) since 4.0.",
    ),
    "1.1": Section(
        "Timing and sizing defaults",
        "The configuration values the broker rules depend on: 9 s sessions, 2 s heartbeat interval, the stale-broker "
        "check every session/8, 500 ms no-op records, 10,000 records per batch, 1,000 elections per balance run.",
        "raft/src/main/java/org/apache/kafka/raft/KRaftConfigs.java; QuorumController (maybeFenceStaleBroker period, "
        "DEFAULT_MAX_RECORDS_PER_BATCH); ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE",
        "KIP-631 (configurations)",
    ),
    "1.2": Section(
        "The controller's broker state",
        "Replicated state (registrations, the offset of each broker's RegisterBrokerRecord, directory owners) versus "
        "the active controller's own soft state (session contact times keyed by id and epoch, heartbeat entries with "
        "reported offset and controlled-shutdown offset); what activation gives each broker; when a session is "
        "expired (strictly after last contact plus the timeout).",
        f"{_CONTROLLER}ClusterControlManager.java (activate, registerBrokerRecordOffsets), "
        "BrokerHeartbeatTracker.java (isExpired, hasValidSession), BrokerHeartbeatManager.java (register, touch)",
        "KIP-631 (broker registration and fencing)",
        "The KIP has no (id, epoch) session key: it is Kafka 4.0's (KAFKA-17793). Activation gives only unfenced "
        "brokers a session from 4.1 on (4.0 gave every broker one).",
    ),
    "1.3": Section(
        "BrokerRegistration (apiKey 62)",
        "The checks a registration passes in order (cluster id, live duplicate of another incarnation, ZooKeeper "
        "brokers, log directories, feature ranges, metadata.version present), the records it writes (shutdown "
        "cleanup first for a new incarnation, the RegisterBrokerRecord last) and the epoch it answers.",
        f"{_CONTROLLER}ClusterControlManager.java registerBroker, processRegistrationFeature; "
        "QuorumController.registerBroker; ReplicationControlManager.handleBrokerShutdown",
        "KIP-631 (broker registration); KIP-858 (log directories); KIP-966 (clean-shutdown detection)",
        "The epoch is the offset of the operation's first record, so with cleanup records it is below the "
        "RegisterBrokerRecord's own offset. A request without metadata.version is INVALID_REGISTRATION from 4.0 "
        "(3.9: UNSUPPORTED_VERSION).",
    ),
    "1.4": Section(
        "Broker change records and their replay",
        "What BrokerRegistrationChangeRecord's deltas mean (fenced 1/-1/0, entering controlled shutdown, directory "
        "lists), when Fence/UnfenceBrokerRecord are still read, and that replay demands a registered broker of the "
        "record's epoch.",
        f"{_CONTROLLER}ClusterControlManager.java replay(BrokerRegistrationChangeRecord | FenceBrokerRecord | "
        "UnfenceBrokerRecord | UnregisterBrokerRecord); metadata/.../BrokerRegistrationFencingChange.java",
        "KIP-631 (metadata records)",
    ),
    "1.5": Section(
        "BrokerHeartbeat (apiKey 63)",
        "A heartbeat refreshes the session before anything is checked, then must name a registered broker of the "
        "current epoch; the broker's next control state (fenced, unfenced, controlled shutdown, shut down) follows "
        "from its current one and the request's flags, and the change writes fencing, unfencing or "
        "controlled-shutdown records. The reply says caught up, fenced, in controlled shutdown, shut down.",
        f"{_CONTROLLER}QuorumController.processBrokerHeartbeat; ReplicationControlManager.processBrokerHeartbeat; "
        "BrokerHeartbeatManager.calculateNextBrokerState, touch, maybeUpdateControlledShutdownOffset",
        "KIP-631 (broker heartbeats)",
        "Unfencing waits for the broker to report the RegisterBrokerRecord's offset, not its epoch. A fenced broker "
        "asking to shut down writes another fence record. A timed-out heartbeat only touches the soft state "
        "(REQUEST_TIMED_OUT).",
    ),
    "1.6": Section(
        "Session expiry",
        "The periodic check fences at most one broker whose (id, epoch) session expired, even one already fenced; "
        "an entry for an old epoch or an unknown broker is only dropped.",
        f"{_CONTROLLER}ReplicationControlManager.maybeFenceOneStaleBroker; QuorumController.maybeFenceStaleBroker",
        "KIP-631 (broker fencing)",
        "The KIP fences on a timeout; Kafka fences one broker per run of a task scheduled every session/8, so "
        "fencing can take about 112.5 % of the timeout.",
    ),
    "1.7": Section(
        "Controlled shutdown",
        "An unfenced broker asking to shut down while leading partitions enters controlled shutdown (it leaves every "
        "ISR, loses its leaderships); it may shut down once it leads nothing and every active broker has caught up "
        "to the offset that put it there.",
        f"{_CONTROLLER}BrokerHeartbeatManager.calculateNextBrokerState, lowestActiveOffset; "
        "ReplicationControlManager.handleBrokerInControlledShutdown",
        "KIP-631 (controlled shutdown)",
        "The in-controlled-shutdown flag is cleared only by a new incarnation's registration.",
    ),
    "1.8": Section(
        "UnregisterBroker (apiKey 64)",
        "Unregistering removes the broker from every ISR, then every ELR, then writes UnregisterBrokerRecord; an "
        "unknown broker is BROKER_ID_NOT_REGISTERED; the broker's later heartbeats are stale.",
        f"{_CONTROLLER}ReplicationControlManager.unregisterBroker; ControllerApis (ALTER on CLUSTER)",
        "KIP-631 (UnregisterBroker)",
    ),
    "1.9": Section(
        "The broker's own lifecycle",
        "BrokerState values and the broker-side manager: start, register, heartbeat at its intervals, catch up, "
        "unfence, pending controlled shutdown, shut down; one request in flight at a time.",
        "server/src/main/java/org/apache/kafka/server/BrokerLifecycleManager.java; "
        "metadata/src/main/java/org/apache/kafka/metadata/BrokerState.java",
        "KIP-631 (the broker state machine)",
        "The KIP's states include ones KRaft never uses (values 4 and 5).",
    ),
    "1.10": Section(
        "Broker rules that changed between versions",
        "Which broker behaviours differ across 3.9 and the 4.x releases (session validity, activation sessions, "
        "clean-shutdown detection); the reference follows each through KafkaBehaviour switches.",
        f"{_CONTROLLER}BrokerHeartbeatTracker.java (KAFKA-17793), ClusterControlManager.activate (KAFKA-19130), "
        "registerBroker (KAFKA-18635)",
        "KIP-631; KIP-966",
    ),
    "1.11": Section(
        "Finalized features and UpdateFeatures",
        "Which feature levels the cluster runs at, and when an UpdateFeatures request may change them: the upgrade "
        "type (upgrade, safe or unsafe downgrade), every node's supported range (the local controller's, every "
        "registered broker's, from MV 3.7-IV0 every registered controller's), the metadata.version rules (a level "
        "the release defines, no downgrade across a level that changed the metadata), kraft.version (upgraded by "
        "the Raft client, never downgraded), the other features' dependencies, and the FeatureLevelRecords written "
        "(level 0 removes a feature); validate-only writes nothing. The registration half of the same compatibility "
        "rule is §1.3's. spec/FeatureLevels.tla states both halves within small bounds (metadata.version, ELR and "
        "kraft.version; brokers registering with an older or a newer software; invariants: every finalized level "
        "within every registered node's range, metadata.version defined, dependencies met, no downgrade unasked or "
        "across a metadata change, kraft.version never lowered) and `kraftspec agree features` checks its state "
        "graph equal to these rules'.",
        f"{_CONTROLLER}FeatureControlManager.java (updateFeatures, updateFeature, reasonNotSupported, "
        "updateMetadataVersion, replay), QuorumFeatures.java, ConfigurationControlManager.updateFeatures, "
        "QuorumController.updateFeatures; core ControllerApis.handleUpdateFeatures; "
        "server-common MetadataVersion.checkIfMetadataChanged, Feature.validateVersion",
        "KIP-584 (versioning scheme for features), KIP-778 (KRaft upgrades: UpgradeType), KIP-1022 (feature "
        "dependencies)",
        "KIP-584 lets each feature update succeed or fail alone; Kafka 4.x fails the whole request at its first "
        "failing feature (3.9 still answered per feature). KIP-778's UNSAFE_DOWNGRADE would drop metadata; Kafka "
        "refuses any downgrade across a level that changed the metadata whatever the type (KAFKA-13896).",
    ),
    "2": Section(
        "Partition leadership and ISR",
        "How the controller changes a partition's leader, ISR, ELR and replicas, and how the partition leader on a "
        "broker keeps its high watermark and ISR.",
        f"{_CONTROLLER}PartitionChangeBuilder.java, ReplicationControlManager.java; "
        "metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java; "
        "core/src/main/scala/kafka/cluster/Partition.scala",
        "KIP-631 (partition records); KIP-497/KIP-841/KIP-903 (AlterPartition); KIP-966 (ELR)",
    ),
    "2.1": Section(
        "Partition state, sentinels and creation",
        "The fields of a partition registration, the sentinels of PartitionChangeRecord (leader -2 unchanged, -1 "
        "none; recovery state -1 unchanged; a null list unchanged), the preferred replica, and a new partition's "
        "ISR and leader (its active assigned replicas, the first one leading).",
        "metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java, LeaderConstants.java, "
        f"LeaderRecoveryState.java; {_CONTROLLER}ReplicationControlManager.createTopic",
        "KIP-631 (PartitionRecord, PartitionChangeRecord); KIP-704 (leader recovery state)",
    ),
    "2.2": Section(
        "Applying a PartitionChangeRecord",
        "Each stated list replaces the old one; any leader but -2 sets the leader and bumps the leader epoch (even "
        "the same leader); every record bumps the partition epoch; ClearElrRecord empties ELRs the same way.",
        "metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java merge",
        "KIP-631 (PartitionChangeRecord)",
    ),
    "2.3": Section(
        "Building a partition change",
        "The fixed order of the change builder: complete a reassignment if the target ISR allows, fill the ELR, "
        "elect, force an epoch bump when replicas leave, write the ELR and ISR (without ELR the ISR never becomes "
        "empty), record the last known leader, directories and replica lists, and write no record when nothing "
        "changed; the record version follows metadata.version.",
        f"{_CONTROLLER}PartitionChangeBuilder.build",
        "KIP-631; KIP-966 (ELR); KIP-858 (directories)",
        "Since metadata.version 3.6-IV0 an ISR shrink alone does not bump the leader epoch (KAFKA-15021).",
    ),
    "2.4": Section(
        "Leader election",
        "Who may lead (in the target ISR, or the ELR when the ISR is empty, and acceptable: registered, unfenced, "
        "not shutting down, its directory online) and the order preferred, online and unclean elections try them, "
        "including the last-known-leader rule.",
        f"{_CONTROLLER}PartitionChangeBuilder.electLeader, isValidNewLeader; ReplicationControlManager (acceptors)",
        "KIP-631; KIP-966 (ELR leaders); KIP-460 (unclean election on request)",
    ),
    "2.5": Section(
        "Epochs",
        "The partition epoch rises by one per change record; the leader epoch rises by one whenever the record names "
        "a leader (a new one, none, the same one after a replica left); an ISR expansion never bumps it.",
        f"{_CONTROLLER}PartitionChangeBuilder.java; metadata/.../PartitionRegistration.merge",
        "KIP-631",
    ),
    "2.6": Section(
        "ISR invariants",
        "The ISR is a duplicate-free subset of the replicas holding the leader (unless leaderless); with ELR it may "
        "empty and leavers enter the ELR; an unclean election leaves ISR = [leader], RECOVERING.",
        "metadata/src/main/java/org/apache/kafka/metadata/Replicas.java validateIsr; "
        f"{_CONTROLLER}PartitionChangeBuilder.java",
        "KIP-631; KIP-704; KIP-966",
    ),
    "2.7": Section(
        "Eligible leader replicas (ELR)",
        "When ELR is on (eligible.leader.replicas.version 1), what enters and leaves the ELR and last known ELR, "
        "and that a min.insync.replicas change writes ClearElrRecord (for the topic, or for every topic when the "
        "cluster or a broker default changes); while ELR is on a broker-level min.insync.replicas is refused.",
        f"{_CONTROLLER}FeatureControlManager.isElrFeatureEnabled, ActivationRecordsGenerator, "
        "ConfigurationControlManager.createClearElrRecordsAsNeeded, isDisallowedBrokerMinIsrTransition",
        "KIP-966",
        "Kafka turns ELR on by default only for clusters bootstrapped at 4.1-IV0 or later.",
    ),
    "2.8": Section(
        "Reassignment",
        "A reassignment's adding and removing sets, its completion once the ISR allows, cancelling and reverting, "
        "and the replication-factor check.",
        f"{_CONTROLLER}ReplicationControlManager.alterPartitionReassignments, PartitionReassignmentReplicas.java, "
        "PartitionReassignmentRevert.java",
        "KIP-455 (reassignment API); KIP-860 (replication factor change)",
        "A completion that removes the leader elects a new one in the same record; the AlterPartition that caused it "
        "gets NEW_LEADER_ELECTED though the change is committed.",
    ),
    "2.9": Section(
        "Broker events and the partitions they change",
        "Which partitions a broker's fencing, unfencing, controlled shutdown, unregistration or re-registration "
        "visits, who may lead during it, and the order of partition and broker records.",
        f"{_CONTROLLER}ReplicationControlManager.generateLeaderAndIsrUpdates, handleBrokerFenced, "
        "handleBrokerUnfenced, handleBrokerInControlledShutdown, handleBrokerShutdown",
        "KIP-631; KIP-966 (unclean shutdown and the ELR)",
    ),
    "2.10": Section(
        "AlterPartition (apiKey 56)",
        "The request's broker epoch, then per partition the first failing check of topic, partition, epochs ahead "
        "(NOT_CONTROLLER), epochs behind, leadership, ISR shape, recovery state and ISR eligibility; the change "
        "built with the requested ISR; and how the leader's broker reacts to each error.",
        f"{_CONTROLLER}ReplicationControlManager.alterPartition, validateAlterPartitionData; "
        "core/src/main/scala/kafka/cluster/Partition.scala handleAlterPartitionError",
        "KIP-497 (AlterIsr); KIP-704; KIP-841 (fenced replicas); KIP-903 (broker epochs in the ISR)",
        "Epochs ahead of the controller's are answered NOT_CONTROLLER, which the KIPs do not list.",
    ),
    "2.11": Section(
        "ElectLeaders and periodic elections",
        "Per-partition answers of ElectLeaders (not needed, not available) and the periodic preferred and unclean "
        "election tasks with their per-run limits.",
        f"{_CONTROLLER}ReplicationControlManager.electLeaders, maybeBalancePartitionLeaders, "
        "maybeElectUncleanLeaders",
        "KIP-460 (ElectLeaders)",
    ),
    "2.12": Section(
        "The partition leader on a broker",
        "The leader's high watermark (minimum end offset over the leader, the maximal ISR and caught-up eligible "
        "followers, held while the ISR is below min ISR), follower catch-up, ISR shrink and expansion, and the "
        "AlterPartition it sends.",
        "core/src/main/scala/kafka/cluster/Partition.scala (maybeIncrementLeaderHW, maybeShrinkIsr, "
        "maybeExpandIsr); server/src/main/java/org/apache/kafka/server/replica/Replica.java",
        "KIP-497; KIP-841; KIP-903",
        "The high watermark stops below min ISR since 3.7 (KAFKA-15583).",
    ),
    "3": Section(
        "The KRaft Raft quorum",
        "One node of the metadata quorum: its states, votes and elections, the leader's log replication and high "
        "watermark, fetch validation, the quorum-state file and control records.",
        f"{_RAFT}KafkaRaftClient.java, QuorumState.java, LeaderState.java, FollowerState.java, EpochElection.java",
        "KIP-595 (Raft for the metadata quorum); KIP-996 (pre-vote); KIP-853 (voter directories)",
        "KIP-595 has a Voted state; Kafka keeps a vote inside Unattached, Prospective or Follower, adds Prospective "
        "(pre-vote) and Resigned.",
    ),
    "3.1": Section(
        "Quorum timing defaults",
        "Election timeout 1 s (randomised up to twice that), fetch timeout 2 s, check-quorum after 1.5 fetch "
        "timeouts, BeginQuorumEpoch resent every half fetch timeout, request timeout 2 s, fetch max wait 500 ms.",
        f"{_RAFT}QuorumConfig.java",
        "KIP-595 (configurations)",
    ),
    "3.2": Section(
        "Raft states and transitions",
        "The legal transitions between Unattached, Prospective, Candidate, Leader, Follower and Resigned, which are "
        "written to the quorum-state file first, and the state a node restarts in (a former leader is Resigned).",
        f"{_RAFT}QuorumState.java (transitionTo*, initialize), UnattachedState.java, ProspectiveState.java, "
        "ResignedState.java",
        "KIP-595 (state machine); KIP-996",
        "Resigned may move to a follower of another leader in the same epoch (KAFKA-18379).",
    ),
    "3.3": Section(
        "The quorum-state file",
        "The persisted election state (epoch, leader, vote with directory id) and its JSON versions 0 and 1.",
        f"{_RAFT}FileQuorumStateStore.java; raft/src/main/resources/common/message/QuorumStateData.json",
        "KIP-595; KIP-853 (voted directory id)",
    ),
    "3.4": Section(
        "Vote (apiKey 52)",
        "The order of checks on a vote or pre-vote request (cluster, partition, epoch sanity, fenced epoch, higher "
        "epoch first moves the receiver, voter key), log up-to-dateness, and which states grant pre-votes and "
        "votes.",
        f"{_RAFT}KafkaRaftClient.handleVoteRequest; EpochState.canGrantVote in each state class",
        "KIP-595 (Vote); KIP-996 (pre-vote); KIP-853 (voter key)",
        "A higher-epoch pre-vote also moves the receiver to that epoch; a follower that has fetched from its leader "
        "refuses pre-votes.",
    ),
    "3.5": Section(
        "Elections",
        "Majorities over the voter set, the pre-vote phase, candidacy and loss, the backoff after EndQuorumEpoch.",
        f"{_RAFT}internals/EpochElection.java; KafkaRaftClient.handleVoteResponse, maybeTransitionForward; "
        "ProspectiveState.java, CandidateState.java",
        "KIP-595 (elections); KIP-996",
        "A voter answering the pre-vote with UNSUPPORTED_VERSION makes the prospective node a candidate at once.",
    ),
    "3.6": Section(
        "The leader",
        "What a new leader appends (LeaderChangeMessage, and KRaftVersion and Voters records when needed), the high "
        "watermark rule (the end offset a majority of voters have reached, adopted only past the epoch start, "
        "never decreasing), check quorum "
        "and resigning.",
        f"{_RAFT}LeaderState.java (appendStartOfEpochControlRecords, updateLocalState, updateReplicaState, "
        "timeUntilCheckQuorumExpires)",
        "KIP-595 (leader, high watermark); KIP-853",
    ),
    "3.7": Section(
        "Fetch (apiKey 1) on the Raft leader and follower",
        "The leader's validation of a fetch, diverging epochs and snapshot redirects, when a fetch is parked, and "
        "the follower's truncation, append and high-watermark update on the response.",
        f"{_RAFT}KafkaRaftClient.handleFetchRequest, handleFetchResponse; RaftLog.validateOffsetAndEpoch; "
        "FollowerState.updateHighWatermark",
        "KIP-595 (Fetch)",
        "A node with no known leader fetches from one bootstrap server at a time (KAFKA-17030).",
    ),
    "3.8": Section(
        "Common response handling",
        "How any Raft response's epoch and error move the node (ignore an older epoch, follow a higher one, learn "
        "the leader of the current epoch).",
        f"{_RAFT}KafkaRaftClient.maybeHandleCommonResponse, maybeTransition",
        "KIP-595",
    ),
    "3.9": Section(
        "BeginQuorumEpoch and EndQuorumEpoch (apiKeys 53, 54)",
        "Voter-only request validation, the transition to the named leader, and the follower's election backoff "
        "after EndQuorumEpoch.",
        f"{_RAFT}KafkaRaftClient.handleBeginQuorumEpochRequest, handleEndQuorumEpochRequest",
        "KIP-595",
    ),
    "3.10": Section(
        "DescribeQuorum (apiKey 55)",
        "Only the leader answers: voters and observers with end offsets and fetch times; others answer "
        "NOT_LEADER_OR_FOLLOWER for the partition.",
        f"{_RAFT}KafkaRaftClient.handleDescribeQuorumRequest; LeaderState.describeQuorum",
        "KIP-595; KIP-836 (fetch timestamps); KIP-853 (nodes)",
    ),
    "3.11": Section(
        "Control records",
        "The control record types of the metadata log (LeaderChange, snapshot header and footer, KRaftVersion, "
        "Voters) and their framing.",
        "clients/src/main/java/org/apache/kafka/common/record/internal/ControlRecordType.java, "
        "ControlRecordUtils.java",
        "KIP-595; KIP-853",
    ),
    "3.12": Section(
        "The listener",
        "What the state machine above Raft learns: committed records up to the high watermark (handleCommit) and "
        "the leader and epoch (handleLeaderChange), a new local leader only once the records up to its epoch start "
        "have been handed over. spec/KRaftListener.tla states it over one node within small bounds (invariants: "
        "the listener never passes the high watermark, sees its own leadership only caught up and never from a "
        "Resigned node, is never told an older epoch, loads committed snapshots only) and `kraftspec agree "
        "listener` checks its state graph equal to these rules'.",
        f"{_RAFT}KafkaRaftClient.pollListeners, updateListenersProgress, ListenerContext.maybeFireLeaderChange",
        "KIP-595 (RaftClient.Listener)",
    ),
    "3.13": Section(
        "Graceful shutdown and request back-off",
        "shutdown(timeoutMs): a leader resigns, a nominee keeps its election, an Unattached voter waits, until the "
        "node is an observer, the only voter or knows a remote leader (completed) or the timer expires (timed out); "
        "then the client is polled no more. A connection whose request failed backs off for "
        "quorum.retry.backoff.ms; one whose request is outstanding waits for the answer or the request timeout. "
        "spec/KRaftShutdown.tla states the shutdown over one node (leader, follower, unattached, nominee, observer, "
        "the only voter) with a follower's EndQuorumEpoch back-off by its place among the preferred successors "
        "(invariants: a finished node takes no input and leads only as the only voter, a voter without a remote "
        "leader waits for its timer, nothing is appended while shutting down) and `kraftspec agree shutdown` checks "
        "its state graph equal to the reference's. spec/KRaftRequests.tla states the requests over one voter "
        "(follower, unattached, nominee) through its connections (invariants: nothing is sent to a connection "
        "backing off, a fetching node has one request in flight and is idle only while every server backs off, a "
        "follower fetches a bootstrap server only while its leader backs off or its request timed out, a vote round "
        "asks each voter that has not answered) and `kraftspec agree requests` checks its state graph equal to the "
        "reference's.",
        f"{_RAFT}KafkaRaftClient.shutdown, maybeCompleteShutdown, GracefulShutdown; KafkaRaftClientDriver; "
        "RequestManager.ConnectionState, isReady, isBackingOff, findReadyBootstrapServer; "
        "KafkaRaftClient.maybeSendFetchToBestNode",
        "KIP-595",
    ),
    "3.14": Section(
        "Voter sets and their history (kraft.version 1)",
        "A voter set (voter id -> replica key, listeners, supported kraft.version range) and its operations; the "
        "voter set and kraft.version in force at an offset, taken from the latest VotersRecord and "
        "KRaftVersionRecord in the snapshot or log at or before it; log truncation forgets later ones.",
        f"{_RAFT}VoterSet.java, ReplicaKey.java, internals/VoterSetHistory.java, internals/TreeMapLogHistory.java, "
        "internals/KRaftControlRecordStateMachine.java",
        "KIP-853 (dynamic KRaft quorums)",
        "KIP-853 requires consecutive voter sets to share a majority; Kafka 4.3's VoterSetHistory.addAt only logs a "
        "set that does not and accepts it.",
    ),
    "3.15": Section(
        "AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter (apiKeys 80, 81, 82)",
        "The leader's checks before a voter change: a voter key with directory id, the default listener, one change "
        "at a time, the epoch committed, kraft.version 1, the latest VotersRecord committed, the new voter unknown, "
        "supporting the finalized kraft.version and caught up; the change completes when its VotersRecord commits. "
        "A new kraft.version 1 leader whose voter set is still the bootstrap checkpoint's writes it to the log in its "
        "first batch, after a KRaftVersionRecord. The kraft.version 0 -> 1 upgrade (upgradeKRaftVersion, asked by "
        "UpdateFeatures) waits for every voter's UpdateRaftVoter (its directory id and a range holding 1), then writes "
        "a KRaftVersionRecord and that voter set; every node reading them runs kraft.version 1 from there, until a "
        "truncation drops them. With controller.quorum.auto.join.enable, a kraft.version 1 observer that can become "
        "a voter asks its leader, once per update-voter-set period, to remove its id's old directory, else to add it. "
        "spec/KRaftVoters.tla states these changes over one node's log "
        "within small bounds (the VotersRecords, the high watermark, a removed leader resigning, truncation "
        "forgetting uncommitted voter sets, the upgrade from static voters; invariants: "
        "consecutive sets share a majority, at most one VotersRecord uncommitted, Add and Remove only once "
        "kraft.version 1 is committed, every VotersRecord naming its voters' directory ids, the committed "
        "kraft.version never decreasing) and `kraftspec agree voters` "
        "checks its state graph equal to these rules' and §3.14's. spec/KRaftAutoJoin.tla states the non-leader "
        "side over one follower (a voter's UpdateRaftVoter, an observer's auto-join, the leader's answers and "
        "fetched VotersRecords; invariants: no join request from a broker, at kraft.version 0 or with auto-join off, "
        "RemoveRaftVoter only for the node's old directory, one request to the leader at a time, none before the "
        "period) and `kraftspec agree autojoin` checks its state graph equal to the Raft client's.",
        f"{_RAFT}KafkaRaftClient.handleAddVoterRequest, handleRemoveVoterRequest, handleUpdateVoterRequest; "
        "upgradeKRaftVersion; shouldSendAddOrRemoveVoterRequest, pollFollowerAsObserver, handleAddVoterResponse, "
        "handleRemoveVoterResponse; shouldSendUpdateVoteRequest, pollFollowerAsVoter, handleUpdateVoterResponse; "
        "FollowerState.java (the update-voter-set period); internals/AddVoterHandler.java, RemoveVoterHandler.java, "
        "UpdateVoterHandler.java, KRaftVersionUpgrade.java; LeaderState.java (maybeAppendUpgradedKRaftVersion)",
        "KIP-853 (dynamic KRaft quorums)",
        "Where KIP-853 has the leader wait (uncommitted epoch or voter change, a lagging voter), Kafka answers "
        "REQUEST_TIMED_OUT at once (KAFKA-17147); UpdateRaftVoter at kraft.version 0 updates the leader's memory only.",
    ),
    "3.16": Section(
        "Snapshots (KIP-630): log start, FetchSnapshot (apiKey 59), loading and cleaning",
        "A log starts at 0 until a snapshot lets it start later; a snapshot is named by its id (end offset, epoch). "
        "The state machine may snapshot only records the log holds and the high watermark covers, at an id the log "
        "calls valid (none below the log start or already frozen: raft_log.can_create_snapshot, "
        "raft_log.freeze_snapshot); the cleaner moves the log start up to a frozen snapshot within the high "
        "watermark and forgets the older ones (raft_log.delete_before_snapshot). The leader answers a Fetch below "
        "its log start, at it in another epoch, or from an epoch older than its earliest snapshot, with its latest "
        "snapshot id, and an empty fetcher whenever it has a snapshot other than the bootstrap checkpoint "
        "(raft_log.fetch_snapshot_id, raft_rules.fetch_needs_snapshot); it serves FetchSnapshot to fetchers of its "
        "epoch in chunks of at most max_bytes (SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE otherwise). The follower "
        "writes each chunk at the position it holds, and with the last one freezes the snapshot, drops its whole "
        "log for it and takes its end as high watermark (raft_log.truncate_to_latest_snapshot, "
        "raft_rules.snapshot_replaces_log); a Fetch answer naming a snapshot restarts a download from byte 0. A "
        "restart recovers from the latest snapshot and the flushed log (raft_log.recover). "
        "kraftspec.models.raft.RaftSnapshotModel draws these (nodes snapshot, clean, fall behind and catch up) and "
        "holds every snapshot to the committed prefix, the log start to the high watermark.",
        f"{_RAFT}KafkaRaftClient.handleFetchSnapshotRequest, handleFetchSnapshotResponse, handleFetchResponse, "
        "tryCompleteFetchRequest, createSnapshot; RaftLog.validateOffsetAndEpoch, createNewSnapshot, "
        "deleteBeforeSnapshot, truncateToLatestSnapshot; internals/KafkaRaftLog.java; FollowerState.fetchingSnapshot; "
        "raft/src/test/java/org/apache/kafka/raft/MockLog.java (the log Kafka's own client tests and the harness run)",
        "KIP-630 (Kafka Raft snapshots)",
        "KIP-630 sends a fetcher to the snapshot when its offset is below the log start; Kafka also sends an empty "
        "fetcher (offset 0) to its latest snapshot when the log still starts at 0, the bootstrap checkpoint excepted.",
    ),
    "4": Section(
        "Controllers: registration, DescribeCluster, admin bootstrap, kafka-cluster",
        "How controllers register themselves in the log, how brokers and controllers answer DescribeCluster, how the "
        "admin client bootstraps, and what kafka-cluster prints.",
        "core/src/main/scala/kafka/server/ControllerRegistrationManager.scala; "
        f"{_CONTROLLER}ClusterControlManager.registerController; core/src/main/scala/kafka/server/AuthHelper.scala",
        "KIP-919 (controller registration); KIP-1073 (fenced brokers in DescribeCluster)",
    ),
    "4.1": Section(
        "Controller registration",
        "When a controller sends ControllerRegistration (not registered in the log, channel up, metadata.version "
        "3.7-IV0 or later, nothing pending), that only the log says it is registered, the retry backoff, and the "
        "active controller's answer and RegisterControllerRecord.",
        "core/src/main/scala/kafka/server/ControllerRegistrationManager.scala; "
        f"{_CONTROLLER}ClusterControlManager.registerController, replay(RegisterControllerRecord)",
        "KIP-919",
        "A successful RPC does not mark the controller registered: only its record in the log does.",
    ),
    "4.2": Section(
        "DescribeCluster (apiKey 60)",
        "Endpoint-type checks (unknown, mismatched), what a broker lists (brokers on the listener, fenced ones only "
        "on request at v2, a random unfenced broker as controller) and what a controller lists (registered "
        "controllers, the Raft leader).",
        "core/src/main/scala/kafka/server/AuthHelper.scala computeDescribeClusterResponse; KafkaApis and "
        "ControllerApis handleDescribeCluster",
        "KIP-919 (endpoint type); KIP-1073 (includeFencedBrokers, isFenced)",
        "A controller requires ALTER on CLUSTER, a broker DESCRIBE only.",
    ),
    "4.3": Section(
        "Admin client bootstrap",
        "Exactly one of bootstrap.servers and bootstrap.controllers; the endpoint type each implies; fenced brokers "
        "never from a controller; fields a request version cannot carry are refused.",
        "clients/src/main/java/org/apache/kafka/clients/admin/internals/AdminBootstrapAddresses.java; "
        "KafkaAdminClient.describeCluster",
        "KIP-919 (bootstrap.controllers); KIP-1073",
    ),
    "4.4": Section(
        "kafka-cluster",
        "The sub-commands, the list-endpoints columns and widths (RACK always, STATE only through brokers), and the "
        "messages for refused option combinations.",
        "tools/src/main/java/org/apache/kafka/tools/ClusterTool.java",
        "KIP-1073 (list-endpoints)",
        "KIP-1073's node listing shipped as list-endpoints; there is no list-nodes.",
    ),
    "4.5": Section(
        "Storage: meta.properties and kafka-storage",
        "How a log directory's meta.properties is read (Java properties syntax, version 0 or 1, the keys each "
        "version requires), how the directories of one node must agree (cluster id, node id, distinct directory "
        "ids), and what kafka-storage format writes into each empty directory (meta.properties with a fresh "
        "directory id, or the one --initial-controllers gives this voter's metadata directory, and the bootstrap "
        "snapshot 0-0 under __cluster_metadata-0) and what info reports.",
        "metadata/src/main/java/org/apache/kafka/metadata/properties/MetaProperties.java, "
        "MetaPropertiesEnsemble.java, PropertiesUtils.java; metadata/src/main/java/org/apache/kafka/metadata/"
        "storage/Formatter.java; tools/src/main/java/org/apache/kafka/tools/StorageTool.java",
        "KIP-631 (storage tool); KIP-858 (directory ids); KIP-853 (formatting controllers)",
        "KIP-631 formats with a cluster id only; Kafka also writes a directory id per log directory (KIP-858) and "
        "the bootstrap snapshot carrying metadata.version.",
    ),
    "5": Section(
        "Metadata records and metadata.version",
        "How a metadata record is framed (frame version 1, apiKey, record version, flexible body) and the "
        "metadata.version levels the record versions and features depend on.",
        "server-common/src/main/java/org/apache/kafka/server/common/serialization/AbstractApiMessageSerde.java; "
        "server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java",
        "KIP-631 (record framing); KIP-778 (metadata.version)",
    ),
    "5.1": Section(
        "Where the metadata log lives",
        "The __cluster_metadata-0 folder: segments named by base offset, snapshots named by end offset and epoch "
        "(the bootstrap snapshot is 0-0), leader-epoch-checkpoint and quorum-state; a snapshot is a header control "
        "batch (with KRaftVersion and Voters from kraft.version 1), data batches and a footer control batch.",
        "raft/src/main/java/org/apache/kafka/snapshot/Snapshots.java, RecordsSnapshotWriter.java; "
        "clients/src/main/java/org/apache/kafka/common/Uuid.java (METADATA_TOPIC_ID)",
        "KIP-630 (snapshots); KIP-853",
    ),
    "5.2": Section(
        "Record batches (magic v2)",
        "The 61-byte big-endian batch header (base offset, length, partition leader epoch, magic 2, CRC-32C over "
        "the rest, attributes with the control bit, offsets and timestamps, producer fields, record count) and "
        "each record's varint framing.",
        "clients/src/main/java/org/apache/kafka/common/record/internal/DefaultRecordBatch.java, DefaultRecord.java",
        "KIP-98 (message format v2)",
    ),
    "5.3": Section(
        "Metadata record framing",
        "A record value is the frame version (1), the apiKey and the record version as unsigned varints, then the "
        "body; frame version 0, an unknown apiKey or bytes left after the body are errors.",
        "server-common/src/main/java/org/apache/kafka/server/common/serialization/AbstractApiMessageSerde.java; "
        "metadata/src/main/java/org/apache/kafka/metadata/MetadataRecordSerde.java",
        "KIP-631 (record format)",
        "The serde's own comment names frame version 0, the code writes 1.",
    ),
    "5.4": Section(
        "Flexible-version field encoding",
        "Fixed-width integers, compact strings, arrays and bytes as length+1 varints (0 for null), UUIDs as 16 "
        "bytes, and the tagged-field section after the untagged fields.",
        "clients/src/main/java/org/apache/kafka/common/protocol/ (generated message readers and writers)",
        "KIP-482 (tagged fields)",
    ),
    "5.5": Section(
        "Metadata record types and the versions written",
        "Each record type's apiKey and valid versions, and which version the controller writes at each "
        "metadata.version.",
        "metadata/src/main/resources/common/metadata/*.json; "
        "server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java",
        "KIP-631; KIP-778",
    ),
    "5.6": Section(
        "metadata.version levels",
        "The feature levels from 3.0-IV1 (1) to 4.4-IV0, which changed the metadata, the 4.x minimum (3.3-IV3, 7) "
        "and what each gates.",
        "server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java",
        "KIP-778 (metadata.version); KIP-584 (feature versions)",
    ),
    "5.7": Section(
        "What the key record fields mean",
        "Defaults and sentinels of the records the audit reads (a RegisterBrokerRecord is fenced by default; "
        "BrokerRegistrationChangeRecord fenced 1/-1/0; PartitionChangeRecord leader -2 unchanged and null lists "
        "unchanged; PartitionRecord epochs), and the bootstrap records of a new cluster.",
        "metadata/src/main/resources/common/metadata/*.json; "
        f"{_CONTROLLER}ClusterControlManager.java, ReplicationControlManager.java (replay)",
        "KIP-631",
    ),
    "5.8": Section(
        "Record field tables",
        "Every field of every metadata record: the versions it exists in, nullable versions, tag numbers.",
        "metadata/src/main/resources/common/metadata/*.json",
        "KIP-631",
    ),
    "5.9": Section(
        "Control records",
        "LeaderChangeMessage, SnapshotHeader/Footer, KRaftVersion and Voters records (version 0, flexible) and the "
        "control record key (two int16s: version 0 and the type).",
        "raft/src/main/resources/common/message/*.json; "
        "clients/src/main/java/org/apache/kafka/common/record/internal/ControlRecordType.java",
        "KIP-595; KIP-630; KIP-853",
    ),
    "5.10": Section(
        "The quorum-state file's JSON",
        "The camelCase keys of quorum-state per data_version (clusterId, appliedOffset and currentVoters only in "
        "0, votedDirectoryId from 1) and their defaults.",
        "raft/src/main/resources/common/message/QuorumStateData.json; "
        f"{_RAFT}FileQuorumStateStore.java",
        "KIP-595; KIP-853",
    ),
}
"""The sections, keyed by number (``"1.5"``); ``§1.5`` cites one."""
