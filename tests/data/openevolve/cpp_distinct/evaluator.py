"""Compiles the candidate with g++ and scores the distinct numbers it prints."""

import os
import subprocess
import tempfile


def evaluate(program_path):
    binary = os.path.join(tempfile.mkdtemp(prefix="gxx-"), "candidate")
    build = subprocess.run(["g++", "-O1", "-o", binary, program_path],
                           capture_output=True, text=True, timeout=100)
    if build.returncode != 0:
        errors = [ln for ln in build.stderr.splitlines() if "error" in ln]
        return {"combined_score": 0.0, "error": (errors or ["g++ failed"])[0][:300]}
    run = subprocess.run([binary], capture_output=True, text=True, timeout=20)
    numbers = {int(x) for x in run.stdout.split()}
    return {"combined_score": len(numbers & set(range(1, 11))) / 10, "printed": len(numbers)}
