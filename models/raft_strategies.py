"""Public Hypothesis strategies for the KRaft quorum: epochs, logs, and requests (rules §3)."""

from __future__ import annotations

from hypothesis import strategies as st

from kraftspec.reference.raft_log import RaftLog, log_of_epochs
from kraftspec.reference.raft_messages import FetchRequest, VoteRequest


def epochs(max_epoch: int = 6) -> st.SearchStrategy[int]:
    """A leader epoch, 0 (the primordial epoch) to ``max_epoch``."""
    return st.integers(min_value=0, max_value=max_epoch)


def epoch_sequences(max_length: int = 8, max_epoch: int = 6) -> st.SearchStrategy[tuple[int, ...]]:
    """Epochs per offset of a log: non-decreasing, each at least 1 (records are only written by leaders)."""
    return st.lists(st.integers(1, max_epoch), max_size=max_length).map(lambda es: tuple(sorted(es)))


def logs(max_length: int = 8, max_epoch: int = 6) -> st.SearchStrategy[RaftLog]:
    """A flushed :class:`RaftLog` with the epoch cache its entries imply."""
    return epoch_sequences(max_length, max_epoch).map(log_of_epochs)


def replica_ids(max_id: int = 4) -> st.SearchStrategy[int]:
    """A node id, voters and observers alike."""
    return st.integers(min_value=0, max_value=max_id)


def vote_requests(max_epoch: int = 6, max_offset: int = 10) -> st.SearchStrategy[VoteRequest]:
    """Vote and pre-vote requests, valid or not (negative or too-new last epochs included)."""
    return st.builds(VoteRequest, replica_id=replica_ids(), replica_epoch=epochs(max_epoch),
                     last_offset_epoch=st.integers(-1, max_epoch),
                     last_offset=st.integers(-1, max_offset), pre_vote=st.booleans())


def fetch_requests(max_epoch: int = 6, max_offset: int = 10) -> st.SearchStrategy[FetchRequest]:
    """Fetch requests at any position and epoch, valid or not."""
    return st.builds(FetchRequest, replica_id=replica_ids(), current_leader_epoch=epochs(max_epoch),
                     fetch_offset=st.integers(-1, max_offset),
                     last_fetched_epoch=st.integers(-1, max_epoch), max_wait_ms=st.sampled_from((0, 500)))
