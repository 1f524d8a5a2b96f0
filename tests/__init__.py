"""yuezheng's tests, and the rigs they share (JACK receivers, network namespaces, bounded CLI
runs): a regular package, so that ``tests.netns`` is this one wherever it is imported from
(benchmarks too) and no installed distribution's own ``tests`` can stand in for it."""
