// Owns the language client: resolves how to launch `denpex serve`, starts, stops and restarts it,
// and reflects its state in the status bar item.

import * as cp from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import {
  BundledServer,
  LaunchFailure,
  LaunchPlan,
  LaunchSettings,
  PROBE_SCRIPT,
  ProbeResult,
  expandVariables,
  libsDirToVersion,
  parseProbeOutput,
  resolveLaunch,
} from './core/launch';
import { Debouncer } from './core/util';

export const RESTART_DELAY_MS = 1000;
/** Settings read only by the client; changing them does not restart the server. */
const CLIENT_ONLY_SETTINGS = ['denpex.showReportOnDiagnose'];

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment(env: { path: string } | string): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

export class DenpexServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private plan: LaunchPlan | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private readonly restartDebouncer: Debouncer;
  private readonly disposables: vscode.Disposable[] = [];
  private pythonEventHooked = false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly status: vscode.StatusBarItem,
  ) {
    this.restartDebouncer = new Debouncer(RESTART_DELAY_MS, () => this.restart('settings changed'));
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!e.affectsConfiguration('denpex')) return;
        if (!this.affectsServer(e)) return;
        this.log.info('Denpex settings changed; restarting the server shortly');
        this.restartDebouncer.trigger();
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        this.log.info('workspace trusted; restarting the server with the configured interpreter');
        this.restartDebouncer.trigger();
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.restartDebouncer.trigger()),
    );
  }

  private affectsServer(e: vscode.ConfigurationChangeEvent): boolean {
    const pkg = this.context.extension.packageJSON as { contributes?: { configuration?: { properties?: Record<string, unknown> } } };
    const keys = Object.keys(pkg.contributes?.configuration?.properties ?? {});
    return keys.some((k) => !CLIENT_ONLY_SETTINGS.includes(k) && e.affectsConfiguration(k));
  }

  get launchPlan(): LaunchPlan | undefined {
    return this.plan;
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The argv that runs the Denpex CLI the server came from (for the verification command). */
  cliPrefix(): string[] | undefined {
    const p = this.plan;
    if (!p) return undefined;
    if (p.source === 'serverPath') return [p.command];
    // drop the trailing "serve"
    return [p.command, ...p.args.slice(0, -1)];
  }

  private setStatus(state: 'starting' | 'running' | 'stopped' | 'failed', detail?: string): void {
    const icon = { starting: '$(loading~spin)', running: '$(pulse)', stopped: '$(circle-slash)', failed: '$(error)' }[state];
    this.status.text = `${icon} Denpex`;
    const md = new vscode.MarkdownString(undefined, true);
    md.appendMarkdown(`**Denpex language server: ${state}**\n\n`);
    if (detail) md.appendText(detail + '\n\n');
    md.appendMarkdown('Click to show the output.');
    this.status.tooltip = md;
    this.status.backgroundColor = state === 'failed' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    this.status.accessibilityInformation = { label: `Denpex language server ${state}` };
    this.status.show();
  }

  async start(): Promise<LanguageClient | undefined> {
    if (this.client) return this.client;
    if (this.starting) return this.starting;
    this.starting = this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** The running client, starting it if needed; undefined (the user was told why) if it cannot run. */
  async ready(): Promise<LanguageClient | undefined> {
    return this.start();
  }

  private reportFailure(message: string): void {
    this.log.error(message);
    this.setStatus('failed', message);
    void vscode.window.showErrorMessage(message, 'Open Settings', 'Show Output').then((pick) => {
      if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'denpex.');
      if (pick === 'Show Output') this.log.show(true);
    });
  }

  private async doStart(): Promise<LanguageClient | undefined> {
    this.setStatus('starting');
    const resolved = await this.resolve();
    for (const n of resolved.notes) this.log.info(n);
    if (!resolved.ok) {
      this.plan = undefined;
      this.reportFailure(resolved.message);
      return undefined;
    }
    this.plan = resolved;
    this.log.info(`starting the server: ${resolved.description}`);
    this.log.info(`command: ${[resolved.command, ...resolved.args].join(' ')}`);

    // Start outside the workspace: `python -m denpex` puts its working directory on sys.path, so
    // a workspace file named like a module Denpex imports (or a `denpex/` folder) would be run.
    // The server learns the workspace folders from `initialize`, not from its working directory.
    const serverOptions: ServerOptions = {
      command: resolved.command,
      args: resolved.args,
      transport: TransportKind.stdio,
      options: { cwd: os.tmpdir(), env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const config = vscode.workspace.getConfiguration('denpex');
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
        // the Python cells of Jupyter notebooks (the server syncs them as notebook documents)
        { notebook: '*', language: 'python' },
        { scheme: 'file', language: 'log' },
        { scheme: 'file', pattern: '**/*.{log,out,err}' },
      ],
      outputChannel: this.log,
      traceOutputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: { settings: settingsForServer(config) },
      synchronize: { configurationSection: 'denpex' },
      connectionOptions: { maxRestartCount: 4 },
    };
    const client = new LanguageClient('denpex', 'Denpex', serverOptions, clientOptions);
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) this.setStatus('running', resolved.description);
      else if (e.newState === State.Starting) this.setStatus('starting', resolved.description);
      else if (e.newState === State.Stopped && this.client === client) this.setStatus('stopped', 'The server stopped. Run "Denpex: Restart Server".');
    });
    this.client = client;
    try {
      await client.start();
      this.setStatus('running', resolved.description);
      this.hookPythonEnvironmentChanges();
      return client;
    } catch (err) {
      this.client = undefined;
      const message = `Denpex: the language server failed to start (${resolved.description}): ${String((err as Error)?.message ?? err)}`;
      this.reportFailure(message);
      try {
        await client.dispose();
      } catch {
        /* already gone */
      }
      return undefined;
    }
  }

  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c) {
      try {
        await c.stop(5000);
      } catch (err) {
        this.log.warn(`stopping the server: ${String(err)}`);
      }
      try {
        await c.dispose();
      } catch {
        /* ignore */
      }
    }
    this.setStatus('stopped');
  }

  async restart(reason: string): Promise<void> {
    this.log.info(`restarting the server (${reason})`);
    if (this.starting) await this.starting;
    await this.stop();
    await this.start();
  }

  /** Runs the server's `denpex.diagnose` command on text. */
  async diagnose(text: string, uri?: string): Promise<unknown> {
    const client = await this.ready();
    if (!client) return undefined;
    return client.sendRequest(ExecuteCommandRequest.type, {
      command: 'denpex.diagnose',
      arguments: [uri ? { text, uri } : { text }],
    });
  }

  // -------------------------------------------------------------------------------------------

  private readSettings(): LaunchSettings {
    const c = vscode.workspace.getConfiguration('denpex');
    const interp = c.get<unknown>('interpreter');
    return {
      serverPath: c.get<string>('serverPath') ?? '',
      interpreter: Array.isArray(interp) ? interp.filter((s): s is string => typeof s === 'string') : typeof interp === 'string' ? [interp] : [],
      usePythonExtension: c.get<boolean>('usePythonExtension') ?? true,
    };
  }

  bundledServer(): BundledServer | undefined {
    const root = path.join(this.context.extensionPath, 'bundled');
    const launcher = path.join(root, 'tool', 'denpex_server.py');
    if (!fs.existsSync(launcher)) return undefined;
    let versions: string[] = [];
    try {
      versions = fs
        .readdirSync(path.join(root, 'libs'))
        .filter((n) => fs.existsSync(path.join(root, 'libs', n, 'denpex')))
        .map(libsDirToVersion)
        .filter((v): v is string => !!v);
    } catch {
      versions = [];
    }
    return { launcher, versions };
  }

  private async resolve(): Promise<LaunchPlan | LaunchFailure> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    return resolveLaunch(this.readSettings(), vscode.workspace.isTrusted, {
      probe: (cmd) => probePython(cmd, this.log),
      pythonExtensionInterpreter: () => this.pythonExtensionInterpreter(),
      exists: (p) => fs.existsSync(p),
      bundled: this.bundledServer(),
      pathPythons: process.platform === 'win32' ? ['python', 'py'] : ['python3', 'python'],
      expand: (v) => expandVariables(v, { home: os.homedir(), workspaceFolder: folder, env: process.env }),
    });
  }

  private async pythonApi(): Promise<PythonExtensionApi | undefined> {
    const ext = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
    if (!ext) return undefined;
    try {
      return ext.isActive ? ext.exports : await ext.activate();
    } catch (err) {
      this.log.warn(`the Python extension did not activate: ${String(err)}`);
      return undefined;
    }
  }

  private async pythonExtensionInterpreter(): Promise<string[] | undefined> {
    const api = await this.pythonApi();
    const envs = api?.environments;
    if (!envs) return undefined;
    try {
      const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
      const active = envs.getActiveEnvironmentPath(resource);
      if (!active) return undefined;
      const env = await envs.resolveEnvironment(active);
      const exe = env?.executable?.uri?.fsPath;
      return exe ? [exe] : undefined;
    } catch (err) {
      this.log.warn(`reading the Python extension's environment: ${String(err)}`);
      return undefined;
    }
  }

  private hookPythonEnvironmentChanges(): void {
    if (this.pythonEventHooked) return;
    void this.pythonApi().then((api) => {
      const ev = api?.environments?.onDidChangeActiveEnvironmentPath;
      if (!ev || this.pythonEventHooked) return;
      this.pythonEventHooked = true;
      this.disposables.push(
        ev(() => {
          if (this.plan?.source === 'serverPath' || this.plan?.source === 'interpreter') return;
          this.log.info('the Python extension changed its environment; restarting shortly');
          this.restartDebouncer.trigger();
        }),
      );
    });
  }

  dispose(): void {
    this.restartDebouncer.dispose();
    for (const d of this.disposables) d.dispose();
    void this.stop();
  }
}

/** The `denpex.*` settings as the server reads them (client-only keys removed). */
export function settingsForServer(config: vscode.WorkspaceConfiguration): Record<string, unknown> {
  const keys = ['run', 'select', 'ignore', 'severity', 'captureWrappers', 'graphedCallables', 'guards', 'unsafeFixes', 'logDocuments'];
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const v = config.get(k);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

function probePython(cmd: string[], log: vscode.LogOutputChannel): Promise<ProbeResult | undefined> {
  return new Promise((resolve) => {
    cp.execFile(
      cmd[0],
      [...cmd.slice(1), '-c', PROBE_SCRIPT],
      { timeout: 15000, cwd: os.tmpdir(), windowsHide: true },
      (err, stdout) => {
        if (err) {
          log.debug(`probe ${cmd.join(' ')}: ${err.message}`);
          resolve(undefined);
          return;
        }
        resolve(parseProbeOutput(stdout));
      },
    );
  });
}
