"""Loom's launch tooling: what gets a game from its command line to a smooth first frame, outside the frame.

- ``runner``: the command line every game shares (``run_app``, ``parser``, ``--headless``, ``--record``, …);
- ``step_boundary``: the App's step boundary (``LaunchPlugin``, held by ``DefaultPlugins``): the thread count
  (``threads``: the OpenMP wait policy and the measuring ``ThreadTuner``), the later kernels (``later_kernels``) and
  the kernels rebound once ready (``cold_kernels``: Python and NumPy twins on a cold launch);
- ``compile_ahead``: a first launch compiles its kernel list on a second core; ``compile_progress`` says how far
  it is; ``kernel_cache``: warm launches load Loom's cached kernels without numba's registry refresh;
- ``record``: ``--record out.gif|mp4`` (Pillow, imageio: the ``record`` extra).

loom.launch imports ``loom.engine`` and itself only; the frame (``loom.engine``) imports none of it: it knows
only its one hook, ``App.step_boundary`` (``loom.engine.boundary.StepBoundary``). Systems declare their kernels'
twins here (``cold_kernels.python_twin``, ``called_from``).

Importing it first applies the thread policy (``threads.apply_policy``: ``GOMP_SPINCOUNT=10000`` unless set),
before anything can start numba's threads: ``import loom``'s first name, ``loom.systems`` and every game import
it before a kernel runs. It also makes numba load Loom's cached kernels without its registry refresh
(``kernel_cache.install``: a warm launch about 0.3 s sooner).
"""
from loom.launch import kernel_cache, threads
threads.apply_policy()
kernel_cache.install()

from loom.launch import cold_kernels, compile_ahead  # noqa: E402  (after the thread policy)
from loom.launch.compile_progress import show_compile_progress  # noqa: E402
from loom.launch.runner import (HEADLESS_FRAMES, WindowRunner, check_outputs, open_recorder, parser,  # noqa: E402
                                print_report, run_app)
from loom.launch.step_boundary import LaunchBoundary, LaunchPlugin, install  # noqa: E402

__all__ = ["HEADLESS_FRAMES", "LaunchBoundary", "LaunchPlugin", "WindowRunner", "check_outputs", "cold_kernels",
           "compile_ahead", "install", "open_recorder", "parser", "print_report", "run_app", "show_compile_progress",
           "threads"]
