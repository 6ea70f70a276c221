"""Meters: what the solve leaves before the deformation limit clamps it, and what the limit then does (opt-in).

``MeterPlugin`` (not in DefaultPlugins; add it after the XPBD plugins) adds three systems for every XPBD cloth:
- ``meter_before`` (SUBSTEP, set ``ClothSet.SETTLE``, after ``settle_yarns`` and before ``limit_links``): at every
  substep, the warp/weft (stretch-link) strain the solve and the contacts left — worst and a histogram for the p99
  over every link and substep — and the worst shear-link (diagonal) strain; it copies the positions;
- ``meter_after`` (SUBSTEP, right after ``limit_links``): how far the limit moved any particle this substep [m],
  and whether it moved one at all (the share of substeps in which it acts);
- ``meter_step`` (POST_STEP, after ``ClothSet.GUARD``): once per step, each triangle's area over its rest area (min
  and a histogram for the p1), each corner angle's change from rest [rad] (worst), and the fastest particle's
  step-to-step speed [m/s] (worst over the last ``SPEED_WINDOW`` steps, and now).

All work is numba kernels over the cloth's arrays; the meters only read ``cloth.x`` (results stay bit for bit).
Read them with ``app.resource(Meters).record(entity)``.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from loom.components import Cloth
from loom.engine import App, Stage
from loom.systems.shared.model_index import cloths_of
from loom.systems.shared.plan import Plan, run
from loom.systems.sets import ClothSet

MODEL = "xpbd"
BINS = 10_000
"""Histogram bins of the strain (over [0, STRAIN_TOP)) and of the area ratio (over [0, AREA_TOP))."""
STRAIN_TOP = 1.0
"""Upper end of the strain histogram [-]; a strain at or above it falls in the last bin (bin width 1e-4)."""
AREA_TOP = 2.0
"""Upper end of the area-ratio histogram [-] (bin width 2e-4)."""
SPEED_WINDOW = 60
"""Steps over which ``speed_max_recent`` is the worst (1 s at 60 Hz)."""

# acc columns
_STRETCH, _SHEAR, _CORR, _ANGLE, _AREA, _SPEED = range(6)
# counts columns
_SUBSTEPS, _ACTIVE, _STEPS = range(3)


class ClothMeters:
    """One cloth's meters: accumulators, histograms and rest data (arrays the kernels write in place)."""

    def __init__(self, cloth: Cloth) -> None:
        self.cloth = cloth
        self.kinds = np.ascontiguousarray(cloth.link_kind[cloth.link_order]).astype(np.int8)
        self.acc = np.zeros(6)
        self.acc[_AREA] = np.inf
        self.counts = np.zeros(3, np.int64)
        self.strain_hist = np.zeros(BINS, np.int64)
        self.area_hist = np.zeros(BINS, np.int64)
        self.x_before = np.zeros_like(cloth.x)
        self.x_step = np.array(cloth.x, copy=True)
        self.speeds = np.zeros(SPEED_WINDOW)
        self.triangles = np.ascontiguousarray(cloth.triangles, dtype=np.int64)
        rest = np.asarray(cloth.rest_x, np.float64)
        self.rest_area = np.zeros(len(self.triangles))
        self.rest_angle = np.zeros((len(self.triangles), 3))
        _triangle_shape(rest, self.triangles, self.rest_area, self.rest_angle)

    def record(self) -> dict:
        """The numbers so far: strains [-], angles [rad], corrections [m], speeds [m/s], shares [-]."""
        substeps = max(int(self.counts[_SUBSTEPS]), 1)
        return {
            "stretch_before_limit_worst": float(self.acc[_STRETCH]),
            "stretch_before_limit_p99": _quantile(self.strain_hist, 0.99, STRAIN_TOP),
            "shear_stretch_worst": float(self.acc[_SHEAR]),
            "angle_change_worst_rad": float(self.acc[_ANGLE]),
            "area_ratio_min": float(self.acc[_AREA]) if np.isfinite(self.acc[_AREA]) else 1.0,
            "area_ratio_p1": _quantile(self.area_hist, 0.01, AREA_TOP),
            "limit_active_share": float(self.counts[_ACTIVE]) / substeps,
            "limit_correction_max_m": float(self.acc[_CORR]),
            "speed_max_recent_mps": float(self.speeds.max()),
            "substeps": int(self.counts[_SUBSTEPS]),
            "steps": int(self.counts[_STEPS]),
        }


