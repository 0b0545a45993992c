"""The test server's emulated prefix cache (sorted-neighbour lookup) gives exactly the
longest common prefix with any earlier prompt, and a bounded cache forgets old prompts."""

from __future__ import annotations

import json
import urllib.request

import numpy as np

from basevolve.testing import LLMTestServer


def _cached(srv: LLMTestServer, text: str) -> int:
    body = {"messages": [{"role": "user", "content": text}]}
    req = urllib.request.Request(srv.base_url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    out = json.loads(urllib.request.urlopen(req, timeout=10).read())
    return int(out["usage"]["prompt_tokens_details"]["cached_tokens"])


def _lcp(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_cached_tokens_match_brute_force_longest_prefix() -> None:
    rng = np.random.default_rng(3)
    prompts = ["".join(rng.choice(list("ab"), size=int(rng.integers(8, 80)))) * 2
               for _ in range(40)]
    with LLMTestServer("ok") as srv:
        for i, p in enumerate(prompts):
            best = max((_lcp(p, q) for q in prompts[:i]), default=0)
            assert _cached(srv, p) == max(0, min(best // 4, len(p) // 4 - 1))


def test_bounded_cache_forgets_the_oldest_prompt() -> None:
    with LLMTestServer("ok", prefix_cache_prompts=1, record=False) as srv:
        assert _cached(srv, "x" * 400) == 0
        assert _cached(srv, "y" * 400) == 0
        assert _cached(srv, "x" * 400) == 0  # evicted by the "y" prompt
        assert _cached(srv, "x" * 400) == 99  # cached again
        assert srv.requests == [] and srv.n_requests == 4
