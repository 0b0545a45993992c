"""Builds the candidate with cargo (offline) and scores the distinct numbers it prints.

A line ``// cargo-deps: NAME = "VERSION"`` in the program adds a dependency, which
cannot be downloaded in the sandbox: the build fails at once with cargo's own message.
"""

import os
import subprocess
import tempfile


def _fail(message):
    return {"combined_score": 0.0, "error": message.strip().splitlines()[0][:300]}


def evaluate(program_path):
    with open(program_path) as fh:
        source = fh.read()
    deps = [ln.split(":", 1)[1].strip() for ln in source.splitlines()
            if ln.startswith("// cargo-deps:")]
    project = tempfile.mkdtemp(prefix="cargo-")
    os.makedirs(os.path.join(project, "src"))
    with open(os.path.join(project, "Cargo.toml"), "w") as fh:
        fh.write('[package]\nname = "candidate"\nversion = "0.1.0"\nedition = "2021"\n\n'
                 "[dependencies]\n" + "".join(d + "\n" for d in deps))
    with open(os.path.join(project, "src", "main.rs"), "w") as fh:
        fh.write(source)
    build = subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=project,
                           capture_output=True, text=True, timeout=200)
    if build.returncode != 0:
        errors = [ln for ln in build.stderr.splitlines() if ln.startswith("error")]
        return _fail(errors[0] if errors else build.stderr or "cargo build failed")
    binary = os.path.join(project, "target", "release", "candidate")
    run = subprocess.run([binary], capture_output=True, text=True, timeout=20)
    try:
        numbers = {int(x) for x in run.stdout.split()}
    except ValueError:
        return _fail("the program printed something other than numbers")
    return {"combined_score": len(numbers & set(range(1, 11))) / 10, "printed": len(numbers)}
