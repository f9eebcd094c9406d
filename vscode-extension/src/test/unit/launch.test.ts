import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BundledServer,
  LaunchDeps,
  LaunchSettings,
  ProbeResult,
  expandVariables,
  libsDirToVersion,
  parseProbeOutput,
  resolveLaunch,
} from '../../core/launch';

const BUNDLED: BundledServer = { launcher: '/ext/bundled/tool/denpex_server.py', versions: ['3.10', '3.11', '3.12', '3.13'] };

function settings(over: Partial<LaunchSettings> = {}): LaunchSettings {
  return { serverPath: '', interpreter: [], usePythonExtension: true, ...over };
}

/** Fake machine: interpreters by argv[0], files that exist, the Python extension's choice. */
function deps(opts: {
  pythons?: Record<string, ProbeResult>;
  files?: string[];
  pyExt?: string[];
  bundled?: BundledServer | undefined;
  pathPythons?: string[];
}): LaunchDeps & { probed: string[][]; askedPyExt: number } {
  const probed: string[][] = [];
  const d = {
    probed,
    askedPyExt: 0,
    probe: async (cmd: string[]) => {
      probed.push(cmd);
      return opts.pythons?.[cmd[0]];
    },
    pythonExtensionInterpreter: async () => {
      d.askedPyExt++;
      return opts.pyExt;
    },
    exists: (p: string) => (opts.files ?? []).includes(p),
    bundled: 'bundled' in opts ? opts.bundled : BUNDLED,
    pathPythons: opts.pathPythons ?? ['python3', 'python'],
    expand: (v: string) => expandVariables(v, { home: '/home/u', workspaceFolder: '/ws', env: { VENV: '/venvs/a' } }),
  };
  return d;
}

const py = (version: [number, number], hasDenpex: boolean, executable = '/usr/bin/python3'): ProbeResult => ({ version, hasDenpex, executable });

describe('resolveLaunch: order', () => {
  it('uses denpex.serverPath first, with ${workspaceFolder} expanded', async () => {
    const d = deps({ files: ['/ws/.venv/bin/denpex'], pythons: { python3: py([3, 11], true) } });
    const plan = await resolveLaunch(settings({ serverPath: '${workspaceFolder}/.venv/bin/denpex', interpreter: ['/x/python'] }), true, d);
    assert.equal(plan.ok, true);
    if (!plan.ok) return;
    assert.equal(plan.source, 'serverPath');
    assert.equal(plan.command, '/ws/.venv/bin/denpex');
    assert.deepEqual(plan.args, ['serve']);
    assert.equal(d.probed.length, 0, 'serverPath needs no probing');
  });

  it('reports a serverPath that does not exist instead of silently falling back', async () => {
    const plan = await resolveLaunch(settings({ serverPath: '~/bin/denpex' }), true, deps({}));
    assert.equal(plan.ok, false);
    if (plan.ok) return;
    assert.match(plan.message, /\/home\/u\/bin\/denpex/);
    assert.match(plan.message, /denpex\.interpreter/);
  });

  it('denpex.interpreter with denpex installed runs -m denpex serve, keeping extra args', async () => {
    const d = deps({ pythons: { '/venvs/a/bin/python': py([3, 12], true, '/venvs/a/bin/python') } });
    const plan = await resolveLaunch(settings({ interpreter: ['${env:VENV}/bin/python', '-X', 'utf8'] }), true, d);
    assert.ok(plan.ok);
    if (!plan.ok) return;
    assert.equal(plan.source, 'interpreter');
    assert.equal(plan.command, '/venvs/a/bin/python');
    assert.deepEqual(plan.args, ['-X', 'utf8', '-m', 'denpex', 'serve']);
    assert.equal(d.askedPyExt, 0, 'the Python extension is not consulted when the setting is set');
  });

  it('denpex.interpreter without denpex runs the bundled server under it when the version is bundled', async () => {
    const d = deps({ pythons: { '/opt/py': py([3, 11], false, '/opt/py') } });
    const plan = await resolveLaunch(settings({ interpreter: ['/opt/py'] }), true, d);
    assert.ok(plan.ok);
    if (!plan.ok) return;
    assert.equal(plan.source, 'interpreter');
    assert.deepEqual(plan.args, ['-I', BUNDLED.launcher, 'serve']);
    assert.ok(plan.notes.some((n) => /not installed/.test(n)));
  });

  it('denpex.interpreter that is too old or not Python gives one clear message', async () => {
    let plan = await resolveLaunch(settings({ interpreter: ['/old/py'] }), true, deps({ pythons: { '/old/py': py([3, 8], true) } }));
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.message, /Python 3\.8; Denpex needs Python 3\.10/);
    plan = await resolveLaunch(settings({ interpreter: ['/nope'] }), true, deps({}));
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.message, /could not be run as Python/);
  });

  it('denpex.interpreter without denpex and with an unbundled version says how to install', async () => {
    const plan = await resolveLaunch(settings({ interpreter: ['/py314'] }), true, deps({ pythons: { '/py314': py([3, 14], false, '/py314') } }));
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.message, /\/py314 -m pip install denpex/);
  });

  it('uses the Python extension environment when denpex is importable there', async () => {
    const d = deps({ pyExt: ['/home/u/.venv/bin/python'], pythons: { '/home/u/.venv/bin/python': py([3, 11], true, '/home/u/.venv/bin/python'), python3: py([3, 11], false) } });
    const plan = await resolveLaunch(settings(), true, d);
    assert.ok(plan.ok);
    if (!plan.ok) return;
    assert.equal(plan.source, 'pythonExtension');
    assert.deepEqual([plan.command, ...plan.args], ['/home/u/.venv/bin/python', '-m', 'denpex', 'serve']);
  });

  it('skips the Python extension environment without denpex and falls back to the bundled server', async () => {
    const d = deps({ pyExt: ['/env/python'], pythons: { '/env/python': py([3, 11], false, '/env/python'), python3: py([3, 12], false, '/usr/bin/python3') } });
    const plan = await resolveLaunch(settings(), true, d);
    assert.ok(plan.ok);
    if (!plan.ok) return;
    assert.equal(plan.source, 'bundled');
    assert.deepEqual([plan.command, ...plan.args], ['python3', '-I', BUNDLED.launcher, 'serve']);
    assert.ok(plan.notes.some((n) => /has no denpex; skipping/.test(n)));
  });

  it('works without the Python extension (it is optional)', async () => {
    const d = deps({ pyExt: undefined, pythons: { python3: py([3, 10], false) } });
    const plan = await resolveLaunch(settings(), true, d);
    assert.ok(plan.ok);
    if (plan.ok) assert.equal(plan.source, 'bundled');
  });

  it('does not ask the Python extension when usePythonExtension is off', async () => {
    const d = deps({ pyExt: ['/env/python'], pythons: { '/env/python': py([3, 11], true), python3: py([3, 11], false) } });
    const plan = await resolveLaunch(settings({ usePythonExtension: false }), true, d);
    assert.equal(d.askedPyExt, 0);
    assert.ok(plan.ok && plan.source === 'bundled');
  });

  it('tries python3 then python on PATH and picks one whose version is bundled', async () => {
    const d = deps({ pythons: { python3: py([3, 9], false), python: py([3, 13], false, '/usr/local/bin/python') } });
    const plan = await resolveLaunch(settings(), true, d);
    assert.ok(plan.ok);
    if (!plan.ok) return;
    assert.equal(plan.command, 'python');
    assert.match(plan.description, /Python 3\.13/);
  });

  it('ends with one clear message naming what to set when nothing works', async () => {
    let plan = await resolveLaunch(settings(), true, deps({ pythons: {} }));
    assert.equal(plan.ok, false);
    if (!plan.ok) {
      assert.match(plan.message, /found no python3 or python on PATH/);
      assert.match(plan.message, /denpex\.interpreter/);
      assert.match(plan.message, /denpex\.serverPath/);
    }
    plan = await resolveLaunch(settings(), true, deps({ pythons: { python3: py([3, 9], false) } }));
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.message, /needs Python 3\.10, 3\.11, 3\.12, 3\.13 \(found python3 is Python 3\.9\)/);
    plan = await resolveLaunch(settings(), true, deps({ bundled: undefined, pythons: { python3: py([3, 11], false) } }));
    assert.equal(plan.ok, false);
    if (!plan.ok) assert.match(plan.message, /could not find a language server/);
  });
});

