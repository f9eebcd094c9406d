"""The language server put together: the server class, every handler module's routes and commands, and the
hardened protocol (`create_server`); and running it over stdio or TCP (`serve`).

Only this module knows all the parts, so none of them imports another back. Its imports of them are made in
the functions: over stdio, boot.py answers `initialize` before pygls is imported at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from denpex.lsp.boot import serve_stdio

if TYPE_CHECKING:
    from denpex.lsp.server import DenpexLanguageServer


def create_server() -> DenpexLanguageServer:
    """The server with every handler module registered (see `denpex.lsp.handlers.ROUTES`)."""
    from denpex.lsp import handlers
    from denpex.lsp.server import DenpexLanguageServer
    from denpex.lsp.transport import DenpexProtocol

    ls = DenpexLanguageServer(DenpexProtocol)
    for route in handlers.ROUTES:
        ls.feature(route.method, route.options)(route.handler)
    for name, command in handlers.COMMANDS.items():
        ls.command(name)(command)
    return ls


def serve(tcp_port: int | None = None, host: str = "127.0.0.1") -> int:
    """Run the server until the client ends the session: over TCP when `tcp_port` is given, else over
    stdio with the early start-up of boot.py."""
    if tcp_port is None:
        return serve_stdio(create_server)
    create_server().start_tcp(host, tcp_port)
    return 0
