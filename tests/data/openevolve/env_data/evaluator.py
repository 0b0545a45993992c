"""Scores weights() against data/target.json, read from the folder passed with --data.

Reads three things only the run can pass into the sandbox: ``SCORE_SCALE`` (--env),
``FIXTURE_API_TOKEN`` (--env-secret) and ``$BASEVOLVE_DATA`` (--data).  A small
``np.random`` term makes the score stochastic, as many OpenEvolve evaluators are.
"""

import hashlib
import importlib.util
import json
import os

import numpy as np

# the test's secret, by hash only: this file is stored with the run, the value never is
TOKEN_SHA256 = "33a6332f8e537560d5e95afae449e5b2d015a6edd0eb47ef7c83c97e18c7cd78"


def evaluate(program_path):
    with open(os.path.join(os.environ["BASEVOLVE_DATA"], "target.json")) as fh:
        target = json.load(fh)["target"]
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    got = list(module.weights())
    error = sum((a - b) ** 2 for a, b in zip(got, target, strict=True))
    scale = float(os.environ["SCORE_SCALE"])
    token = os.environ.get("FIXTURE_API_TOKEN", "")
    return {"combined_score": scale / (1.0 + error) + 1e-3 * float(np.random.rand()),
            "token_ok": float(hashlib.sha256(token.encode()).hexdigest() == TOKEN_SHA256),
            "data_at": os.environ["BASEVOLVE_DATA"]}
