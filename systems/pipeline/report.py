"""Cloth report: the numbers a headless run prints — particles, worst strain, lowest point, NaN."""
from __future__ import annotations

from typing import Any

import numpy as np

from loom.components import STRETCH, Cloth
from loom.engine import App


def cloth_report(app: App) -> dict[str, Any]:
    """Return particles, max_strain (worst structural elongation, fraction), min_y [m], nan and rejected_steps."""
    clothes = [cloth for _, cloth in app.query(Cloth)]
    strains = [cloth.strain(STRETCH) for cloth in clothes]
    strains = [s for s in strains if s.size]
    return {
        "cloths": len(clothes),
        "particles": sum(c.particle_count for c in clothes),
        "max_strain": round(float(max((s.max() for s in strains), default=0.0)), 6),
        "min_y": round(float(min((c.x[:, 1].min() for c in clothes), default=0.0)), 6),
        "nan": bool(any(not np.isfinite(c.x).all() for c in clothes)),
        "rejected_steps": sum(c.rejected_steps for c in clothes),
    }
