"""Third-party plugins by entry point, replacing core systems, plugin errors, and events."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from loom.components import Cloth, Collider, Pin, Plane, Tearable, Transform
from loom.engine import App, PluginError, Stage, mesh
from loom.engine import plugin as plugin_module
from loom.systems import ClothSet, DefaultPlugins

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "loom_vortex"


@pytest.fixture(scope="module")
def vortex_installed():
    """The example plugin package, installed (the README's test command installs it; this makes sure)."""
    names = {ep.name for ep in metadata.entry_points(group="loom.plugins")}
    if not {"vortex", "sewing"} <= names:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-e", str(EXAMPLE)], check=True)
        importlib.invalidate_caches()
    return importlib.import_module("loom_vortex")


def test_entry_point_plugins_are_discovered_and_run_in_declared_order(vortex_installed):
    app = App(plugins="auto")
    app.add_plugin(DefaultPlugins)
    assert {"VortexPlugin", "SewingPlugin"} <= set(app.plugins)
    order = app.schedule.names(Stage.SUBSTEP)
    assert order.index("solve_constraints") < order.index("sew") < order.index("collide_environment")
    assert "swirl" in app.schedule.names(Stage.PRE_STEP)
    app.close()


def test_a_core_system_is_replaced_by_name():
    app = App()
    app.add_plugin(DefaultPlugins)
    calls = []

    def my_self_collision(app: App, h: float) -> None:
        calls.append(h)

    app.replace_system("collide_self", my_self_collision)
    app.spawn(Cloth.from_mesh(mesh.grid(4, 4, 1.0, 1.0)))
    app.step()
    assert len(calls) == app.clock.substeps
    order = app.schedule.names(Stage.SUBSTEP)
    assert order.index("collide_environment") < order.index("collide_self") < order.index("update_velocities")
    app.close()


def test_a_core_plugin_can_be_left_out_and_replaced():
    app = App()
    app.add_plugin(DefaultPlugins.disable("SelfCollisionPlugin"))
    assert "collide_self" not in app.schedule.names(Stage.SUBSTEP)
    app.add_system(lambda app, h: None, Stage.SUBSTEP, name="my_collide_self", in_set=ClothSet.SELF_COLLIDE)
    assert "my_collide_self" in app.schedule.names(Stage.SUBSTEP)
    app.close()


class _BrokenEntryPoint:
    name, value = "broken", "loom_broken_plugin:Plugin"

    def load(self):
        raise ModuleNotFoundError("No module named 'loom_broken_plugin'")


def test_a_broken_plugin_gives_one_clear_error_naming_it(monkeypatch):
    monkeypatch.setattr(plugin_module.metadata, "entry_points", lambda group: [_BrokenEntryPoint()])
    with pytest.raises(PluginError, match=r"loom plugin 'broken' \(loom_broken_plugin:Plugin\) failed to import: "
                                          r"ModuleNotFoundError"):
        App(plugins="auto")


def test_a_plugin_that_fails_to_build_is_named(monkeypatch):
    class Exploding:
        def build(self, app):
            raise KeyError("missing resource")

    class EP:
        name, value = "exploding", "somewhere:Exploding"

        def load(self):
            return Exploding

    monkeypatch.setattr(plugin_module.metadata, "entry_points", lambda group: [EP()])
    with pytest.raises(PluginError, match=r"loom plugin 'exploding' failed to build: KeyError"):
        App(plugins="auto")


def _installed_plugin(site: Path, module: str, entry_point: str, source: str | None) -> None:
    """Install, into the folder ``site``, a distribution loom-broken-demo 0.3 declaring the loom plugin
    ``broken = <entry_point>``, and the package ``module`` with ``source`` as its __init__ (none if None)."""
    info = site / "loom_broken_demo-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: loom-broken-demo\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(f"[loom.plugins]\nbroken = {entry_point}\n")
    if source is not None:
        (site / module).mkdir()
        (site / module / "__init__.py").write_text(source)


def test_a_plugin_that_fails_to_import_names_its_entry_point_distribution_and_file(tmp_path, monkeypatch):
    _installed_plugin(tmp_path, "loom_broken_demo", "loom_broken_demo:BrokenPlugin",
                      "import loom_broken_demo_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError) as info:
        App(plugins="auto")                  # "broken" sorts before any other installed plugin
    message = str(info.value)
    assert message.startswith("loom plugin 'broken' (loom_broken_demo:BrokenPlugin) failed to import: "
                              "ModuleNotFoundError: No module named 'loom_broken_demo_missing_dependency'")
    assert "entry point: broken = loom_broken_demo:BrokenPlugin (group loom.plugins)" in message
    assert "distribution: loom-broken-demo 0.3" in message
    assert f"loaded from: {tmp_path / 'loom_broken_demo' / '__init__.py'}" in message
    assert "loom_broken_demo" not in sys.modules


def test_a_plugin_whose_module_is_missing_names_the_module_path(tmp_path, monkeypatch):
    _installed_plugin(tmp_path, "loom_broken_demo", "loom_broken_demo.plugins:BrokenPlugin", None)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError) as info:
        App(plugins="auto")
    message = str(info.value)
    assert "loom plugin 'broken' (loom_broken_demo.plugins:BrokenPlugin) failed to import: ModuleNotFoundError" \
        in message
    assert "distribution: loom-broken-demo 0.3" in message
    assert "loaded from: module loom_broken_demo.plugins (no file found for it)" in message


def test_installed_plugins_without_the_core_say_to_add_default_plugins(vortex_installed):
    app = App(plugins="auto")                # SewingPlugin orders between ClothSet.CONSTRAIN and COLLIDE: core sets
    with pytest.raises(ValueError) as info:
        app.step()
    message = str(info.value)
    found = re.search(r"sew \(added by plugin SewingPlugin\) orders against unknown system or set '(\w+)'", message)
    assert found and found[1] in ("CONSTRAIN", "COLLIDE"), message
    assert f"ClothSet.{found[1]}, a set of Loom's core pipeline" in message
    assert f"add loom.DefaultPlugins (or the plugin that defines ClothSet.{found[1]}) first" in message
    app.add_plugin(DefaultPlugins)          # the advice works: ordering is resolved when the App steps
    app.step()
    assert app.schedule.names(Stage.SUBSTEP).index("sew") > app.schedule.names(Stage.SUBSTEP).index(
        "solve_constraints")
    app.close()


def test_events_fire_with_payloads(make_app):
    app = make_app()
    events: dict[str, list[dict]] = {}
    for name in ("pin_released", "pin_grabbed", "collision_started", "step_rejected", "cloth_torn"):
        app.on(name, lambda name=name, **payload: events.setdefault(name, []).append(payload))
    floor = app.spawn(Collider(Plane()), Transform(position=(0.0, 0.0, 0.0)))
    sheet = mesh.grid(8, 8, 0.5, 0.5, center=(0.0, 0.3, 0.0), plane="xz")
    cloth = Cloth.from_mesh(sheet)
    pin = Pin.corners(sheet, "top")
    entity = app.spawn(cloth, pin)
    app.step(5)
    pin.release(0)
    app.step(60)
    pin.grab(0)
    app.step(1)
    assert events["pin_released"][0]["entity"] == entity
    assert events["pin_released"][0]["particles"] == [int(pin.index[0])]
    assert events["pin_grabbed"][0]["particles"] == [int(pin.index[0])]
    assert [e["collider"] for e in events["collision_started"]] == [floor], events.get("collision_started")
    # a cloth pulled apart tears
    torn = make_app()
    torn.on("cloth_torn", lambda **payload: events.setdefault("cloth_torn", []).append(payload))
    strip = mesh.grid(12, 4, 1.0, 0.3)
    band = Cloth.from_mesh(strip, "silk", tethers=False)
    ends = Pin(index=np.concatenate([strip.side("left"), strip.side("right")]))
    torn.spawn(band, ends, Tearable(tear_strain=0.2, tear_time=0.02))
    torn.step(1)
    ends.target[len(strip.side("left")):] += (1.0, 0.0, 0.0)          # yank the right end 1 m away
    torn.step(30)
    assert events.get("cloth_torn"), "pulling the strip apart should tear it"
