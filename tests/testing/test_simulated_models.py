"""Several named simulated models in one process (issue 25, part 4): each request's
``model`` picks a model answering with its own capability, a seeded request's reply and
usage do not depend on the other model's traffic, unknown models get vLLM's 404, ``GET
/models`` lists every model with its assumed size, and bad ``--model`` specs are one
line and exit 2."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Any

import openai
import pytest

from basevolve.errors import ConfigError
from basevolve.prompts.openevolve import build_openevolve_messages
from basevolve.prompts.parse import extract_program
from basevolve.tasks import load_task
from basevolve.testing.sim import (
    MODELS,
    ModelRouter,
    ServedModel,
    SimulatedLLM,
    TokenRateLatency,
    simulated_server,
)
from basevolve.testing.sim.served import parse_model_spec

TASK = "min_max_distance"
TWO = {"weak": ServedModel(0.5, 1.7e9), "strong": ServedModel(2.0, 14.8e9)}


def post(conn: http.client.HTTPConnection, body: Any, raw: bytes | None = None
         ) -> tuple[int, dict[str, Any]]:
    conn.request("POST", "/v1/chat/completions",
                 body=json.dumps(body).encode() if raw is None else raw,
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read())


def connect(srv: ModelRouter) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)


def initial_prompt(seed: int) -> dict[str, Any]:
    """OpenEvolve's prompt with the task's initial program (fitness 0.02) as parent."""
    t = load_task(TASK)
    msgs = build_openevolve_messages(
        system_message=t.system_message, current_program=t.initial_program,
        fitness_score=0.02, language="python", improvement_areas="", artifacts="",
        evolution_history="")
    return {"messages": msgs, "seed": seed}


def test_each_model_answers_with_its_own_capability() -> None:
    """300 seeded children of the initial (jitter) program per model: every reply is
    exactly that model's, and the strong model switches to the good family (rings) at
    least twice as often as the weak one (predicted odds: 0.107 vs 0.037 of replies)."""
    n = 300
    sims = {name: SimulatedLLM(TASK, capability=m.capability, stream=name)
            for name, m in TWO.items()}
    model = MODELS[TASK]
    rings = {}
    with simulated_server(TASK, models=TWO).start() as srv:
        conn = connect(srv)
        for name in TWO:
            count = 0
            for s in range(n):
                body = {**initial_prompt(s), "model": name}
                status, out = post(conn, body)
                assert status == 200 and out["model"] == name
                text = out["choices"][0]["message"]["content"]
                assert text == sims[name](body, 0)  # routed to this model, its own stream
                code = extract_program(text, entry=model.entry).code
                count += code is not None and model.classify(code) == "rings"
            rings[name] = count
        conn.close()
    p = {name: sim.switch_probabilities("jitter")["rings"] for name, sim in sims.items()}
    assert p["strong"] > 2.5 * p["weak"]
    assert rings["strong"] >= 2 * rings["weak"] > 0, rings
    for name in TWO:  # within 4 binomial standard errors of the configured odds
        sd = (n * p[name] * (1 - p[name])) ** 0.5
        assert abs(rings[name] - n * p[name]) <= 4 * sd + 1, (name, rings, p)


def test_named_models_have_their_own_streams() -> None:
    """Two models of equal capability are two models; the single-model key is unchanged."""
    a, b = (SimulatedLLM(TASK, stream=name) for name in ("a", "b"))
    plain = SimulatedLLM(TASK)
    same = sum(a(initial_prompt(s), 0) == b(initial_prompt(s), 0) for s in range(30))
    assert same < 15
    assert plain.stream_key == [1_000_000]  # [seed, capability]: replies as before


def _strong_session(srv: ModelRouter) -> list[tuple[str, dict[str, Any]]]:
    """Seeded requests to the strong model (the same prompt, so later ones hit its prefix
    cache), then one without a seed (its reply follows the model's own request count)."""
    conn = connect(srv)
    out = []
    bodies = [{**initial_prompt(s), "model": "strong"} for s in range(6)]
    bodies.append({k: v for k, v in bodies[0].items() if k != "seed"})
    for body in bodies:
        status, reply = post(conn, body)
        assert status == 200
        out.append((reply["choices"][0]["message"]["content"], reply["usage"]))
    conn.close()
    return out


def test_seeded_reply_does_not_depend_on_the_other_models_traffic() -> None:
    with simulated_server(TASK, models=TWO).start() as srv:
        alone = _strong_session(srv)
    with simulated_server(TASK, models=TWO).start() as srv:
        warm = connect(srv)  # the weak model sees the same prompt first
        assert post(warm, {**initial_prompt(0), "model": "weak"})[0] == 200
        stop = threading.Event()
        busy_errors: list[object] = []

        def busy() -> None:
            conn = connect(srv)
            s = 0
            while not stop.is_set():
                status, _ = post(conn, {**initial_prompt(s), "model": "weak"})
                if status != 200:
                    busy_errors.append(status)
                s += 1
            conn.close()

        threads = [threading.Thread(target=busy) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            shared = _strong_session(srv)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        weak_requests = srv.backends["weak"].n_requests
        warm.close()
    assert shared == alone  # texts and usage, cached tokens included
    assert alone[0][1]["prompt_tokens_details"]["cached_tokens"] == 0  # own prefix cache
    assert alone[1][1]["prompt_tokens_details"]["cached_tokens"] > 0
    assert weak_requests > 1 and not busy_errors


def test_models_listing_unknown_model_and_hostile_requests() -> None:
    with simulated_server(TASK, models=TWO).start() as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="EMPTY", max_retries=0)
        listed = client.models.list()
        assert [m.id for m in listed.data] == ["weak", "strong"]
        assert [m.model_extra["basevolve_params"] for m in listed.data] == [1.7e9, 14.8e9]
        with pytest.raises(openai.NotFoundError) as err:  # the SDK reads vLLM's 404
            client.chat.completions.create(model="medium", messages=[
                {"role": "user", "content": "hi"}])
        assert err.value.status_code == 404
        conn = connect(srv)
        for model in ("medium", 5, ["strong"], "x\x1b[2J" * 100, ""):
            status, out = post(conn, {"model": model, "messages": []})
            assert status == 404 and out["error"]["type"] == "NotFoundError", model
            assert len(out["error"]["message"]) < 200
        assert srv.n_requests == 0  # no backend saw any of them
        body = initial_prompt(3)  # no "model": the first one answers, as vLLM's default
        status, out = post(conn, body)
        assert status == 200
        assert out["choices"][0]["message"]["content"] == SimulatedLLM(
            TASK, capability=0.5, stream="weak")(body, 0)
        for raw in (b"{not json", b"[1, 2]", b"\xff\xfe"):
            assert post(conn, None, raw)[0] == 400
        conn.request("GET", "/v1/nothing")
        resp = conn.getresponse()
        assert resp.status == 404 and "error" in json.loads(resp.read())
        conn.close()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: lots\r\n\r\n")
            assert sock.recv(64).startswith(b"HTTP/1.1 400")
        assert srv.n_requests == 1


def test_per_model_decode_rate_and_python_errors() -> None:
    lat = TokenRateLatency(prefill_tps=1e9, decode_tps=1e6, slots=2)
    models = {"weak": ServedModel(0.5, 1.7e9), "strong": ServedModel(2.0, 14.8e9, 5e5)}
    with simulated_server(TASK, models=models, latency_model=lat).start() as srv:
        assert srv.backends["weak"].latency_model is lat
        strong_lat = srv.backends["strong"].latency_model
        assert isinstance(strong_lat, TokenRateLatency)
        usage = {"prompt_tokens": 10, "completion_tokens": 1000}
        assert strong_lat.seconds(usage) == pytest.approx(10 / 1e9 + 1000 / 5e5)
        assert lat.seconds(usage) == pytest.approx(10 / 1e9 + 1000 / 1e6)
        assert (strong_lat.prefill_tps, strong_lat.slots) == (1e9, 2)
        assert post(connect(srv), {**initial_prompt(1), "model": "strong"})[0] == 200
    for kwargs, needle in [
        ({"models": {}}, "at least one model"),
        ({"models": {"weak": 0.5}, "capability": 2.0}, "--capability"),
        ({"models": {"we ak": 0.5}}, "not a valid model id"),
        ({"models": {"weak": "strong"}}, "give a capability"),
        ({"models": {"weak": ServedModel(1.0, None, 20.0)}}, "--latency tokens"),
        ({"models": {"weak": float("inf")}}, "capability"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            simulated_server(TASK, **kwargs)


def test_model_spec_forms() -> None:
    assert parse_model_spec("weak=0.5:1.7e9") == ("weak", ServedModel(0.5, 1.7e9))
    assert parse_model_spec("Qwen/Qwen3-14B=2:14.8B:20") == (
        "Qwen/Qwen3-14B", ServedModel(2.0, 14.8e9, 20.0))
    assert parse_model_spec("m=1::30") == ("m", ServedModel(1.0, None, 30.0))
    assert parse_model_spec("m=1") == ("m", ServedModel(1.0))


@pytest.mark.parametrize(("argv", "needle"), [
    (["--model", "weak"], "has no '='"),
    (["--model", "=1"], "not a valid model id"),
    (["--model", "we ak=1"], "not a valid model id"),
    (["--model", "weak=abc"], "capability 'abc' is not a number"),
    (["--model", "weak=0"], "capability must be a number > 0"),
    (["--model", "weak=nan"], "capability must be a number > 0"),
    (["--model", "weak=inf"], "capability must be a number > 0"),
    (["--model", "weak=1:lots"], "PARAMS must be a parameter count"),
    (["--model", "weak=1:-5"], "PARAMS must be a parameter count such as 8e9 or 8B, got '-5'"),
    (["--model", "weak=1:2e9:0", "--latency", "tokens"], "decode rate must be > 0"),
    (["--model", "weak=1:2e9:fast", "--latency", "tokens"], "decode rate 'fast'"),
    (["--model", "weak=1:2e9:5:6"], "at most 3"),
    (["--model", "weak=1:2e9:30"], "only applies with --latency tokens"),
    (["--model", "w=1", "--model", "w=2"], "given twice"),
    (["--capability", "2", "--model", "w=1"], "do not go together"),
    (["--model", "w=1", "--latency", "soon"], "--latency"),
])
def test_bad_model_specs_are_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                             argv: list[str], needle: str) -> None:
    from basevolve.cli.simulate_cmd import main

    assert main(["--task", TASK, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "Traceback" not in err and len(err.splitlines()) == 1, err


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "basevolve.cli.simulate_cmd", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_cli_process_serves_two_models_and_refuses_a_bad_spec() -> None:
    bad = _cli("--task", TASK, "--model", "weak=0.5:1.7e9", "--model", "strong=two")
    out, err = bad.communicate(timeout=120)
    assert bad.returncode == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "'two' is not a number" in err, err
    proc = _cli("--task", TASK, "--model", "weak=0.5:1.7e9", "--model", "strong=2:14.8e9")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0)
        assert [(m.id, m.model_extra["basevolve_params"]) for m in client.models.list().data
                ] == [("weak", 1.7e9), ("strong", 14.8e9)]
        body = initial_prompt(4)
        reply = client.chat.completions.create(model="strong", messages=body["messages"],
                                               seed=4)
        assert reply.choices[0].message.content == SimulatedLLM(
            TASK, capability=2.0, stream="strong")({**body, "model": "strong"}, 0)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err
