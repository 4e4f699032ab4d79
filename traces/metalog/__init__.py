"""Readers for KRaft metadata logs: record batches, metadata records, snapshots and the files beside them."""
