"""Kernels and helpers more than one concern uses: ``batch`` (many cloths in one kernel call),
``distance_limits`` (mass-weighted distance relaxation), ``conditions`` (run conditions), ``shapes``
(collider poses and signed distances), ``model_index`` (cloths by model, per-entity scratch dropped at
despawn), ``substep_model`` (the scratch and systems a substepped model's plugin registers), ``plan`` (a substep
system's plan for the rest of the step). Not systems: nothing here registers itself."""
