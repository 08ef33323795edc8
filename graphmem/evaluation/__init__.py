"""evaluation: the benchmarks and evaluations behind `graphmem eval` and `graphmem bench`."""

from collections.abc import Callable

# What every evaluation reports its progress to: (label, done, total), one bar per label.
Progress = Callable[[str, int, int], None]
