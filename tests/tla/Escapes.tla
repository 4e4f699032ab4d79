---- MODULE Escapes ----
\* Two states whose values exercise dot escaping: quotes, backslashes, model values, a function
\* that is not a record, and a value longer than 200 characters.
EXTENDS Naturals, Sequences, TLC
CONSTANTS a, b
VARIABLES msg, log, owner

Entry(i) == [text |-> "say \"hi\" \\ bye", index |-> i, peers |-> {a, b}, votes |-> (a :> TRUE @@ b :> FALSE)]
Init == /\ msg = "say \"hi\" \\ bye"
        /\ log = <<>>
        /\ owner = (1 :> a @@ 3 :> b)
Write == /\ log = <<>>
         /\ log' = [i \in 1..4 |-> Entry(i)]
         /\ UNCHANGED <<msg, owner>>
Next == Write
====
