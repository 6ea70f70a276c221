"""Loom benchmarks: ``python -m loom.benchmarks <name> ...`` prints one JSON line per measurement."""
