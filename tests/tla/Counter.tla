---- MODULE Counter ----
\* Two bounded counters: 3 * 2 = 6 distinct states, 7 transitions (4 IncX, 3 IncY).
EXTENDS Naturals
VARIABLES x, y

Init == x = 0 /\ y = 0
IncX == x < 2 /\ x' = x + 1 /\ UNCHANGED y
IncY == y < 1 /\ y' = y + 1 /\ UNCHANGED x
Next == IncX \/ IncY

TypeOK == x \in 0..2 /\ y \in 0..1
ReachesThree == <>(x = 3)
====
