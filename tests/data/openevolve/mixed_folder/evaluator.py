"""Scores a folder program: imports solver.py from the folder it is given, runs it on the
folder's params.json, and scores the value packed (capacity 7: the best is 7)."""
import importlib
import os
import sys


def evaluate(program_path):
    if not os.path.isdir(program_path):
        return {"combined_score": 0.0, "error": f"not a folder: {program_path}"}
    sys.path.insert(0, program_path)
    for name in [m for m in sys.modules if m == "solver" or m == "lib" or m.startswith("lib.")]:
        del sys.modules[name]
    try:
        solver = importlib.import_module("solver")
        chosen = solver.run(program_path)
    finally:
        sys.path.remove(program_path)
    files = sorted(os.path.relpath(os.path.join(d, f), program_path)
                   for d, _, names in os.walk(program_path) for f in names
                   if not f.endswith(".pyc"))
    value = float(sum(chosen)) if sum(chosen) <= 7 else 0.0
    return {"combined_score": value / 7.0, "files": len(files)}
