"""Every setting the VS Code extension declares (package.json `contributes.configuration`) maps to a
server setting and back: same name, type, default and allowed values; the server takes each one
through the same checks as `[tool.denpex]`, without a configuration error."""

from __future__ import annotations

import json
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import HERE, SCENARIO, SERVER, finish, init_params, open_doc, start, wait_diagnostics
from denpex.config import CLIENT_ONLY, KEYS, Layer, resolve
from denpex.config.keys import SEVERITIES, lookup
from denpex.rulebook import load_rulebook

PACKAGE = HERE.parent.parent / "vscode-extension" / "package.json"
JSON_TYPE = {"rules": "array", "names": "array", "severity": "object", "bool": "boolean", "count": "integer",
             "run": "string", "template": "string"}


def declared() -> dict[str, dict[str, Any]]:
    props = json.loads(PACKAGE.read_text())["contributes"]["configuration"]["properties"]
    assert all(name.startswith("denpex.") for name in props)
    return {name[len("denpex."):]: spec for name, spec in props.items()}


def server_side() -> dict[str, dict[str, Any]]:
    return {name: spec for name, spec in declared().items() if name not in CLIENT_ONLY}


def test_every_vscode_setting_is_a_server_setting_or_the_extensions_own() -> None:
    for name, spec in declared().items():
        if name in CLIENT_ONLY:
            assert lookup(name) is None, f"{name} is both the extension's and the server's"
            continue
        key = lookup(name)
        assert key is not None, f"denpex.{name}: the server has no such setting"
        assert key.editor_name == name and key.vscode, name
        assert spec["type"] == JSON_TYPE[key.kind], name
        assert spec["default"] == (list(key.default) if isinstance(key.default, tuple) else key.default), name
        if key.kind == "run":
            assert spec["enum"] == ["onType", "onSave"]
        if key.kind == "severity":
            assert tuple(spec["additionalProperties"]["enum"]) == SEVERITIES
        if key.kind == "count":
            assert spec.get("minimum") == 0, name


def test_every_server_setting_for_vscode_is_declared() -> None:
    names = set(declared())
    assert {k.editor_name for k in KEYS if k.vscode} == set(server_side())
    assert all(k.editor_name not in names for k in KEYS if not k.vscode)
    assert {n for n in CLIENT_ONLY if n != "trace"} <= names  # `trace` is the nested spelling of trace.server


EXAMPLES: dict[str, Any] = {
    "array": ["DPX1"], "object": {"DPX101": "warning"}, "boolean": True, "integer": 2, "string": "onSave",
}


def example(name: str, spec: dict[str, Any]) -> Any:
    key = lookup(name)
    assert key is not None
    if key.kind == "names":
        return ["mypkg.graphs.capture"]
    if key.kind == "bool":
        return not key.default
    return EXAMPLES[spec["type"]]


def test_each_vscode_value_reaches_the_server_option() -> None:
    book = load_rulebook()
    for name, spec in server_side().items():
        key = lookup(name)
        assert key is not None
        value = example(name, spec)
        r = resolve([Layer("editor settings", {name: value})], book, strict=True)
        got = r.options[key.field]
        assert (list(got) if isinstance(got, tuple) else got) == value, name
        if key.project:  # the same value spelled for [tool.denpex] means the same
            p = resolve([Layer("x: [tool.denpex]", {key.pyproject_name: value}, project=True)], book, strict=True)
            assert p.options == r.options and p.scan == r.scan, name


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def vscode_settings_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    # what VS Code sends for section `denpex`: every declared setting, the extension's own included
    settings = {name: spec["default"] for name, spec in declared().items() if "." not in name}
    settings["trace"] = {"server": "off"}
    settings["maxDepth"] = 3
    await start(lsp_client, init_params("visual-studio-code", {"settings": settings}))
    yield
    await finish(lsp_client)  # fails on any configuration error shown or logged


@pytest.mark.parametrize("profile", ["visual-studio-code"])
async def test_server_takes_every_vscode_setting(vscode_settings_client: LanguageClient, profile: str) -> None:
    doc_uri, _ = open_doc(vscode_settings_client, SCENARIO)
    diags = await wait_diagnostics(vscode_settings_client, doc_uri, version=1)
    assert [d.code for d in diags] == ["DPX101"]
    assert not [m for m in vscode_settings_client.log_messages if m.type == types.MessageType.Error]
