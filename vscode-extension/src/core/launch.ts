// Decides how to start the Denpex language server. Pure logic: every effect (probing an
// interpreter, asking the Python extension, checking files) comes in through LaunchDeps, so the
// whole order is unit-tested in plain Node.
//
// Order:
//   1. `denpex.serverPath`                     -> <path> serve                 (trusted workspaces only)
//   2. `denpex.interpreter`                    -> <python> -m denpex serve     (trusted workspaces only)
//                                                 or the bundled server under that python
//   3. the Python extension's active env       -> <python> -m denpex serve     (trusted, optional)
//                                                 when denpex is importable there
//   4. the server bundled in the .vsix         -> python3 -I bundled/tool/denpex_server.py
//                                                 (libs installed with pip --target at build time)
//   5. one clear message saying what to set.

export const MIN_PYTHON: readonly [number, number] = [3, 10];

export interface LaunchSettings {
  serverPath: string;
  interpreter: string[];
  usePythonExtension: boolean;
}

export interface ProbeResult {
  /** [major, minor] of the interpreter. */
  version: [number, number];
  /** sys.executable, for the log. */
  executable: string;
  /** `import denpex` would succeed (importlib.util.find_spec). */
  hasDenpex: boolean;
}

export interface BundledServer {
  /** Absolute path of bundled/tool/denpex_server.py. */
  launcher: string;
  /** Python versions ("3.11") that have libraries under bundled/libs/py311. */
  versions: string[];
}

export interface LaunchDeps {
  /** Runs `cmd... -c <probe>`; undefined when it cannot be run or is not Python. */
  probe(cmd: string[]): Promise<ProbeResult | undefined>;
  /** The Python extension's active interpreter (argv), undefined if not installed / none selected. */
  pythonExtensionInterpreter(): Promise<string[] | undefined>;
  /** Whether a file exists (used for serverPath). */
  exists(path: string): boolean;
  /** The bundled server, undefined when this build has none. */
  bundled: BundledServer | undefined;
  /** Interpreters looked up on PATH for the bundled server, in order. */
  pathPythons: string[];
  /** Expands ~ and ${workspaceFolder}/${env:X}. */
  expand(value: string): string;
}

export type LaunchSource = 'serverPath' | 'interpreter' | 'pythonExtension' | 'bundled';

export interface LaunchPlan {
  ok: true;
  source: LaunchSource;
  command: string;
  args: string[];
  /** One-line description for the output channel and the status item tooltip. */
  description: string;
  /** Things that were skipped on the way, for the output channel. */
  notes: string[];
}

export interface LaunchFailure {
  ok: false;
  /** The single user-facing message. */
  message: string;
  notes: string[];
}

export const PROBE_SCRIPT =
  'import sys, json, importlib.util; print(json.dumps({"version": list(sys.version_info[:2]), ' +
  '"executable": sys.executable, "hasDenpex": importlib.util.find_spec("denpex") is not None}))';

/** Parses the probe script's stdout; undefined for anything unexpected. */
export function parseProbeOutput(stdout: string): ProbeResult | undefined {
  const line = stdout.trim().split(/\r?\n/).pop();
  if (!line) return undefined;
  try {
    const v = JSON.parse(line) as { version?: unknown; executable?: unknown; hasDenpex?: unknown };
    if (!Array.isArray(v.version) || v.version.length < 2) return undefined;
    const [major, minor] = v.version as unknown[];
    if (typeof major !== 'number' || typeof minor !== 'number') return undefined;
    return {
      version: [major, minor],
      executable: typeof v.executable === 'string' ? v.executable : '',
      hasDenpex: v.hasDenpex === true,
    };
  } catch {
    return undefined;
  }
}

export function versionOk(v: [number, number]): boolean {
  return v[0] > MIN_PYTHON[0] || (v[0] === MIN_PYTHON[0] && v[1] >= MIN_PYTHON[1]);
}

export function versionString(v: [number, number]): string {
  return `${v[0]}.${v[1]}`;
}

/** bundled/libs/py311 -> "3.11"; anything else -> undefined. */
export function libsDirToVersion(name: string): string | undefined {
  const m = /^py(\d)(\d+)$/.exec(name);
  return m ? `${m[1]}.${m[2]}` : undefined;
}

function bundledPlan(
  interpreter: string[],
  probe: ProbeResult,
  bundled: BundledServer,
  source: LaunchSource,
  notes: string[],
): LaunchPlan {
  // -I: isolated mode. Neither the working directory (the workspace) nor PYTHON* variables nor
  // the user site can put modules in front of the bundled libraries.
  return {
    ok: true,
    source,
    command: interpreter[0],
    args: [...interpreter.slice(1), '-I', bundled.launcher, 'serve'],
    description: `bundled server with Python ${versionString(probe.version)} (${probe.executable || interpreter[0]})`,
    notes,
  };
}

function moduleplan(interpreter: string[], probe: ProbeResult, source: LaunchSource, notes: string[]): LaunchPlan {
  return {
    ok: true,
    source,
    command: interpreter[0],
    args: [...interpreter.slice(1), '-m', 'denpex', 'serve'],
    description: `denpex from ${probe.executable || interpreter[0]} (Python ${versionString(probe.version)})`,
    notes,
  };
}

