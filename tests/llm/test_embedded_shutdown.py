"""Issue 24, item 7: the embedded model's requests can be stopped, so it shuts down in an
order that cannot crash (stop the requests, join their threads, then free the server).

The chunks below are the shapes llama.cpp streams (recorded from xllamacpp with ``n = 2``
and ``return_progress``); the stop tests run the real embedded-small model.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from basevolve.llm.base import AttemptFailure
from basevolve.llm.embedded import parse_embedded_choices
from basevolve.llm.embedded_runtime import Stream


def _chunk(index: int, **delta) -> dict:
    finish = delta.pop("finish", None)
    return {"object": "chat.completion.chunk",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


USAGE0 = {"completion_tokens": 3, "prompt_tokens": 35, "total_tokens": 38,
          "prompt_tokens_details": {"cached_tokens": 0}}
USAGE1 = {"completion_tokens": 2, "prompt_tokens": 35, "total_tokens": 37,
          "prompt_tokens_details": {"cached_tokens": 0}}
CHUNKS = [
    {**_chunk(0, role="assistant", content=None),
     "prompt_progress": {"total": 35, "cache": 0, "processed": 0}},
    _chunk(1, role="assistant", content=None), _chunk(1, content="Hi"),
    _chunk(0, role="assistant", content=None), _chunk(0, content="Hello"),
    _chunk(1, content="!"), _chunk(0, content=", you"),
    _chunk(1, finish="stop"), {"choices": [], "usage": USAGE1, "timings": {"cache_n": 0}},
    _chunk(0, content="."), _chunk(0, finish="length"),
    {"choices": [], "usage": USAGE0, "timings": {"cache_n": 0}},
]


def test_stream_adds_the_chunks_up_to_the_non_streamed_body():
    stream = Stream()
    assert not any(stream(c) for c in CHUNKS)  # never asks to stop by itself
    body = stream.body()
    assert [c["message"]["content"] for c in body["choices"]] == ["Hello, you.", "Hi!"]
    assert [c["finish_reason"] for c in body["choices"]] == ["length", "stop"]
    assert body["usage"] == USAGE0  # the first choice's, as a non-streamed n request
    first, second = parse_embedded_choices(body, 2, max_tokens=3)
    assert (first.text, first.usage.completion_tokens) == ("Hello, you.", 3)
    assert second.text == "Hi!" and second.usage.cached_tokens == 35  # read once


def test_stream_keeps_an_error_body_and_survives_bad_chunks():
    stream = Stream()
    assert stream("not a dict") is False and stream({"choices": [7, None]}) is False
    error = {"error": {"code": 400, "message": "the request exceeds the context size"}}
    assert stream(error) is False and stream.body() == error
    with pytest.raises(AttemptFailure, match=r"llama\.cpp error 400"):
        parse_embedded_choices(stream.body(), 1, max_tokens=8)


def test_a_set_stop_flag_ends_the_stream_at_its_next_chunk():
    stream = Stream()
    assert stream(CHUNKS[0]) is False
    stream.stop.set()
    assert stream(CHUNKS[1]) is True and stream.chunks == 1  # nothing more is taken


@pytest.mark.embedded
def test_a_stopped_request_returns_before_its_max_tokens():
    """The real model: a request asked for 400 tokens is stopped after its third content
    chunk; llama.cpp returns at once (what :func:`shutdown` and a cancelled call rely on)."""
    from basevolve.llm.embedded_runtime import load_server
    from basevolve.llm.settings import LLMSettings

    server = load_server("qwen2.5-coder-0.5b", LLMSettings(embedded_n_ctx=1024))
    stream = Stream()
    seen: list[int] = []

    def counting(chunk):
        stop = stream(chunk)
        seen.append(sum(len(t) for t in stream.texts.values()))
        if seen[-1] >= 3:
            stream.stop.set()
        return stop

    request = {"messages": [{"role": "user", "content": "Count from 1 to 500, one per line."}],
               "max_tokens": 400, "temperature": 0.0, "seed": 1, "stream": True,
               "stream_options": {"include_usage": True}, "return_progress": True}
    done = threading.Event()

    def go():
        server.handle_chat_completions(request, counting)
        done.set()

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(600)  # CPU-bound on a shared box: generous; returning at all is the point
    assert done.is_set()
    content_chunks = max(seen)
    assert 3 <= content_chunks <= 4  # stopped at the chunk after the third, not 400 later
    assert not stream.finish  # no choice finished: the request was cut short


@pytest.mark.embedded
def test_exit_with_a_generation_in_flight_shuts_down_cleanly():
    """A process that exits while a generation runs in a daemon thread (before: a crash
    in xllamacpp at exit): the atexit shutdown stops it, joins the thread, frees the
    server; exit status 0."""
    code = """
import asyncio, sys, threading, time
from basevolve.llm import LLMSettings, make_client
from basevolve.llm.decode_meter import METER
from basevolve.llm.embedded_runtime import active

client = make_client("embedded-small", settings=LLMSettings(embedded_n_ctx=1024))
prompt = [{"role": "user", "content": "Count from 1 to 1000, one number per line."}]
# a generation nobody cancels: only the exit's shutdown can stop it
threading.Thread(target=lambda: asyncio.run(client.complete(prompt, max_tokens=900, seed=3)),
                 daemon=True).start()
# decoding, not loading: active() counts the load's thread too, and on a loaded machine
# the exit could fall between the load and the first token (nothing in flight to stop)
while METER.read().tokens < 1:
    time.sleep(0.05)
print("in flight at exit:", active(), flush=True)
sys.exit(0)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "in flight at exit: 1" in done.stdout
    assert "stopping the embedded model" in done.stderr and "Traceback" not in done.stderr