def _quantile(hist: np.ndarray, q: float, top: float) -> float:
    """The q-quantile of a histogram over [0, top): the upper edge of the bin holding it (0.0 if empty)."""
    total = int(hist.sum())
    if total == 0:
        return 0.0
    k = int(np.searchsorted(np.cumsum(hist), q * total))
    return (k + 1) * top / hist.shape[0]


class Meters:
    """Resource: every metered cloth's ``ClothMeters`` by entity (made when first seen, dropped with its cloth)."""

    def __init__(self) -> None:
        self.cloths: dict[int, ClothMeters] = {}

    def of(self, entity: int, cloth: Cloth) -> ClothMeters:
        """The meters of ``cloth`` (entity ``entity``), made anew if the cloth or its arrays were replaced."""
        m = self.cloths.get(entity)
        if m is None or m.cloth is not cloth or m.x_before.shape != cloth.x.shape or m.x_before.dtype != cloth.x.dtype:
            m = self.cloths[entity] = ClothMeters(cloth)
        return m

    def record(self, entity: int) -> dict:
        """The numbers of one cloth (``ClothMeters.record``); KeyError if it was never metered."""
        if entity not in self.cloths:
            raise KeyError(f"Meters.record({entity}): no XPBD cloth with this entity has been stepped with meters")
        return self.cloths[entity].record()


@numba.njit(cache=True)
def _triangle_shape(x, tris, area, angle):
    """Each triangle's area [m²] and its three corner angles [rad] into ``area`` (t,) and ``angle`` (t, 3)."""
    for t in range(tris.shape[0]):
        for c in range(3):
            a = tris[t, c]
            b = tris[t, (c + 1) % 3]
            d = tris[t, (c + 2) % 3]
            e0 = x[b, 0] - x[a, 0]; e1 = x[b, 1] - x[a, 1]; e2 = x[b, 2] - x[a, 2]
            f0 = x[d, 0] - x[a, 0]; f1 = x[d, 1] - x[a, 1]; f2 = x[d, 2] - x[a, 2]
            c0 = e1 * f2 - e2 * f1; c1 = e2 * f0 - e0 * f2; c2 = e0 * f1 - e1 * f0
            cross = math.sqrt(c0 * c0 + c1 * c1 + c2 * c2)
            angle[t, c] = math.atan2(cross, e0 * f0 + e1 * f1 + e2 * f2)
            if c == 0:
                area[t] = 0.5 * cross


@numba.njit(cache=True)
def _before(x, link_i, link_j, rest, kinds, acc, counts, hist, x_before):
    """Worst stretch/shear strain and the stretch strain histogram of this substep; copy x to x_before."""
    bins = hist.shape[0]
    worst = acc[0]
    shear = acc[1]
    for k in range(link_i.shape[0]):
        kind = kinds[k]
        if kind > 1:
            continue
        i = link_i[k]
        j = link_j[k]
        d0 = x[i, 0] - x[j, 0]; d1 = x[i, 1] - x[j, 1]; d2 = x[i, 2] - x[j, 2]
        s = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) / rest[k] - 1.0
        if kind == 0:
            if s > worst:
                worst = s
            b = int(s * bins / 1.0) if s > 0.0 else 0
            hist[min(b, bins - 1)] += 1
        elif s > shear:
            shear = s
    acc[0] = worst
    acc[1] = shear
    counts[0] += 1
    x_before[:] = x


