"""The accuracy zoo (registry) and its run (benchmarks/accuracy.py --zoo)."""
