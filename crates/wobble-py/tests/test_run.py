"""Runs from Python (`Scene.run`, `wobble.resume`): the folder `wobble run` writes,
byte for byte; refusals; Ctrl-C ends the run interrupted and resumable."""

import json
import signal
import textwrap
import time
from pathlib import Path

import pytest

import wobble
from conftest import run_cli, start_python

CLOTH = "scenes/bench/cloth-32.toml"
CLOTH64 = "scenes/bench/cloth-64.toml"
SETS = {"simulation.steps": 150, "output.frame_every": 20, "output.metrics_every": 5, "output.formats": ["ply", "vtu"]}


def _scene(repo):
    s = wobble.Scene.load(repo / CLOTH)
    for k, v in SETS.items():
        s.set(k, v)
    return s


def _cli_args():
    def value(v):
        return "[" + ", ".join(f'"{x}"' for x in v) + "]" if isinstance(v, list) else str(v)

    return [a for k, v in SETS.items() for a in ("--set", f"{k}={value(v)}")]


def _files(d: Path):
    """Every file below `d` but those that hold wall-clock or command-line facts."""
    skip = {"run.json", "timing.json", "checkpoint.bin"}
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and p.name not in skip}


def test_a_run_from_python_writes_the_cli_folder_byte_for_byte(repo, wobble_bin, tmp_path):
    o = run_cli(wobble_bin, "run", CLOTH, "--out", tmp_path / "cli", "-q", *_cli_args())
    assert o.returncode == 0, o.stderr
    r = _scene(repo).run(tmp_path / "py", threads=2)
    assert r["status"] == "finished" and r["steps"] == 150 and r["frames"] == 150 // 20 + 1, r
    assert r["error"] is None and r["steps_per_second"] > 0
    cli, py = _files(tmp_path / "cli"), _files(tmp_path / "py")
    assert sorted(cli) == sorted(py)
    different = [name for name in cli if cli[name] != py[name] and name != "summary.json"]
    assert not different, f"files differ from the CLI's: {different}"
    # The summary names the scene's folder as given; everything else in it is equal.
    a, b = json.loads(cli["summary.json"]), json.loads(py["summary.json"])
    for key in ("scene", "scene_dir"):
        a.pop(key), b.pop(key)
    assert a == b
    manifest = json.loads((tmp_path / "py" / "run.json").read_text())
    assert manifest["status"] == "finished" and manifest["command_line"][:2] == ["python", "wobble.Scene.run"]


def test_runs_are_refused_as_the_cli_refuses_them(repo, tmp_path):
    s = _scene(repo)
    s.run(tmp_path / "out", steps=10, frames=False)
    with pytest.raises(ValueError, match="holds the outputs of an earlier run"):
        s.run(tmp_path / "out", steps=10)
    with pytest.raises(ValueError, match="has finished; there is nothing to resume"):
        wobble.resume(tmp_path / "out")
    assert s.run(tmp_path / "out", steps=10, overwrite=True)["status"] == "finished"
    (tmp_path / "stranger").mkdir()
    (tmp_path / "stranger" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds no wobble run"):
        s.run(tmp_path / "stranger")
    with pytest.raises(ValueError, match="the limit of 1.0 MiB"):
        s.run(tmp_path / "small", max_memory=1 << 20)
    with pytest.raises(ValueError, match="duration -1"):
        s.run(tmp_path / "neg", duration=-1.0)
    blow = wobble.Scene.load(repo / CLOTH).set("simulation.dt", 0.05).set("simulation.steps", 400)
    r = blow.run(tmp_path / "blow", frames=False)
    assert r["status"] == "blew-up" and "step" in r["error"], r


def test_ctrl_c_ends_a_run_interrupted_and_resume_finishes_it_bit_for_bit(repo, tmp_path):
    # cloth-64 takes about 10,000 steps/s on one thread here: the signal comes
    # a few thousand steps in, far from both ends.
    steps = 30000
    code = textwrap.dedent(
        f"""
        import wobble
        s = wobble.Scene.load({str(repo / CLOTH64)!r})
        s.set("simulation.steps", {steps}).set("output.frame_every", 997).set("output.metrics_every", 50)
        print("ready", flush=True)
        try:
            s.run({str(tmp_path / "cut")!r}, threads=1)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """
    )
    p = start_python(code)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.4)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        # A child the signal missed must not keep stepping into the next tests.
        p.kill()
    assert p.returncode == 0 and out.strip() == "interrupted", (out, err)
    manifest = json.loads((tmp_path / "cut" / "run.json").read_text())
    assert manifest["status"] == "interrupted" and 0 < manifest["steps_done"] < steps, manifest

    r = wobble.resume(tmp_path / "cut", threads=2)
    assert r["status"] == "finished" and r["first_step"] == manifest["steps_done"] and r["steps"] == steps, r
    s = wobble.Scene.load(repo / CLOTH64)
    s.set("simulation.steps", steps).set("output.frame_every", 997).set("output.metrics_every", 50)
    assert s.run(tmp_path / "whole", threads=2)["status"] == "finished"
    cut, whole = _files(tmp_path / "cut"), _files(tmp_path / "whole")
    assert sorted(cut) == sorted(whole)
    assert [n for n in cut if cut[n] != whole[n]] == []
