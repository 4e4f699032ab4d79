---- MODULE Election ----
\* Violates EpochBelowTwo after exactly two elections (the shortest trace is unique).
EXTENDS Naturals, Sequences
CONSTANTS Nodes
VARIABLES epoch, leader, log

Init == epoch = 0 /\ leader = "none" /\ log = <<>>
Elect(n) == /\ epoch' = epoch + 1
            /\ leader' = n
            /\ log' = Append(log, [node |-> n, epoch |-> epoch + 1])
Resign == /\ leader /= "none"
          /\ leader' = "none"
          /\ UNCHANGED <<epoch, log>>
Next == (\E n \in Nodes : Elect(n)) \/ Resign

EpochBelowTwo == epoch < 2
====
