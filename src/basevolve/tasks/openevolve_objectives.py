"""An OpenEvolve task directory's objectives (issue 36, item 1).

OpenEvolve scores a program by one fitness (``combined_score``, else a mean of metrics);
a directory's evaluator usually reports several named metrics, and a run may search the
Pareto front of two or more of them instead.  They are named on the command line
(``--objectives accuracy:max,seconds:min``) or in the config's own ``basevolve:``
section, which OpenEvolve ignores::

    basevolve:
      objectives: {accuracy: max, seconds: min}
      reference_point: [0.0, 10.0]      # optional: else derived from the initial program

The names are checked against the initial program's evaluation when the run starts
(:mod:`basevolve.engine.objective_start`): a metric the evaluator does not report is one
line and exit 2, nothing stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from basevolve.errors import ConfigError
from basevolve.objectives import parse_objectives, parse_reference_point
from basevolve.tasks.openevolve_settings import section


def declared_objectives(path: Path, config: dict[str, Any], cfg: str
                        ) -> tuple[dict[str, str], tuple[float, ...]]:
    """(objectives, reference point) of the config's ``basevolve:`` section; ({}, ())
    when it declares none.  A bad value is the parser's one line, naming the key."""
    own = section(path, config, "basevolve", cfg)
    objs = parse_objectives(own.get("objectives"), what=f"{cfg}: basevolve.objectives")
    point = own.get("reference_point")
    if objs is None:
        if point is not None:
            raise ConfigError(f"{cfg}: basevolve.reference_point needs basevolve.objectives")
        return {}, ()
    if point is None:
        return objs.as_dict(), ()
    return objs.as_dict(), parse_reference_point(point, objs,
                                                 what=f"{cfg}: basevolve.reference_point")


__all__ = ["declared_objectives"]
