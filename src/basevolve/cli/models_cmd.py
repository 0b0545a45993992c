"""``basevolve models`` and ``basevolve llm-check`` (issue 3, parts 5 and 8).

``models`` lists the catalog (the parameter counts FLOPs are charged with);
``llm-check`` sends one short prompt to the chosen backend and prints latency, tokens,
cached tokens and effective FLOPs, so a user can verify an endpoint (or the embedded
model) before spending a budget on it.  Bad input raises ConfigError/LLMError, which
the dispatcher prints as one line with exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from basevolve.engine.endpoints import run_model
from basevolve.errors import ConfigError
from basevolve.llm import MODELS, LLMSettings, call_flops, make_client
from basevolve.llm.catalog import parse_params

CHECK_PROMPT = "Reply with exactly one word: ready"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "models", help="list the model catalog",
        description="List the models basevolve knows: served id, the active parameter "
        "count FLOPs are charged with, and the price in USD per million prompt, cached and "
        "completion tokens where one is known ('-': unpriced). Other served models need "
        "--params.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_models)

    c = subparsers.add_parser(
        "llm-check", help="send one short prompt and print latency, tokens and FLOPs",
        description="Send one short prompt to the embedded model or an OpenAI-compatible "
        "endpoint and print its latency, token usage and effective FLOPs: a check before "
        "spending a run's budget.",
    )
    c.add_argument(
        "--model",
        default=None,
        help="catalog name or served id (default: with --base-url the one model the server "
        "serves, as `run` picks it; else embedded)",
    )
    c.add_argument(
        "--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
    )
    c.add_argument(
        "--params", default=None, help="active parameters of an uncatalogued model, e.g. 8e9 or 8B"
    )
    c.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key"
    )
    c.add_argument(
        "--max-tokens", type=int, default=16, help="completion cap for the check (default 16)"
    )
    c.add_argument(
        "--timeout", type=float, default=300.0, help="overall deadline in seconds (default 300)"
    )
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(func=cmd_llm_check)


def _fmt_params(value: float) -> str:
    return f"{value / 1e9:.2f}B"


def cmd_models(args: argparse.Namespace) -> int:
    specs = [spec for _, spec in MODELS.items()]
    if args.json:
        print(json.dumps([s.to_dict() for s in specs]))  # one line, as every --json
        return 0
    default_cap = str(LLMSettings().max_tokens)
    rows = [("NAME", "SERVED ID", "ACTIVE", "TOTAL", "CONTEXT", "MAX TOKENS",
             "PRICE $/M", "BACKEND", "NOTE")]
    rows += [
        (
            s.name,
            s.served_id,
            _fmt_params(s.active_params),
            _fmt_params(s.total_params),
            str(s.context_length),
            str(s.max_tokens) if s.max_tokens else default_cap,  # issue 23: Qwen3 thinks
            "-" if s.price is None else str(s.price),  # issue 25: prompt/cached/completion
            s.backend,
            s.description,
        )
        for s in specs
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    return 0


def cmd_llm_check(args: argparse.Namespace) -> int:
    if args.max_tokens < 1:
        raise ConfigError(f"--max-tokens must be >= 1, got {args.max_tokens}")
    if not args.timeout > 0:
        raise ConfigError(f"--timeout must be > 0 seconds, got {args.timeout}")
    params = parse_params(args.params) if args.params is not None else None
    # the model `run` would use (issue 37, item 7): the one named, else the one model
    # the endpoint serves (GET /models; several -> a line listing them), else embedded
    model = run_model(args.model, args.base_url, params)
    settings = LLMSettings(
        max_retries=1,
        attempt_timeout_s=args.timeout,
        call_deadline_s=args.timeout,
        max_tokens=args.max_tokens,
    )
    client = make_client(
        model, args.base_url, params=params, api_key_env=args.api_key_env, settings=settings
    )
    result = asyncio.run(_check(client, args.max_tokens))
    if args.json:
        print(json.dumps(result))  # one line, as every --json (docs/running.md)
    else:
        from basevolve.terminal import clean  # the server's words: printed clean

        where = args.base_url or "in-process"
        print(f"model       {clean(result['model'])} ({clean(result['served_id'])}) via "
              f"{clean(where)}")
        print(f"status      {'ok' if result['ok'] else 'FAILED'} ({result['attempts']} attempt(s))")
        if result["error"]:
            print(f"error       {clean(result['error'])}")
        print(f"latency     {result['latency_s']:.3f} s")
        print(
            f"tokens      prompt {result['prompt_tokens']} (cached {result['cached_tokens']}), "
            f"completion {result['completion_tokens']}"
        )
        print(f"flops       {result['flops']:.4g}")
        print(f"reply       {result['text']!r}")
    return 0 if result["ok"] else 1


async def _check(client: Any, max_tokens: int) -> dict[str, Any]:
    try:
        completion = await client.complete(
            [{"role": "user", "content": CHECK_PROMPT}], max_tokens=max_tokens, seed=0
        )
    finally:
        await client.aclose()
    spec = client.model_spec
    last = completion.attempts[-1] if completion.attempts else None
    return {
        "model": spec.name,
        "served_id": spec.served_id,
        "ok": completion.ok,
        "latency_s": completion.latency_s,
        "prompt_tokens": completion.usage.prompt_tokens,
        "cached_tokens": completion.usage.cached_tokens,
        "completion_tokens": completion.usage.completion_tokens,
        "flops": call_flops(completion, spec.active_params, max_tokens=max_tokens),
        "attempts": len(completion.attempts),
        "error": None if completion.ok or last is None else last.error,
        "finish_reason": completion.finish_reason,
        "text": completion.text,
    }
