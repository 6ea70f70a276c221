"""Kernels and helpers more than one concern uses: ``batch`` (many cloths in one kernel call),
``distance_limits`` (mass-weighted distance relaxation), ``conditions`` (run conditions), ``shapes``
(collider poses and signed distances). Not systems: nothing here registers itself."""
