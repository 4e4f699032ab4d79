---- MODULE Lasso ----
\* x flips forever, so <>(x = 2) fails with a lasso back to the initial state.
EXTENDS Naturals
VARIABLES x
Init == x = 0
Flip == x' = 1 - x
Next == Flip
Spec == Init /\ [][Next]_x /\ WF_x(Next)
Never == <>(x = 2)
====
