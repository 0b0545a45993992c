"""Declared protocol parameters: the shared machinery lives in :mod:`basevolve.params`
(tasks declare ``--task-param`` keys the same way); kept importable from here."""

from basevolve.params import Param, parse_params, split_assignments

__all__ = ["Param", "parse_params", "split_assignments"]
