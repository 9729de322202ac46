"""The engine: collect offsets, keep windows, evaluate partitions, diagnose causes, one check."""
