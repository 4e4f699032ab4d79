"""Real Apache Kafka KRaft clusters on this machine (``kraftspec cluster``): fetched with Maven, formatted with
Kafka's own storage tool, started as separate JVM processes (each on a test host in its own network namespace, or
on 127.0.0.1 ports where namespaces cannot be used), broken on purpose by seeded
fault scenarios, and checked: the audit of every data directory, the quorum audit across the replicas'
metadata logs, and the cluster's live answers against what the reference computes from the audited log.
"""
