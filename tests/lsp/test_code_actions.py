"""Code actions: each quick fix and the suppression applied, fix-all, lazy resolve."""

from __future__ import annotations

import ast

from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import SCENARIO, apply_text_edits, edits_of, open_doc, replace_all, wait_diagnostics

FIX_ALL = "source.fixAll.denpex"


async def code_actions(client: LanguageClient, doc_uri: str, diags: list[types.Diagnostic],
                       only: list[str] | None = None) -> list[types.CodeAction]:
    rng = diags[0].range if diags else types.Range(start=types.Position(line=0, character=0),
                                                   end=types.Position(line=0, character=0))
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=doc_uri), range=rng,
        context=types.CodeActionContext(diagnostics=diags, only=only)))
    assert result is None or all(isinstance(a, types.CodeAction) for a in result)
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


async def test_each_quick_fix_applies_cleanly(client: LanguageClient) -> None:
    profile = client.profile  # type: ignore[attr-defined]
    doc_uri, text = open_doc(client, SCENARIO)
    diags = await wait_diagnostics(client, doc_uri, version=1)
    target = diags[0]
    actions = await code_actions(client, doc_uri, [target])
    quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    titles = [a.title for a in quick]
    assert len(titles) == len(set(titles)), titles  # a user can tell them apart
    assert any("eager" in t.lower() for t in titles), titles
    assert any(t.startswith("Disable DPX101 for this line") for t in titles), titles
    assert all("unsafe" in t for t in titles if "eager" in t.lower())
    version = 1
    for action in quick:
        fixed = apply_text_edits(text, edits_of(action.edit, doc_uri, profile))
        ast.parse(fixed)  # valid Python
        assert fixed != text
        version += 1
        replace_all(client, doc_uri, version, fixed)
        after = await wait_diagnostics(client, doc_uri, version=version)
        assert not [d for d in after if d.code == target.code and d.range.start.line == target.range.start.line], (
            action.title, after)
        version += 1
        replace_all(client, doc_uri, version, text)  # back to the buggy text for the next action
        assert await wait_diagnostics(client, doc_uri, version=version)


async def test_fix_all_applies_every_fix(client: LanguageClient) -> None:
    profile = client.profile  # type: ignore[attr-defined]
    # two hazards; every fix of this rule is behaviour-changing, so ask for unsafe fixes too
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"denpex": {"unsafeFixes": True, "debounceMs": 0}}))
    text = SCENARIO.read_text(encoding="utf-8").replace(
        "    return y / scale", "    peak = y.max().item()\n    return y / scale / peak")
    doc_uri, _ = open_doc(client, SCENARIO, text)
    diags = await wait_diagnostics(client, doc_uri, version=1)
    assert len(diags) == 2, diags
    actions = await code_actions(client, doc_uri, [], only=[FIX_ALL])
    assert [a.kind for a in actions] == [FIX_ALL]
    fixed = apply_text_edits(text, edits_of(actions[0].edit, doc_uri, profile))
    ast.parse(fixed)
    replace_all(client, doc_uri, 2, fixed)
    assert await wait_diagnostics(client, doc_uri, version=2) == []


async def test_fix_all_resolves_lazily(client: LanguageClient) -> None:
    profile = client.profile  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"denpex": {"unsafeFixes": True, "debounceMs": 0}}))
    doc_uri, text = open_doc(client, SCENARIO)
    await wait_diagnostics(client, doc_uri, version=1)
    actions = await code_actions(client, doc_uri, [], only=["source"])
    fix_all = [a for a in actions if a.kind == FIX_ALL]
    assert len(fix_all) == 1
    assert fix_all[0].edit is None and fix_all[0].data  # both profiles declare resolveSupport(edit)
    resolved = await client.code_action_resolve_async(fix_all[0])
    fixed = apply_text_edits(text, edits_of(resolved.edit, doc_uri, profile))
    ast.parse(fixed)
    replace_all(client, doc_uri, 2, fixed)
    assert await wait_diagnostics(client, doc_uri, version=2) == []


async def test_fix_all_is_safe_only_by_default(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, SCENARIO)
    await wait_diagnostics(client, doc_uri, version=1)
    # the .item() fixes are all unsafe: nothing for fix-all to do
    assert await code_actions(client, doc_uri, [], only=[FIX_ALL]) == []


async def test_only_filters_kinds(client: LanguageClient) -> None:
    doc_uri, _ = open_doc(client, SCENARIO)
    diags = await wait_diagnostics(client, doc_uri, version=1)
    actions = await code_actions(client, doc_uri, diags, only=[types.CodeActionKind.Refactor])
    assert actions == []
