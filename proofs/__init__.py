"""CrossHair contracts on the small rule functions of the reference."""
