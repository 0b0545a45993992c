"""Named models of one simulator process: ``--model NAME=CAPABILITY[:PARAMS[:DECODE_TPS]]``
(issue 25, part 4).

Why: a run that mixes a cheap and a strong model (ensembles, the model bandit) needs
endpoints of different capability and size; one ``simulate-server`` process serving them
all lets the model-allocation benchmark run on a CPU.  A :class:`ServedModel` is what
the simulator knows of one of them:

* ``capability`` -- as ``--capability`` (:mod:`basevolve.testing.sim.model`, step 3);
* ``params`` -- the *assumed* parameter count, only reported (``basevolve_params`` in
  ``GET /models``); the simulator's replies do not depend on it, and a run states the
  parameter count it charges FLOPs for itself;
* ``decode_tps`` -- this model's decode rate under ``--latency tokens`` (None: the
  server's ``--decode-tps``).  Nothing scales it with ``params`` by itself: the rate a
  model of a given size decodes at depends on the hardware, so a user who wants a
  larger model to be slower says by how much.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from basevolve.errors import ConfigError

SPEC_FORM = "NAME=CAPABILITY[:PARAMS[:DECODE_TPS]], e.g. weak=0.5:1.7e9"
#: A served model id: what a client sends as ``model`` (``Qwen/Qwen3-1.7B`` is one too).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/@+:-]{0,127}")


@dataclass(frozen=True)
class ServedModel:
    """One named model of a simulator process (module doc)."""

    capability: float = 1.0
    params: float | None = None
    decode_tps: float | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.capability, int | float) and math.isfinite(self.capability)
                and self.capability > 0):
            raise ConfigError(f"a model's capability must be a number > 0 (1 = default model), "
                              f"got {self.capability!r}")
        if self.params is not None and not (isinstance(self.params, int | float)
                                            and math.isfinite(self.params) and self.params > 0):
            raise ConfigError(f"a model's parameter count must be > 0 (e.g. 1.7e9), "
                              f"got {self.params!r}")
        if self.decode_tps is not None and not (isinstance(self.decode_tps, int | float)
                                                and math.isfinite(self.decode_tps)
                                                and self.decode_tps > 0):
            raise ConfigError(f"a model's decode rate must be > 0 tokens/s, "
                              f"got {self.decode_tps!r}")


def check_name(name: object) -> str:
    """``name`` if it can be a served model id, else a ConfigError saying what can."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"model name {name!r} is not a valid model id: use 1-128 letters, "
                          "digits and . _ / @ + : - (starting with a letter or digit)")
    return name


def served_models(models: Mapping[str, float | ServedModel]) -> dict[str, ServedModel]:
    """Check a Python mapping name -> capability or :class:`ServedModel`."""
    if not models:
        raise ConfigError("models must name at least one model (name -> capability)")
    out: dict[str, ServedModel] = {}
    for name, spec in models.items():
        check_name(name)
        if isinstance(spec, ServedModel):
            out[name] = spec
        elif isinstance(spec, int | float) and not isinstance(spec, bool):
            out[name] = ServedModel(float(spec))
        else:
            raise ConfigError(f"model {name!r}: give a capability (a number) or a ServedModel, "
                              f"got {spec!r}")
    return out


def parse_model_spec(text: str) -> tuple[str, ServedModel]:
    """``"strong=2:14.8e9:20"`` -> ``("strong", ServedModel(2.0, 14.8e9, 20.0))``.

    PARAMS takes the forms of ``--params`` (``1.7e9``, ``14.8B``); an empty field keeps
    the default (``strong=2::20``: no stated size, decode rate 20).
    """
    from basevolve.llm.catalog import parse_params

    where = f"--model {text!r}"
    name, eq, rest = text.partition("=")
    if not eq:
        raise ConfigError(f"{where} has no '='; expected {SPEC_FORM}")
    try:
        check_name(name)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}; expected {SPEC_FORM}") from None
    fields = rest.split(":")
    if len(fields) > 3:
        raise ConfigError(f"{where} has {len(fields)} ':'-separated fields, at most 3; "
                          f"expected {SPEC_FORM}")
    fields += [""] * (3 - len(fields))
    cap_text, params_text, tps_text = (f.strip() for f in fields)
    try:
        capability = float(cap_text)
    except ValueError:
        raise ConfigError(f"{where}: the capability {cap_text!r} is not a number "
                          f"(1 = default model); expected {SPEC_FORM}") from None
    params = parse_params(params_text, f"{where} PARAMS") if params_text else None
    tps = None
    if tps_text:
        try:
            tps = float(tps_text)
        except ValueError:
            raise ConfigError(f"{where}: the decode rate {tps_text!r} is not a number of "
                              f"tokens/s; expected {SPEC_FORM}") from None
    try:
        return name, ServedModel(capability, params, tps)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}; expected {SPEC_FORM}") from None