@numba.njit(cache=True)
def _largest_move(x, ref):
    """The largest squared distance |x_p − ref_p|² of a particle from its reference position [m²]."""
    largest = 0.0
    for p in range(x.shape[0]):
        d0 = x[p, 0] - ref[p, 0]
        d1 = x[p, 1] - ref[p, 1]
        d2 = x[p, 2] - ref[p, 2]
        d = d0 * d0 + d1 * d1 + d2 * d2
        if d > largest:
            largest = d
    return largest


@numba.njit(cache=True)
def _after(x, x_before, acc, counts):
    """How far the limit moved a particle this substep [m] (worst so far) and whether it moved any."""
    moved = _largest_move(x, x_before)
    if moved > 0.0:
        counts[1] += 1
        moved = math.sqrt(moved)
        if moved > acc[2]:
            acc[2] = moved


@numba.njit(cache=True)
def _step(x, tris, rest_area, rest_angle, acc, counts, hist, x_step, speeds, inv_dt):
    """Per step: min area ratio and its histogram, worst corner-angle change, fastest particle [m/s]."""
    bins = hist.shape[0]
    area = np.empty(1)
    angle = np.empty((1, 3))
    one = np.empty((1, 3), np.int64)
    for t in range(tris.shape[0]):
        one[0, 0] = tris[t, 0]; one[0, 1] = tris[t, 1]; one[0, 2] = tris[t, 2]
        _triangle_shape(x, one, area, angle)
        r = area[0] / rest_area[t]
        if r < acc[4]:
            acc[4] = r
        hist[min(int(r * bins / 2.0), bins - 1)] += 1
        for c in range(3):
            a = abs(angle[0, c] - rest_angle[t, c])
            if a > acc[3]:
                acc[3] = a
    fastest = _largest_move(x, x_step)
    x_step[:] = x
    speed = math.sqrt(fastest) * inv_dt
    speeds[counts[2] % speeds.shape[0]] = speed
    acc[5] = speed
    counts[2] += 1


def meter_before(app: App, h: float) -> Plan:
    """Before the deformation limit, at every substep: stretch and shear strain as the solve and contacts left them."""
    meters = app.init_resource(Meters)
    calls = []
    for entity, cloth in cloths_of(app, MODEL):
        m = meters.of(entity, cloth)
        calls.append((_before, (cloth.x, cloth.link_i, cloth.link_j, cloth.link_rest, m.kinds, m.acc, m.counts,
                                m.strain_hist, m.x_before)))
    return run(calls)


def meter_after(app: App, h: float) -> Plan:
    """Right after the deformation limit, at every substep: how far it moved particles, and whether it moved any."""
    meters = app.init_resource(Meters)
    return run([(_after, (cloth.x, m.x_before, m.acc, m.counts))
                for entity, cloth in cloths_of(app, MODEL) for m in (meters.of(entity, cloth),)])


def meter_step(app: App, dt: float) -> None:
    """After the guard, once per step: triangle area ratios and angle changes, fastest particle speed [m/s]."""
    meters = app.init_resource(Meters)
    live = set()
    for entity, cloth in cloths_of(app, MODEL):
        live.add(entity)
        m = meters.of(entity, cloth)
        _step(cloth.x, m.triangles, m.rest_area, m.rest_angle, m.acc, m.counts, m.area_hist, m.x_step, m.speeds,
              1.0 / dt)
    for entity in [e for e in meters.cloths if e not in live]:
        del meters.cloths[entity]


class MeterPlugin:
    """Opt-in meters around the XPBD deformation limit (``Meters``); add after the XPBD plugins."""

    def build(self, app: App) -> None:
        app.insert_resource(Meters(), replace=False)
        app.add_system(meter_before, Stage.SUBSTEP, in_set=ClothSet.SETTLE, after="settle_yarns",
                       before="limit_links")
        app.add_system(meter_after, Stage.SUBSTEP, in_set=ClothSet.SETTLE, after="limit_links")
        app.add_system(meter_step, Stage.POST_STEP, after=ClothSet.GUARD, before=ClothSet.CLEAR)


__all__ = ["Meters", "ClothMeters", "MeterPlugin", "meter_before", "meter_after", "meter_step"]
