---- MODULE SyntaxError ----
EXTENDS Naturals
VARIABLES x

Init == x = 0
Next == x' = x + + 1
====
