"""Friction against its laws: where cloth starts to slide, compared with Coulomb and the capstan equation (issue 44,
item 8: "the Coulomb/capstan friction threshold within ±20 %").

- **Coulomb, on an incline.** A cotton patch lies on a box tilted by θ. Coulomb's law (Amontons–Coulomb: static
  friction holds while the tangential force is at most μ times the normal force) says it stays while tan θ ≤ μ
  (μ = √(μ_cloth·μ_box), the combination the contacts use). At tan θ = 0.8 μ it must hold; at 1.2 μ it must slide.
- **Capstan, over an edge.** A strip lies on a box's top with a fraction f of its length hanging down the side
  (tests/test_friction.py's scene). Coulomb on the top and the capstan (Euler–Eytelwein) law T_hang/T_top ≤ e^{μφ}
  over the φ = 90° edge hold it while f/(1 − f) ≤ μ·e^{μπ/2}: f* = 0.61 for μ = 0.6. At 0.8 f* it must hold; at
  1.2 f* it must slide.

Holding means the patch's centre moves less than 1 mm over the last 2 s of 4 s (a creep of 0.5 mm/s would
show as 1 mm); sliding means it moves more than 5 cm in those 2 s. Every step is checked before the guard
(no refused step).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from loom.components import Box, Cloth, ClothMaterial, Collider, Transform
from loom.engine import mesh

MU = 0.5
"""Friction coefficient of both the cloth and the box [-] (combined: √(μ·μ) = μ)."""
HOLD_LIMIT = 1e-3
"""Largest move [m] of a holding patch over the last 2 s."""
SLIDE_LIMIT = 0.05
"""Smallest move [m] of a sliding patch over the last 2 s."""


def _refusals(app) -> int:
    return sum(int(cloth.rejected_steps) for _, cloth in app.query(Cloth))


def _on_incline(make_app, tan_theta: float) -> tuple[float, int]:
    """A 0.3 m cotton patch resting on a 3 m box tilted to slope tan θ, released at rest: (how far its centre
    moves [m] between 2 s and 4 s, refused steps)."""
    theta = math.atan(tan_theta)
    app = make_app(substeps=8)
    incline = Transform.from_axis_angle((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), theta)
    app.spawn(Collider(Box((1.5, 0.1, 0.5)), friction=MU), incline)
    thickness = 0.01
    patch = mesh.grid(13, 13, 0.3, 0.3, center=(0.0, 0.0, 0.0), plane="xz")
    cloth = Cloth.from_mesh(patch, ClothMaterial.preset("cotton", friction=MU), thickness=thickness)
    local = cloth.x.copy()
    local[:, 1] = 0.1 + thickness                    # on the top face, one thickness above it
    cloth.x = local @ incline.rotation.T
    cloth.x_prev = cloth.x.copy()
    app.spawn(cloth)
    app.step(120)
    before = cloth.x.mean(axis=0)
    app.step(120)
    assert np.isfinite(cloth.x).all()
    return float(np.linalg.norm(cloth.x.mean(axis=0) - before)), _refusals(app)


@pytest.mark.parametrize("ratio, holds", [(0.8, True), (1.2, False)], ids=["tan 0.8 mu holds", "tan 1.2 mu slides"])
def test_coulomb_a_patch_on_an_incline_holds_below_tan_theta_mu_and_slides_above(make_app, ratio, holds):
    moved, refused = _on_incline(make_app, ratio * MU)
    assert refused == 0
    if holds:
        assert moved < HOLD_LIMIT, f"tan θ = {ratio} μ: moved {moved * 1e3:.2f} mm in 2 s (Coulomb: it holds)"
    else:
        assert moved > SLIDE_LIMIT, f"tan θ = {ratio} μ: moved {moved * 1e3:.2f} mm in 2 s (Coulomb: it slides)"


def _over_edge(make_app, overhang: float, mu: float) -> tuple[float, int]:
    """tests/test_friction.py's strip with ``overhang`` of its length hanging: (how far its far end on the top
    moves [m] between 2 s and 4 s, refused steps)."""
    app = make_app(substeps=8)
    app.spawn(Collider(Box((0.6, 0.3, 0.3)), friction=mu), Transform(position=(-0.6, -0.3, 0.0)))
    length = 1.0
    sheet = mesh.grid(41, 5, length, 0.1, center=(0.0, 0.0, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet, ClothMaterial.preset("cotton", friction=mu), thickness=0.01)
    x = cloth.x.copy()
    s = x[:, 0] + length / 2                         # arc length from the far end [m]
    edge = (1.0 - overhang) * length
    top = s <= edge
    x[top, 0], x[top, 1] = s[top] - edge, 0.01
    x[~top, 0], x[~top, 1] = 0.01, 0.01 - (s[~top] - edge)
    cloth.x = x
    cloth.x_prev = x.copy()
    app.spawn(cloth)
    end = int(np.argmin(s))
    app.step(120)
    before = cloth.x[end].copy()
    app.step(120)
    assert np.isfinite(cloth.x).all()
    return float(np.linalg.norm(cloth.x[end] - before)), _refusals(app)


def capstan_threshold(mu: float) -> float:
    """The overhang fraction f* at which the strip starts to slide: f/(1 − f) = μ·e^{μπ/2}."""
    k = mu * math.exp(mu * math.pi / 2)
    return k / (1.0 + k)


@pytest.mark.parametrize("ratio, holds", [
    pytest.param(0.8, True, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "issue 44 item 8: the strip slides below the capstan threshold; measured: holds at f = 0.40 (0.66 f*), "
        "slides at 0.45 (0.74 f*)"))),
    (1.2, False)], ids=["0.8 f* holds", "1.2 f* slides"])
def test_capstan_a_strip_over_an_edge_holds_below_the_capstan_threshold_and_slides_above(make_app, ratio, holds):
    mu = 0.6
    f = ratio * capstan_threshold(mu)
    assert 0.0 < f < 1.0
    moved, refused = _over_edge(make_app, f, mu)
    assert refused == 0
    if holds:
        assert moved < HOLD_LIMIT, f"overhang {f:.3f} ({ratio} f*): moved {moved * 1e3:.2f} mm (capstan: holds)"
    else:
        assert moved > SLIDE_LIMIT, f"overhang {f:.3f} ({ratio} f*): moved {moved * 1e3:.2f} mm (capstan: slides)"
