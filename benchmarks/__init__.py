"""Loom benchmarks: ``python -m benchmarks <name> ...`` prints one JSON line per measurement."""
