import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CommandOutputRecorder, hasSelectionApi, readTerminalSelection, stripAnsi, viaClipboard } from '../../core/terminal';

/** A fake clipboard plus a fake terminal whose copySelection puts `selected` on it. */
function fakeClipboard(initial: string, selected: string | undefined) {
  const state = { clip: initial, copies: 0 };
  return {
    state,
    deps: {
      copySelection: async () => {
        state.copies++;
        if (selected !== undefined) state.clip = selected; // VS Code leaves the clipboard alone when nothing is selected
      },
      readClipboard: async () => state.clip,
      writeClipboard: async (t: string) => {
        state.clip = t;
      },
    },
  };
}

describe('terminal selection', () => {
  it('reads Terminal.selection when the API has it, without touching the clipboard', async () => {
    const c = fakeClipboard('user clipboard', 'other');
    const got = await readTerminalSelection({ name: 'bash', selection: 'Traceback ...' }, c.deps);
    assert.deepEqual(got, { text: 'Traceback ...', via: 'api' });
    assert.equal(c.state.copies, 0);
    assert.equal(c.state.clip, 'user clipboard');
  });

  it('falls back to the clipboard on VS Code versions without Terminal.selection and restores it', async () => {
    const term = { name: 'bash' }; // no `selection` property at all (VS Code < 1.93)
    assert.equal(hasSelectionApi(term), false);
    const c = fakeClipboard('user clipboard', '[rank1]: RuntimeError: boom');
    const got = await readTerminalSelection(term, c.deps);
    assert.deepEqual(got, { text: '[rank1]: RuntimeError: boom', via: 'clipboard' });
    assert.equal(c.state.copies, 1);
    assert.equal(c.state.clip, 'user clipboard', 'the clipboard is restored');
  });

  it('tries the clipboard when the API reports an empty selection', async () => {
    const c = fakeClipboard('', 'text');
    const got = await readTerminalSelection({ name: 'zsh', selection: '' }, c.deps);
    assert.equal(got?.via, 'clipboard');
  });

  it('returns undefined when nothing is selected, even if the clipboard already held text', async () => {
    const c = fakeClipboard('stale text from before', undefined);
    const got = await readTerminalSelection({ name: 'bash' }, c.deps);
    assert.equal(got, undefined);
    assert.equal(c.state.clip, 'stale text from before');
  });

  it('returns undefined without a terminal', async () => {
    const c = fakeClipboard('x', 'y');
    assert.equal(await readTerminalSelection(undefined, c.deps), undefined);
    assert.equal(c.state.copies, 0);
  });

  it('survives a failing copy command and still restores the clipboard', async () => {
    const state = { clip: 'mine' };
    const got = await viaClipboard(
      { readClipboard: async () => state.clip, writeClipboard: async (t) => void (state.clip = t) },
      async () => {
        throw new Error('command not found');
      },
      'copyLastCommandOutput',
    );
    assert.equal(got, undefined);
    assert.equal(state.clip, 'mine');
  });
});

describe('stripAnsi', () => {
  it('removes colours, OSC 633 shell-integration marks and carriage-return overwrites', () => {
    const raw = '\u001b]633;C\u0007\u001b[31mRuntimeError\u001b[0m: boom\r\n10%\r50%\r100%\nok\u001b]633;D;1\u001b\\';
    assert.equal(stripAnsi(raw), 'RuntimeError: boom\n100%\nok');
  });
  it('keeps plain text unchanged', () => {
    assert.equal(stripAnsi('a\n\tb'), 'a\n\tb');
  });
});

async function* stream(chunks: string[]): AsyncIterable<string> {
  for (const c of chunks) {
    await Promise.resolve();
    yield c;
  }
}

describe('CommandOutputRecorder (shell integration)', () => {
  it('keeps the output of the last finished command per terminal', async () => {
    const rec = new CommandOutputRecorder<string>();
    const e1 = { commandLine: { value: 'python train.py' }, read: () => stream(['\u001b[1mTraceback\u001b[0m\r\n', 'RuntimeError: x\r\n']) };
    rec.start('t1', e1);
    await rec.end('t1', e1, 1);
    assert.deepEqual(rec.lastCommand('t1'), { commandLine: 'python train.py', output: 'Traceback\nRuntimeError: x\n', exitCode: 1, truncated: false });
    assert.equal(rec.lastCommand('t2'), undefined);
    const e2 = { commandLine: { value: 'ls' }, read: () => stream(['a\n']) };
    rec.start('t1', e2);
    await rec.end('t1', e2, 0);
    assert.equal(rec.lastCommand('t1')?.commandLine, 'ls');
    rec.forget('t1');
    assert.equal(rec.lastCommand('t1'), undefined);
  });

  it('drops the oldest output beyond its cap and says so', async () => {
    const rec = new CommandOutputRecorder<number>(10);
    const e = { read: () => stream(['0123456789', 'abcdefghij', 'KLMNO']) };
    rec.start(1, e);
    await rec.end(1, e, undefined);
    const got = rec.lastCommand(1)!;
    assert.equal(got.truncated, true);
    assert.equal(got.output, 'KLMNO');
  });

  it('ignores an end event for an execution it did not see start', async () => {
    const rec = new CommandOutputRecorder<number>();
    await rec.end(1, { read: () => stream([]) }, 0);
    assert.equal(rec.lastCommand(1), undefined);
  });
});