function bundledHas(bundled: BundledServer | undefined, v: [number, number]): boolean {
  return !!bundled && bundled.versions.includes(versionString(v));
}

export const WHAT_TO_SET =
  'Set "denpex.interpreter" to a Python 3.10+ that has denpex installed (pip install denpex), ' +
  'or "denpex.serverPath" to the denpex executable, then run "Denpex: Restart Server".';

/**
 * Works out the command that starts `denpex serve`. `trusted` is the workspace-trust state:
 * untrusted workspaces never use serverPath, interpreter or the Python extension's environment
 * (all three may point into the workspace itself).
 */
export async function resolveLaunch(
  settings: LaunchSettings,
  trusted: boolean,
  deps: LaunchDeps,
): Promise<LaunchPlan | LaunchFailure> {
  const notes: string[] = [];
  const serverPath = settings.serverPath.trim();
  const interpreter = settings.interpreter.map((s) => s.trim()).filter((s) => s.length > 0);

  if (!trusted) {
    if (serverPath) notes.push('workspace is not trusted: ignoring denpex.serverPath');
    if (interpreter.length) notes.push('workspace is not trusted: ignoring denpex.interpreter');
  } else {
    // 1. an explicit denpex executable
    if (serverPath) {
      const path = deps.expand(serverPath);
      if (!deps.exists(path)) {
        return {
          ok: false,
          message: `Denpex: denpex.serverPath is set to "${path}", which does not exist. ${WHAT_TO_SET}`,
          notes,
        };
      }
      return {
        ok: true,
        source: 'serverPath',
        command: path,
        args: ['serve'],
        description: `${path} serve (denpex.serverPath)`,
        notes,
      };
    }
    // 2. an explicit interpreter
    if (interpreter.length) {
      const argv = [deps.expand(interpreter[0]), ...interpreter.slice(1)];
      const probe = await deps.probe(argv);
      if (!probe) {
        return {
          ok: false,
          message: `Denpex: denpex.interpreter "${argv.join(' ')}" could not be run as Python. ${WHAT_TO_SET}`,
          notes,
        };
      }
      if (!versionOk(probe.version)) {
        return {
          ok: false,
          message: `Denpex: denpex.interpreter is Python ${versionString(probe.version)}; Denpex needs Python 3.10 or newer. ${WHAT_TO_SET}`,
          notes,
        };
      }
      if (probe.hasDenpex) return moduleplan(argv, probe, 'interpreter', notes);
      if (bundledHas(deps.bundled, probe.version)) {
        notes.push(`denpex is not installed in ${probe.executable}; using the bundled server with it`);
        return bundledPlan(argv, probe, deps.bundled!, 'interpreter', notes);
      }
      return {
        ok: false,
        message:
          `Denpex: denpex is not installed in denpex.interpreter (${probe.executable || argv[0]}). ` +
          `Run "${argv[0]} -m pip install denpex" or clear the setting to use the bundled server.`,
        notes,
      };
    }
    // 3. the Python extension's active environment (optional)
    if (settings.usePythonExtension) {
      const active = await deps.pythonExtensionInterpreter();
      if (active && active.length) {
        const probe = await deps.probe(active);
        if (probe && versionOk(probe.version) && probe.hasDenpex) {
          return moduleplan(active, probe, 'pythonExtension', notes);
        }
        notes.push(
          probe
            ? `Python extension environment ${probe.executable} (Python ${versionString(probe.version)}) has no denpex; skipping it`
            : `Python extension environment ${active.join(' ')} could not be run; skipping it`,
        );
      }
    }
  }

  // 4. the bundled server with a plain python3 from PATH
  if (!deps.bundled || deps.bundled.versions.length === 0) {
    notes.push('this build of the extension has no bundled server');
    return { ok: false, message: `Denpex could not find a language server. ${WHAT_TO_SET}`, notes };
  }
  const seen: string[] = [];
  for (const candidate of deps.pathPythons) {
    const probe = await deps.probe([candidate]);
    if (!probe) continue;
    seen.push(`${candidate} is Python ${versionString(probe.version)}`);
    if (bundledHas(deps.bundled, probe.version)) {
      return bundledPlan([candidate], probe, deps.bundled, 'bundled', notes);
    }
  }
  const have = deps.bundled.versions.join(', ');
  const found = seen.length ? `found ${seen.join('; ')}` : `found no ${deps.pathPythons.join(' or ')} on PATH`;
  return {
    ok: false,
    message: `Denpex could not start its bundled server: it needs Python ${have} (${found}). ${WHAT_TO_SET}`,
    notes,
  };
}

/** Expands a leading ~ and ${workspaceFolder}, ${userHome}, ${env:NAME}. */
export function expandVariables(
  value: string,
  ctx: { home: string; workspaceFolder?: string; env: Record<string, string | undefined> },
): string {
  let out = value;
  if (out === '~' || out.startsWith('~/')) out = ctx.home + out.slice(1);
  out = out.replace(/\$\{userHome\}/g, ctx.home);
  if (ctx.workspaceFolder !== undefined) out = out.replace(/\$\{workspaceFolder\}/g, ctx.workspaceFolder);
  out = out.replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => ctx.env[name] ?? '');
  return out;
}
