"""`basevolve run --protocol NAME --protocol-param key=value`: every island protocol is
selectable, and bad protocol input is one clear line, exit 2, with the store untouched."""

from __future__ import annotations

import socket

import pytest

from basevolve.cli import main
from basevolve.config import RunConfig
from basevolve.protocols import PROTOCOLS
from basevolve.store import RunStore


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_registered_protocol_is_a_choice(capsys):
    assert {"greedy", "openevolve", "codeevolve", "shinkaevolve"} <= set(PROTOCOLS.names())
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in PROTOCOLS.names())


@pytest.mark.parametrize(("args", "needles"), [
    (["--protocol", "nope"], ["nope", "openevolve", "shinkaevolve"]),
    (["--protocol", "codeevolve", "--protocol-param", "islands=3"], ["islands", "num_islands"]),
    (["--protocol", "shinkaevolve", "--protocol-param", "num_islands=two"],
     ["num_islands", "two"]),
    (["--protocol", "openevolve", "--protocol-param", "num_islands=0"], ["num_islands", "0"]),
    (["--protocol", "shinkaevolve", "--protocol-param", "novelty=maybe"],
     ["novelty", "maybe", "ngram"]),
    (["--protocol", "openevolve", "--protocol-param", "migration_rate=1.5"],
     ["migration_rate", "1.5"]),
    (["--protocol", "openevolve", "--protocol-param", "exploration_ratio=0.5",
      "--protocol-param", "exploitation_ratio=0.6"], ["exploration_ratio", "exploitation_ratio"]),
    (["--protocol", "codeevolve", "--protocol-param", "meta_prompting"], ["meta_prompting"]),
])
@pytest.mark.parametrize("existing", [False, True])
def test_bad_protocol_input_exit_2_store_untouched(tmp_path, capsys, args, needles, existing):
    store = tmp_path / "s.sqlite"
    before = None
    if existing:  # a store that already holds a run must not change by one byte
        s = RunStore(store)
        cfg = RunConfig(task="min_max_distance", budget=4, run_id="earlier")
        s.create_run("earlier", cfg.to_dict(), active_params=None)
        s.close()
        before = store.read_bytes()
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    code = main(["run", "--task", "min_max_distance", "--budget", "4", "--base-url", url,
                 *args, "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert all(n in err for n in needles), err
    assert (store.read_bytes() == before) if existing else not store.exists()
