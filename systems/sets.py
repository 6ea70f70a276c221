"""Public ordering handles: order your own systems against these sets, never against a function name."""
from __future__ import annotations

import enum


class ClothSet(enum.Enum):
    """System sets of the cloth pipeline, in run order within their stage.

    PRE_STEP:  SAVE → PIN_TARGETS → TETHERS → FORCES → SOLVE_STEP (whole-step solvers: implicit)
    SUBSTEP:   PREDICT → PIN → CONSTRAIN → COLLIDE → SELF_COLLIDE → SETTLE → UPDATE
    POST_STEP: GUARD → CLEAR
    """

    SAVE = "save"
    PIN_TARGETS = "pin_targets"
    TETHERS = "tethers"
    FORCES = "forces"
    SOLVE_STEP = "solve_step"
    PREDICT = "predict"
    PIN = "pin"
    CONSTRAIN = "constrain"
    COLLIDE = "collide"
    SELF_COLLIDE = "self_collide"
    SETTLE = "settle"
    UPDATE = "update"
    GUARD = "guard"
    CLEAR = "clear"


PRE_STEP_SETS = (ClothSet.SAVE, ClothSet.PIN_TARGETS, ClothSet.TETHERS, ClothSet.FORCES, ClothSet.SOLVE_STEP)
SUBSTEP_SETS = (ClothSet.PREDICT, ClothSet.PIN, ClothSet.CONSTRAIN, ClothSet.COLLIDE, ClothSet.SELF_COLLIDE,
                ClothSet.SETTLE, ClothSet.UPDATE)
POST_STEP_SETS = (ClothSet.GUARD, ClothSet.CLEAR)
