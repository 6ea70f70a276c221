"""Graph colouring of constraints: no two constraints of one colour share a particle.

Solving colour by colour is Gauss–Seidel across colours and Jacobi within one. Because the
constraints of a colour touch disjoint particles, the order inside a colour cannot change the
result: the serial and the parallel solver produce bit-identical positions for any thread count.
"""
from __future__ import annotations

import numba
import numpy as np


def color_order(elements: np.ndarray, particle_count: int) -> tuple[np.ndarray, np.ndarray]:
    """Colour ``elements`` (m, k) int32 particle tuples greedily; return (order, color_offsets).

    ``order`` (m,) int64 permutes the elements so each colour is contiguous (stable inside a
    colour); ``color_offsets`` (colors + 1,) int32 gives colour c the slice offsets[c]:offsets[c+1]."""
    # C-ordered int32 and writeable: a read-only array is another numba signature, compiled again (0.6 s cold)
    elements = np.require(elements, np.int32, ["C", "W"])
    m, k = elements.shape
    return color_groups(elements.reshape(-1), np.arange(0, m * k + 1, max(k, 1), dtype=np.int64)[:m + 1],
                        particle_count)


def color_groups(particles: np.ndarray, offsets: np.ndarray, particle_count: int) -> tuple[np.ndarray, np.ndarray]:
    """``color_order`` for groups of any size: group g is ``particles[offsets[g]:offsets[g + 1]]`` (a yarn of a
    cloth, ``loom.systems.xpbd.yarns``). Returns (order (groups,) int64, color_offsets (colors + 1,) int32)."""
    particles = np.require(particles, np.int32, ["C", "W"])
    offsets = np.require(offsets, np.int64, ["C", "W"])
    if offsets.shape[0] <= 1:
        return np.zeros(0, np.int64), np.zeros(1, np.int32)
    colors = _greedy_colors_call(particles, offsets, particle_count)
    order = np.argsort(colors, kind="stable")
    counts = np.bincount(colors)
    color_offsets = np.zeros(counts.size + 1, np.int32)
    np.cumsum(counts, out=color_offsets[1:])
    return order, color_offsets


@numba.njit(cache=True)
def _greedy_colors(particles, offsets, particle_count):
    """Give each group the smallest colour unused by its particles (first fit, in group order).

    Group g is particles[offsets[g]:offsets[g + 1]] (int32, int64 offsets); returns (groups,) int64 colours.
    Each particle keeps a 64-bit mask per block of 64 colours, so any number of colours is possible."""
    m = offsets.shape[0] - 1
    blocks = 1
    used = np.zeros((particle_count, blocks), np.uint64)
    colors = np.empty(m, np.int64)
    for e in range(m):
        block = 0
        while True:
            if block == blocks:                       # grow: a particle of very high valence
                grown = np.zeros((particle_count, blocks * 2), np.uint64)
                for p in range(particle_count):       # a loop: an array-to-slice copy compiles numba's
                    for c in range(blocks):           # shape-error formatting (seconds of a first launch)
                        grown[p, c] = used[p, c]
                used = grown
                blocks *= 2
            mask = np.uint64(0)
            for a in range(offsets[e], offsets[e + 1]):
                mask |= used[particles[a], block]
            if mask != np.uint64(0xFFFFFFFFFFFFFFFF):
                bit = 0
                while (mask >> np.uint64(bit)) & np.uint64(1):
                    bit += 1
                colors[e] = block * 64 + bit
                for a in range(offsets[e], offsets[e + 1]):
                    used[particles[a], block] |= np.uint64(1) << np.uint64(bit)
                break
            block += 1
    return colors


_greedy_colors_call = _greedy_colors
"""What ``color_groups`` calls: the kernel, or on a cold launch its Python twin for a small cloth (the launch tooling
binds this name, ``loom.launch.cold_kernels``; the frame itself never chooses)."""
