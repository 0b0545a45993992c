"""Example function task: a small symbolic regression on a generated data set (docs/tasks.md).

Run it with::

    basevolve tasks --show examples/symbolic_regression.py
    basevolve run --task examples/symbolic_regression.py --budget 8 --depth 4

The evolved program defines ``predict(X)``: an ``(n, 2)`` float array of inputs in,
``n`` predictions out -- a formula with constants.  The data set is generated at run
time from a fixed seed: ``N_TRAIN + N_TEST`` points, ``x0, x1`` uniform on [-3, 3],
targets from a hidden formula plus Gaussian noise (sigma 0.1), split into a training
and a held-out test part.  The LLM sees a sample of the *training* points in the
system message; the program never sees a target.

The trusted evaluator (this file, in the basevolve process) calls ``predict`` on the
test inputs and scores **fitness = max(0, R^2)** on the held-out targets (R^2 = 1 -
residual sum of squares / total sum of squares; 1 is a perfect fit, 0 is no better
than predicting the mean; the noise caps the best R^2 near 0.999).  It also calls
``predict`` on the training inputs, reported as the metric ``train_r2`` and used for
the artifact "largest training errors" (feedback that never shows a test target).  A
prediction that is not finite, has the wrong shape or is not numeric scores 0 with
the reason and the offending input as an artifact.
"""

from __future__ import annotations

import numpy as np

from basevolve.sandbox.session import ProgramSession
from basevolve.tasks.base import ScoreResult
from basevolve.tasks.function import FunctionTask

SEED, N_TRAIN, N_TEST, NOISE = 2026, 200, 200, 0.1
N_SHOWN = 20  # training points shown to the LLM

INITIAL_PROGRAM = '''\
"""A formula that predicts y from two inputs x0 = X[:, 0] and x1 = X[:, 1]."""

import numpy as np


# EVOLVE-BLOCK-START
def predict(X: np.ndarray) -> np.ndarray:
    """One prediction per row of the (n, 2) array X."""
    x0, x1 = X[:, 0], X[:, 1]
    return 0.5 * x0 + 0.0 * x1 + 1.5
# EVOLVE-BLOCK-END
'''


def hidden_formula(X: np.ndarray) -> np.ndarray:
    """What the program has to find (never shown to it)."""
    x0, x1 = X[:, 0], X[:, 1]
    return 1.5 * np.sin(x0) + 0.5 * x1**2 - 0.8 * x0 * x1


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test), the same on every call (seeded)."""
    rng = np.random.default_rng(SEED)
    X = rng.uniform(-3.0, 3.0, size=(N_TRAIN + N_TEST, 2))
    y = hidden_formula(X) + rng.normal(0.0, NOISE, size=len(X))
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]


def _training_sample() -> str:
    X, y, _, _ = data()
    rows = [f"{a:7.3f} {b:7.3f} {t:8.3f}" for (a, b), t in zip(X[:N_SHOWN], y[:N_SHOWN],
                                                                 strict=True)]
    return "     x0      x1        y\n" + "\n".join(rows)


SYSTEM_MESSAGE = f"""\
You are an expert in symbolic regression.
Improve the function predict(X): X is a numpy array of shape (n, 2) with columns
x0 = X[:, 0] and x1 = X[:, 1], both in [-3, 3]; return a numpy array of n predictions
of y.  y is an unknown formula of x0 and x1 plus a little noise.  Find that formula,
with its constants.  The fitness is max(0, R^2) of the predictions on held-out points
(higher is better, at most 1); non-finite predictions or a wrong shape score 0.
Some training points:
{_training_sample()}
Return the whole program in one Python code block."""


def r_squared(y: np.ndarray, pred: np.ndarray) -> float:
    """Coefficient of determination: 1 - SS_res / SS_tot."""
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return 1.0 - float(((y - pred) ** 2).sum()) / ss_tot


class SymbolicRegression(FunctionTask):
    """Find y = f(x0, x1) from data; scored by held-out R^2 in trusted code."""

    name = "symbolic_regression"
    entry = "predict"
    description = "Symbolic regression on 2 inputs: fitness = max(0, held-out R^2)."
    timeout_s = 20.0  # the import and both calls
    call_timeout_s = 5.0

    @property
    def initial_program(self) -> str:
        return INITIAL_PROGRAM

    @property
    def system_message(self) -> str:
        return SYSTEM_MESSAGE

    def evaluate_program(self, program: ProgramSession) -> ScoreResult:
        """Predict the test inputs (score) and the training inputs (feedback)."""
        X_train, y_train, X_test, y_test = data()
        test, failed = _predictions(program, X_test, "the test inputs")
        if failed is not None:
            return failed
        train, failed = _predictions(program, X_train, "the training inputs")
        if failed is not None:
            return failed
        assert test is not None and train is not None
        r2 = r_squared(y_test, test)
        worst = np.argsort(-np.abs(y_train - train))[:3]
        notes = "\n".join(f"x0={X_train[i, 0]:.3f} x1={X_train[i, 1]:.3f}: y={y_train[i]:.3f}, "
                          f"predicted {train[i]:.3f}" for i in worst)
        return ScoreResult(max(0.0, r2), True,
                           metrics={"test_r2": r2, "train_r2": r_squared(y_train, train)},
                           artifacts={"largest training errors": notes})


def _predictions(program: ProgramSession, X: np.ndarray, what: str
                 ) -> tuple[np.ndarray | None, ScoreResult | None]:
    """(predictions, None) when predict(X) returned len(X) finite numbers, else (None, why)."""
    result = program.call("predict", X)
    if not result.ok:
        return None, ScoreResult(0.0, False, error=f"predict() failed on {what}: {result.error}",
                                 artifacts={"failing call": f"predict({what}): {result.error}"})
    try:
        pred = np.asarray(result.value)
        numeric = pred.dtype.kind in "iuf"
    except (TypeError, ValueError):
        numeric = False
    if not numeric:
        return None, ScoreResult(0.0, False, error=f"predict() on {what} must return numbers, "
                                 f"got {_describe(result.value)}")
    if pred.shape != (len(X),):
        return None, ScoreResult(0.0, False, error=f"predict() on {what} returned shape "
                                 f"{pred.shape}; it must be ({len(X)},), one value per row")
    pred = pred.astype(float)
    bad = np.flatnonzero(~np.isfinite(pred))
    if bad.size:
        i = int(bad[0])
        case = f"x0={X[i, 0]:.6g} x1={X[i, 1]:.6g}: predicted {float(pred[i])!r}"
        return None, ScoreResult(0.0, False, error=f"predict() on {what}: {bad.size} "
                                 f"prediction(s) not finite, e.g. {case}",
                                 artifacts={"failing case": case})
    return pred, None


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
