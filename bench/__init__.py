"""The benchmark suite: ``python -m bench [--quick]`` (``make bench``)."""
