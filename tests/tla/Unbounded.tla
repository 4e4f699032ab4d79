---- MODULE Unbounded ----
\* An infinite state space: TLC only stops when killed (used by the timeout test).
EXTENDS Naturals
VARIABLES a, b, c

Init == a = 0 /\ b = 0 /\ c = 0
Next == \/ a' = a + 1 /\ UNCHANGED <<b, c>>
        \/ b' = b + 1 /\ UNCHANGED <<a, c>>
        \/ c' = c + 1 /\ UNCHANGED <<a, b>>
====
