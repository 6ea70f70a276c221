"""The guard refuses steps that explode, not only those that reach NaN."""
from __future__ import annotations

import numpy as np

from loom.components import Cloth, MassSpringSettings, Pin
from loom.engine import mesh


def test_guard_refuses_an_exploding_explicit_integrator_before_it_overflows(make_app):
    # k = 200 N/m at h = 1/240 s on a 64×64 sheet: h·ω ≈ 12, far past explicit Euler's limit;
    # the values grow through 1e60 while still finite, so a NaN check alone would never fire.
    app = make_app(substeps=4)
    sheet = mesh.grid(64, 64, 1.0, 1.0)
    cloth = Cloth.from_mesh(sheet, "cotton", model="mass_spring",
                            settings=MassSpringSettings(integrator="explicit_euler", strain_limit=None))
    app.spawn(cloth, Pin.corners(sheet, "top"))
    seen = []
    app.on("step_rejected", lambda **event: seen.append(event))
    app.step(30)
    assert cloth.rejected_steps > 0 and len(seen) == cloth.rejected_steps
    assert np.abs(cloth.x).max() <= 1e6 and np.abs(cloth.v).max() <= 1e4, "an exploded state was kept"


def test_guard_lets_the_game_pull_two_held_particles_apart(make_app):
    # a rope of three: two held particles the game drags 1 m apart (their link at 40× its rest
    # length) and one hanging from the second; the game put both ends there, so the step stands
    app = make_app()
    rope = Cloth.from_particles([[0.0, 0.0, 0.0], [0.025, 0.0, 0.0], [0.025, -0.025, 0.0]], mass=0.01,
                                links=[[0, 1], [1, 2]], tethers=False)
    pin = Pin(index=[0, 1])
    app.spawn(rope, pin)
    app.step(1)
    pin.target[1] += (1.0, 0.0, 0.0)
    app.step(3)
    assert rope.rejected_steps == 0
    assert np.array_equal(rope.x[pin.index], pin.target)
    assert abs(np.linalg.norm(rope.x[2] - rope.x[1]) - 0.025) < 1e-3, "the hanging particle follows its link"
