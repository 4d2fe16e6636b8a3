"""`make bench`: the standard benchmark, which writes BENCHMARKS.md."""
