"""Scenes from Python: loading, setting values by dotted path, and the errors."""

import math

import pytest

import wobble

CLOTH = "scenes/bench/cloth-32.toml"


def test_load_set_and_read_back(repo):
    s = wobble.Scene.load(repo / CLOTH)
    assert s.dt == 1e-4 and s.steps == 1000
    assert s.set("simulation.dt", 2e-4) is s
    assert s.dt == 2e-4 and s.steps == 1000
    s.set("simulation.steps", 250)
    assert s.steps == 250
    s.set("body.cloth.springs.structural.stiffness", 800.0).set("simulation.integrator", "rk4")
    assert "stiffness = 800.0" in s.text and 'integrator = "rk4"' in s.text
    assert s.name.endswith("(with --set)")
    copy = s.copy()
    copy.set("simulation.dt", 5e-5)
    assert s.dt == 2e-4 and copy.dt == 5e-5


def test_values_of_every_python_type_become_toml(repo):
    s = wobble.Scene.load(repo / CLOTH)
    s.set("body.cloth.velocity", [0.0, 1, 0.5]).set("body.cloth.ny", 12).set("simulation.steps", 7)
    assert "velocity = [0.0, 1, 0.5]" in s.text and "ny = 12" in s.text
    w = s.build(threads=1)
    assert w.particle_count == 12 * 32
    assert tuple(w.velocities()[5]) == (0.0, 1.0, 0.5)


def test_numpy_scalars_are_numbers(repo):
    np = pytest.importorskip("numpy")
    s = wobble.Scene.load(repo / CLOTH)
    s.set("body.cloth.ny", np.int64(10)).set("simulation.dt", np.float64(2e-4)).set("body.cloth.mass", np.float32(0.5))
    assert "ny = 10" in s.text and s.dt == 2e-4 and "mass = 0.5" in s.text
    assert s.build(threads=1).particle_count == 320


def test_from_toml_and_relative_meshes(repo):
    text = "[[body]]\ntype = \"cloth\"\nnx = 4\nny = 3\n"
    w = wobble.Scene.from_toml(text).build(threads=1)
    assert w.particle_count == 12 and w.bodies == ["cloth"]


@pytest.mark.parametrize(
    "key, value, message, where",
    [
        ("simulation.dt", -1.0, "`dt` = -1 must be positive", (13, 6)),
        ("simulation.dt", math.nan, "nan is not a finite number", None),
        ("simulation.dt", math.inf, "inf is not a finite number", None),
        ("body.cloth.springs.structural.stifness", 5, "did you mean `stiffness`?", (34, 57)),
        ("body.clth.mass", 2, "did you mean `cloth`?", None),
        ("simulation.dt", {"a": 1}, "a dict is not a scene value", None),
        ("simulation..dt", 1, "is not a key of a path", None),
    ],
)
def test_bad_values_raise_scene_error_with_place_and_advice(repo, key, value, message, where):
    s = wobble.Scene.load(repo / CLOTH)
    before = s.text
    with pytest.raises(wobble.SceneError) as info:
        s.set(key, value)
    assert message.lower() in str(info.value).lower(), str(info.value)
    assert isinstance(info.value, ValueError)
    if where is not None:
        assert (info.value.line, info.value.column) == where, str(info.value)
        assert info.value.file.endswith("cloth-32.toml (with --set)")
    assert s.text == before, "a failed set leaves the scene as it was"


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(wobble.SceneError, match="cannot read the scene file"):
        wobble.Scene.load(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[body]]\ntype = \"cloth\"\nmas = 1\n")
    with pytest.raises(wobble.SceneError) as info:
        wobble.Scene.load(bad)
    assert info.value.line == 3 and "did you mean `mass`?" in str(info.value)


def test_build_checks_threads(repo):
    s = wobble.Scene.load(repo / CLOTH)
    with pytest.raises(ValueError, match="at least 1"):
        s.build(threads=0)
