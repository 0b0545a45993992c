"""Reaching an LLM endpoint before anything is stored (issue 4; issue 12, items 3 and 6).

Why a module of its own: the run entry points (:mod:`basevolve.engine.runner`), sweeps
and a text task's answering model (:mod:`basevolve.engine.text_eval`) all check an
endpoint the same way before the store is written -- "bad input leaves the store
untouched" -- and name the options to fix in their messages.
"""

from __future__ import annotations

import asyncio
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from basevolve.argnames import CLI_NAMES, spelled
from basevolve.errors import ConfigError, LLMError
from basevolve.outside_parse import load_json

Notify = Callable[[str], None]


def probe_endpoint(base_url: str, timeout_s: float = 5.0, *,
                   what: str = "LLM endpoint") -> None:
    """Fail fast if nothing answers at ``base_url`` (GET ``{base_url}/models``).

    Any HTTP answer (even 401/404) proves a server is listening; only a connection
    failure or timeout is an error, so servers without ``/models`` still work.  ``what``
    names the endpoint in the message (the mutation model's, or a text task's answering
    model's).
    """
    url = base_url.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s):
            pass
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        fix = "--base-url" if what == "LLM endpoint" else "its URL"
        raise LLMError(
            f"cannot reach the {what} {base_url!r} ({reason}); start the server or fix {fix}"
        ) from None


def served_models(base_url: str, timeout_s: float = 5.0, *,
                  url_arg: str = "--base-url") -> list[str] | None:
    """The model ids ``GET {base_url}/models`` lists; None when the server gives no list.

    Raises :class:`LLMError` when nothing answers (as :func:`probe_endpoint`; ``url_arg``
    names the endpoint's argument as the caller spells it).  The API key
    (``OPENAI_API_KEY``) is sent when set, as hosted endpoints require it here too.
    """
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url)
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = load_json(response.read() or b"null")
    except urllib.error.HTTPError:
        return None
    except ValueError:  # not JSON (RefusedText: too deep or too large too, issue 32)
        return None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise LLMError(f"cannot reach the LLM endpoint {base_url!r} ({reason}); start the "
                       f"server or fix {url_arg.rstrip('=')}") from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]


def model_for_endpoint(base_url: str, params: float | None,
                       flags: tuple[str, str, str] = CLI_NAMES) -> str:
    """The model to use with ``--base-url`` and no ``--model``: the one the server serves.

    Why not a default: a run labelled ``embedded`` would count FLOPs with the embedded
    model's 1.54B parameters for whatever the server runs (issue 12, item 3).  The served
    id is looked up in the catalog (``basevolve models``); an uncatalogued one needs
    ``--params``.  A server that lists no model, or several, is refused naming ``--model``.
    ``flags`` names the three options in messages as the caller spells them
    (:mod:`basevolve.argnames`): the CLI's flags, the Python API's keywords, or a text
    task's ``--task-param answer_base_url=`` / ``answer_model=`` / ``answer_params=``.
    """
    from basevolve.llm.catalog import resolve_model

    url_flag, model_flag, params_flag = flags
    ids = served_models(base_url, url_arg=url_flag)
    if not ids:
        raise ConfigError(f"{spelled(url_flag, base_url)} does not list its models (GET "
                          f"/models); pass {spelled(model_flag, 'NAME')} (the served model "
                          "name, e.g. Qwen/Qwen3-8B) and, for a model not in `basevolve "
                          f"models`, {spelled(params_flag, '8e9')}")
    if len(ids) > 1:
        raise ConfigError(f"{spelled(url_flag, base_url)} serves {len(ids)} models "
                          f"({', '.join(ids[:6])}); pick one with {model_flag}")
    try:
        resolve_model(ids[0], params)
    except ConfigError:
        raise ConfigError(f"{spelled(url_flag, base_url)} serves {ids[0]!r}, which is not in "
                          "the catalog (`basevolve models`): pass its active parameter count "
                          f"so FLOPs can be counted, e.g. {spelled(params_flag, '8e9')} (or "
                          f"{spelled(model_flag, 'NAME')})") from None
    return ids[0]


def run_model(model: str | None, base_url: str | None, params: float | None,
              flags: tuple[str, str, str] = CLI_NAMES) -> str:
    """The model a run uses, resolved the same way by ``basevolve run`` and
    ``basevolve.run`` (issue 24, item 1): the one named; else, with an endpoint, the one
    model it serves (:func:`model_for_endpoint`, the catalog's parameter count for
    FLOPs); else the offline ``embedded`` model.

    A named model is looked up in the catalog now (no I/O), so an unknown name without
    a parameter count is refused naming the caller's own argument (``--params`` or
    ``params=``) before anything is stored.
    """
    from basevolve.llm.catalog import resolve_model

    if model is not None:
        resolve_model(model, params, params_arg=flags[2])
        return model
    if base_url is None:
        return "embedded"
    from basevolve.llm.openai_backend import validate_base_url

    return model_for_endpoint(validate_base_url(base_url), params, flags)


def load_model(client: Any, notify: Notify) -> None:
    """Load an embedded model now, saying so, instead of silently inside the first call.

    Why: on a first run the model load (and, once, joining its weight parts) is the
    longest silent step; a user who sees nothing for a minute assumes a hang (issue 12,
    item 6).  Loading before the store is written also keeps "bad input leaves the store
    untouched" true for a broken model installation.
    """
    load = getattr(client, "load", None)
    if load is None:
        return
    import time

    from basevolve.llm.weights import WEIGHTS

    spec = client.model_spec
    size = WEIGHTS.get(spec.weights).size if spec.weights in WEIGHTS else None
    shown = f" ({size / 1e9:.1f} GB)" if size else ""
    notify(f"loading the embedded model {spec.served_id}{shown} …")
    t0 = time.monotonic()
    asyncio.run(load())
    notify(f"model loaded in {time.monotonic() - t0:.1f} s")


__all__ = ["load_model", "model_for_endpoint", "probe_endpoint", "run_model",
           "served_models"]
