"""Recording traces: seeded simulations (``kraftspec generate sim``) and paths through TLC's state graphs
(``kraftspec generate tla``)."""
