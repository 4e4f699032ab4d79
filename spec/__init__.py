"""TLA+ modules (package data) and the bridge that runs TLC on them from Python."""