describe('resolveLaunch: workspace trust', () => {
  it('never uses serverPath, interpreter or the Python extension in an untrusted workspace', async () => {
    const d = deps({
      files: ['/ws/evil/denpex'],
      pyExt: ['/ws/.venv/bin/python'],
      pythons: { '/ws/evil/python': py([3, 11], true), '/ws/.venv/bin/python': py([3, 11], true), python3: py([3, 11], false) },
    });
    const plan = await resolveLaunch(settings({ serverPath: '/ws/evil/denpex', interpreter: ['/ws/evil/python'] }), false, d);
    assert.ok(plan.ok);
    if (!plan.ok) return;
    assert.equal(plan.source, 'bundled');
    assert.equal(plan.command, 'python3');
    assert.ok(plan.args.includes('-I'), 'isolated mode: the workspace cannot shadow the bundled modules');
    assert.equal(d.askedPyExt, 0);
    assert.ok(!d.probed.some((c) => c[0].startsWith('/ws/')), 'nothing from the workspace was even run');
    assert.ok(plan.notes.some((n) => /not trusted: ignoring denpex.serverPath/.test(n)));
    assert.ok(plan.notes.some((n) => /not trusted: ignoring denpex.interpreter/.test(n)));
  });
});

describe('launch helpers', () => {
  it('parses the probe output, tolerating noise before it', () => {
    assert.deepEqual(parseProbeOutput('warning: x\n{"version": [3, 11], "executable": "/p", "hasDenpex": true}\n'), {
      version: [3, 11],
      executable: '/p',
      hasDenpex: true,
    });
    assert.equal(parseProbeOutput(''), undefined);
    assert.equal(parseProbeOutput('Python 2.7'), undefined);
    assert.equal(parseProbeOutput('{"version": "3.11"}'), undefined);
  });

  it('maps bundled/libs directory names to versions', () => {
    assert.equal(libsDirToVersion('py311'), '3.11');
    assert.equal(libsDirToVersion('py310'), '3.10');
    assert.equal(libsDirToVersion('common'), undefined);
  });

  it('expands ~, ${userHome}, ${workspaceFolder} and ${env:X}', () => {
    const ctx = { home: '/h', workspaceFolder: '/w', env: { A: 'x' } };
    assert.equal(expandVariables('~/a', ctx), '/h/a');
    assert.equal(expandVariables('${userHome}/b', ctx), '/h/b');
    assert.equal(expandVariables('${workspaceFolder}/c/${env:A}/${env:MISSING}d', ctx), '/w/c/x/d');
    assert.equal(expandVariables('/abs/~x', ctx), '/abs/~x');
  });
});
