"""Stretch next to every cost: the worst and 99th-percentile elongation of the cloths' stretch links.

Real fabric stretches 1–3 %; a benchmark that reports speed without stretch can hide rubber. Each
benchmark samples the stretch (``STRETCH`` links: length / rest − 1, in %) of every cloth after
some frames, outside its timers, and prints ``stretch_worst_pct`` (the largest over every sampled
frame and link) and ``stretch_p99_pct`` (the 99th percentile of all sampled link stretches).
"""
from __future__ import annotations

import numpy as np

from loom.components import STRETCH, Cloth
from loom.engine import App


class StretchMeter:
    """Collects the stretch of every cloth's stretch links, frame by frame."""

    def __init__(self) -> None:
        self._samples: list[np.ndarray] = []

    def sample(self, app: App) -> None:
        """Record the current stretch of every cloth of ``app``."""
        for _, cloth in app.query(Cloth):
            self._samples.append(cloth.strain(STRETCH))

    def record(self) -> dict[str, float]:
        """``stretch_worst_pct`` and ``stretch_p99_pct`` over everything sampled (NaN if nothing was)."""
        if not self._samples:
            return {"stretch_worst_pct": float("nan"), "stretch_p99_pct": float("nan")}
        strain = np.concatenate(self._samples)
        return {"stretch_worst_pct": round(100.0 * float(strain.max()), 3),
                "stretch_p99_pct": round(100.0 * float(np.percentile(strain, 99)), 3)}


def stretch_over(app: App, frames: int) -> dict[str, float]:
    """Step ``app`` ``frames`` more fixed steps, sampling after each; return ``StretchMeter.record()``."""
    meter = StretchMeter()
    for _ in range(frames):
        app.step(1)
        meter.sample(app)
    return meter.record()
