"""Task (one replica's maths), step (compiled, distributed), loop (cadence), warm-up."""
