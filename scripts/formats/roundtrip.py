"""Round trip of wobble's frame files through real readers.

Usage: roundtrip.py RUN_DIR EXPECTED.json

EXPECTED.json (written by the Rust test that made the run) gives, per frame
file, the vertex count, triangle count, line count and the first vertex. Each
file is read by every reader that takes its format — plyfile, meshio, trimesh
and VTK for PLY; meshio and VTK for VTU; VTK's PVD reader for the series — and
the counts and coordinates must match exactly. Exits 1 on any mismatch.
"""
import json
import os
import sys

import meshio
import numpy as np
import plyfile
import trimesh
import vtk
from vtk.util.numpy_support import vtk_to_numpy

failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got}, expected {want}")


def main():
    run, expected_path = sys.argv[1], sys.argv[2]
    expected = json.load(open(expected_path))
    frames = os.path.join(run, "frames")
    for name, want in sorted(expected["frames"].items()):
        path = os.path.join(frames, name)
        first = want["first_vertex"]
        if name.endswith(".lines.ply"):
            ply = plyfile.PlyData.read(path)
            check(f"plyfile {name} vertices", ply["vertex"].count, want["vertices"])
            check(f"plyfile {name} segments", ply["face"].count, want["lines"])
            m = meshio.read(path)
            check(f"meshio {name} vertices", len(m.points), want["vertices"])
            lines = sum(len(c.data) for c in m.cells if c.type == "line")
            check(f"meshio {name} lines", lines, want["lines"])
            r = vtk.vtkPLYReader()
            r.SetFileName(path)
            r.Update()
            check(f"vtkPLYReader {name} points", r.GetOutput().GetNumberOfPoints(), want["vertices"])
        elif name.endswith(".ply"):
            ply = plyfile.PlyData.read(path)
            names = [e.name for e in ply.elements]
            check(f"plyfile {name} has no empty element", all(e.count > 0 for e in ply.elements), True)
            check(f"plyfile {name} vertices", ply["vertex"].count, want["vertices"])
            check(f"plyfile {name} faces", ply["face"].count if "face" in names else 0, want["triangles"])
            m = meshio.read(path)
            check(f"meshio {name} vertices", len(m.points), want["vertices"])
            tris = sum(len(c.data) for c in m.cells if c.type == "triangle")
            check(f"meshio {name} triangles", tris, want["triangles"])
            check(f"meshio {name} first vertex", [float(v) for v in m.points[0]], first)
            t = trimesh.load(path, process=False)
            check(f"trimesh {name} vertices", len(t.vertices), want["vertices"])
            if want["triangles"]:
                check(f"trimesh {name} faces", len(t.faces), want["triangles"])
            r = vtk.vtkPLYReader()
            r.SetFileName(path)
            r.Update()
            out = r.GetOutput()
            check(f"vtkPLYReader {name} points", out.GetNumberOfPoints(), want["vertices"])
            check(f"vtkPLYReader {name} polygons", out.GetNumberOfPolys(), want["triangles"])
        elif name.endswith(".vtu"):
            m = meshio.read(path)
            check(f"meshio {name} points", len(m.points), want["vertices"])
            tris = sum(len(c.data) for c in m.cells if c.type == "triangle")
            lines = sum(len(c.data) for c in m.cells if c.type == "line")
            check(f"meshio {name} triangles", tris, want["triangles"])
            check(f"meshio {name} lines", lines, want["lines"])
            check(f"meshio {name} first vertex", [float(v) for v in m.points[0]], first)
            check(f"meshio {name} velocity", m.point_data["velocity"].shape, (want["vertices"], 3))
            r = vtk.vtkXMLUnstructuredGridReader()
            r.SetFileName(path)
            r.Update()
            g = r.GetOutput()
            check(f"vtkXMLUnstructuredGridReader {name} points", g.GetNumberOfPoints(), want["vertices"])
            check(f"vtkXMLUnstructuredGridReader {name} cells", g.GetNumberOfCells(), want["triangles"] + want["lines"])
            pts = vtk_to_numpy(g.GetPoints().GetData())
            check(f"vtkXMLUnstructuredGridReader {name} first vertex", [float(v) for v in pts[0]], first)
    if expected.get("times"):
        r = vtk.vtkPVDReader() if hasattr(vtk, "vtkPVDReader") else None
        pvd = os.path.join(frames, "series.pvd")
        import xml.etree.ElementTree as ET

        sets = ET.parse(pvd).getroot().find("Collection").findall("DataSet")
        check("series.pvd entries", len(sets), len(expected["times"]))
        check("series.pvd times", [float(s.get("timestep")) for s in sets], expected["times"])
        for s in sets:
            check(f"series.pvd file {s.get('file')} exists", os.path.exists(os.path.join(frames, s.get("file"))), True)
        if r is not None:
            r.SetFileName(pvd)
            r.UpdateInformation()
            check("vtkPVDReader time steps", r.GetNumberOfTimeSteps(), len(expected["times"]))
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print(f"round trip ok: {len(expected['frames'])} files")


main()
