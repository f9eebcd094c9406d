// Small pure helpers: debouncing, frame-path matching, shell quoting.

/** Coalesces calls: fn runs once, `delayMs` after the last call. */
export class Debouncer {
  private timer: ReturnType<typeof setTimeout> | undefined;
  constructor(
    private readonly delayMs: number,
    private readonly fn: () => void | Promise<void>,
    private readonly timers: { set: typeof setTimeout; clear: typeof clearTimeout } = { set: setTimeout, clear: clearTimeout },
  ) {}
  trigger(): void {
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = this.timers.set(() => {
      this.timer = undefined;
      void this.fn();
    }, this.delayMs);
  }
  get pending(): boolean {
    return this.timer !== undefined;
  }
  dispose(): void {
    if (this.timer !== undefined) this.timers.clear(this.timer);
    this.timer = undefined;
  }
}

function segments(p: string): string[] {
  return p.replace(/\\/g, '/').split('/').filter((s) => s.length > 0 && s !== '.');
}

/** Number of trailing path segments two paths share. */
export function commonSuffixLength(a: string, b: string): number {
  const x = segments(a);
  const y = segments(b);
  let n = 0;
  while (n < x.length && n < y.length && x[x.length - 1 - n] === y[y.length - 1 - n]) n++;
  return n;
}

/**
 * Maps a path from a log (often a container path like /workspace/pkg/train.py) to the workspace
 * file that shares the longest trailing run of path segments with it. The file name must match;
 * ties are broken by the shorter candidate path. Returns undefined when nothing matches.
 */
export function bestSuffixMatch(logPath: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestLen = 0;
  for (const c of candidates) {
    const n = commonSuffixLength(logPath, c);
    if (n === 0) continue;
    if (n > bestLen || (n === bestLen && best !== undefined && c.length < best.length)) {
      best = c;
      bestLen = n;
    }
  }
  return best;
}

/** POSIX shell quoting for one argument. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * The verification command as it will run: a leading `denpex` is replaced by the command that
 * runs the Denpex CLI this extension found (e.g. `python3 -I .../denpex_server.py`).
 */
export function rewriteDenpexCommand(command: string, cliPrefix: string[] | undefined): string {
  const trimmed = command.trim();
  if (!cliPrefix || cliPrefix.length === 0) return trimmed;
  const m = /^denpex(\s|$)/.exec(trimmed);
  if (!m) return trimmed;
  return cliPrefix.map(shellQuote).join(' ') + trimmed.slice('denpex'.length);
}
