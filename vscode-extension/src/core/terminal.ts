// Reading text out of the integrated terminal. Pure logic over injected effects so it is
// unit-tested without VS Code.

/** The part of vscode.Terminal this module uses. `selection` exists from VS Code 1.93 on. */
export interface TerminalLike {
  readonly name: string;
  readonly selection?: string | undefined;
}

export interface TerminalSelectionDeps {
  /** Runs `workbench.action.terminal.copySelection` (copies the active terminal's selection). */
  copySelection(): Thenable<unknown>;
  readClipboard(): Thenable<string>;
  writeClipboard(text: string): Thenable<void>;
}

export interface TerminalText {
  text: string;
  /** How the text was obtained, for the log and the tests. */
  via: 'api' | 'clipboard' | 'shellIntegration' | 'copyLastCommandOutput';
}

/** True when this VS Code exposes Terminal.selection (the property exists, even if empty). */
export function hasSelectionApi(terminal: TerminalLike): boolean {
  return 'selection' in terminal;
}

/**
 * Returns the active terminal's selected text. Uses Terminal.selection when the VS Code version
 * has it; otherwise copies the selection through the clipboard, restoring the clipboard after.
 * A sentinel written to the clipboard first tells "nothing selected" apart from "the same text
 * was already on the clipboard".
 */
export async function readTerminalSelection(
  terminal: TerminalLike | undefined,
  deps: TerminalSelectionDeps,
): Promise<TerminalText | undefined> {
  if (!terminal) return undefined;
  if (hasSelectionApi(terminal)) {
    const sel = terminal.selection;
    if (sel && sel.trim()) return { text: sel, via: 'api' };
    // The API exists and says nothing is selected: trust it, but the clipboard route is cheap
    // and catches VS Code builds where the property lags behind the renderer.
  }
  return viaClipboard(deps, () => deps.copySelection(), 'clipboard');
}

/** Runs `copy` (a command that puts terminal text on the clipboard) and returns what it copied. */
export async function viaClipboard(
  deps: Pick<TerminalSelectionDeps, 'readClipboard' | 'writeClipboard'>,
  copy: () => Thenable<unknown>,
  via: TerminalText['via'],
): Promise<TerminalText | undefined> {
  let saved: string | undefined;
  try {
    saved = await deps.readClipboard();
  } catch {
    saved = undefined;
  }
  const sentinel = `\u0000denpex-clipboard-probe-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  try {
    await deps.writeClipboard(sentinel);
    await copy();
    const got = await deps.readClipboard();
    if (got === sentinel || !got.trim()) return undefined;
    return { text: got, via };
  } catch {
    return undefined;
  } finally {
    if (saved !== undefined) {
      try {
        await deps.writeClipboard(saved);
      } catch {
        /* the clipboard is best effort */
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ANSI and terminal control sequences

// CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other two-byte escapes, and lone controls
// other than \n and \t. Shell integration (OSC 633/133) and colours come through read().
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]/g;

export function stripAnsi(text: string): string {
  const noEsc = text.replace(ANSI, '');
  // \r\n -> \n; a bare \r (progress bars) keeps only what was written last on the line
  const lines = noEsc.replace(/\r\n/g, '\n').split('\n');
  const out = lines.map((line) => {
    if (!line.includes('\r')) return line;
    const parts = line.split('\r');
    let result = '';
    for (const p of parts) result = p + result.slice(p.length);
    return result;
  });
  // eslint-disable-next-line no-control-regex
  return out.join('\n').replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '');
}

// ---------------------------------------------------------------------------------------------
// Shell integration: the output of the last command run in each terminal

export interface ExecutionLike {
  readonly commandLine?: { readonly value: string } | undefined;
  read(): AsyncIterable<string>;
}

export interface RecordedCommand {
  commandLine: string;
  output: string;
  exitCode: number | undefined;
  truncated: boolean;
}

/** Keeps, per terminal, the output of the last finished command (and the one running now). */
export class CommandOutputRecorder<T> {
  private readonly running = new Map<T, { exec: ExecutionLike; chunks: string[]; size: number; truncated: boolean; done: Promise<void> }>();
  private readonly last = new Map<T, RecordedCommand>();

  /** maxBytes: older output is dropped beyond this (the diagnosis needs the end of a log most). */
  constructor(private readonly maxChars = 4 * 1024 * 1024) {}

  /** Call from window.onDidStartTerminalShellExecution. The stream must be read from the start. */
  start(terminal: T, exec: ExecutionLike): void {
    const state = { exec, chunks: [] as string[], size: 0, truncated: false, done: Promise.resolve() };
    state.done = (async () => {
      try {
        for await (const chunk of exec.read()) {
          state.chunks.push(chunk);
          state.size += chunk.length;
          while (state.size > this.maxChars && state.chunks.length > 1) {
            state.size -= state.chunks.shift()!.length;
            state.truncated = true;
          }
        }
      } catch {
        /* the terminal went away */
      }
    })();
    this.running.set(terminal, state);
  }

  /** Call from window.onDidEndTerminalShellExecution. */
  async end(terminal: T, exec: ExecutionLike, exitCode: number | undefined): Promise<void> {
    const state = this.running.get(terminal);
    if (!state || state.exec !== exec) return;
    this.running.delete(terminal);
    await state.done;
    this.last.set(terminal, {
      commandLine: exec.commandLine?.value ?? '',
      output: stripAnsi(state.chunks.join('')),
      exitCode,
      truncated: state.truncated,
    });
  }

  lastCommand(terminal: T): RecordedCommand | undefined {
    return this.last.get(terminal);
  }

  forget(terminal: T): void {
    this.running.delete(terminal);
    this.last.delete(terminal);
  }
}
