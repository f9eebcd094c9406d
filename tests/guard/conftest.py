"""The `program` fixture: run a guarded program on the fake capture (tests/guard/fake_graph.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.guard.fake_graph import ForkServer, Program, Run, run_program


@pytest.fixture(scope="session")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    pytest.importorskip("torch")
    server = ForkServer(tmp_path_factory.mktemp("fork-server") / "server.log")
    yield server
    server.close()


@pytest.fixture
def program(tmp_path: Path, fork_server: ForkServer) -> Program:
    """program(body, refuse=False, trace=True, fresh=False) -> Run, in an interpreter forked for it by the
    fork server, or (fresh=True) started for it as `python job.py`."""

    def run(body: str, *, fresh: bool = False, **kwargs: Any) -> Run:
        return run_program(tmp_path, body, server=None if fresh else fork_server, **kwargs)

    return run
