// Denpex for VS Code: a thin client over `denpex serve`, plus commands that send log text
// (an editor selection, a terminal selection, the last terminal command's output, a log file)
// to the server's `denpex.diagnose` command and show the report.

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { normaliseDiagnoseResult } from './core/diagnosis';
import { CommandOutputRecorder, readTerminalSelection, viaClipboard } from './core/terminal';
import { ReportPanel } from './reportPanel';
import { DenpexServer } from './server';

const MAX_TEXT_BYTES = 64 * 1024 * 1024;

let server: DenpexServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<{ server: DenpexServer }> {
  const log = vscode.window.createOutputChannel('Denpex', { log: true });
  const status = vscode.window.createStatusBarItem('denpex.status', vscode.StatusBarAlignment.Right, 100);
  status.name = 'Denpex';
  status.command = 'denpex.showOutput';
  context.subscriptions.push(log, status);
  log.info(`Denpex ${context.extension.packageJSON.version} activating (VS Code ${vscode.version}, trusted: ${vscode.workspace.isTrusted})`);

  server = new DenpexServer(context, log, status);
  const report = new ReportPanel(log);
  const recorder = new CommandOutputRecorder<vscode.Terminal>();
  context.subscriptions.push(server, report);

  // Shell integration: keep the output of the last command of each terminal (VS Code 1.93+).
  const win = vscode.window as typeof vscode.window & {
    onDidStartTerminalShellExecution?: vscode.Event<{ terminal: vscode.Terminal; execution: { commandLine?: { value: string }; read(): AsyncIterable<string> } }>;
    onDidEndTerminalShellExecution?: vscode.Event<{ terminal: vscode.Terminal; execution: { commandLine?: { value: string }; read(): AsyncIterable<string> }; exitCode: number | undefined }>;
  };
  if (win.onDidStartTerminalShellExecution && win.onDidEndTerminalShellExecution) {
    context.subscriptions.push(
      win.onDidStartTerminalShellExecution((e) => recorder.start(e.terminal, e.execution)),
      win.onDidEndTerminalShellExecution((e) => void recorder.end(e.terminal, e.execution, e.exitCode)),
      vscode.window.onDidCloseTerminal((t) => recorder.forget(t)),
    );
  }

  const diagnoseText = async (text: string, origin: string, uri?: vscode.Uri): Promise<void> => {
    if (!text.trim()) {
      void vscode.window.showInformationMessage('Denpex: there is no text to diagnose.');
      return;
    }
    if (Buffer.byteLength(text) > MAX_TEXT_BYTES) {
      void vscode.window.showErrorMessage('Denpex: the text is larger than 64 MiB; run `denpex diagnose FILE` in a terminal instead.');
      return;
    }
    const raw = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'Denpex: diagnosing…' },
      async () => {
        try {
          return await server!.diagnose(text, uri?.toString());
        } catch (err) {
          log.error(`denpex.diagnose failed: ${String((err as Error)?.message ?? err)}`);
          void vscode.window.showErrorMessage(`Denpex: diagnosis failed: ${String((err as Error)?.message ?? err)}`, 'Show Output').then((p) => {
            if (p) log.show(true);
          });
          return undefined;
        }
      },
    );
    if (raw === undefined) return;
    const result = normaliseDiagnoseResult(raw);
    if (!result) {
      log.error(`denpex.diagnose returned something that is not a denpex.diagnosis: ${JSON.stringify(raw).slice(0, 500)}`);
      void vscode.window.showErrorMessage('Denpex: the server returned an unexpected answer; see the output.');
      return;
    }
    log.info(`diagnosis of ${origin}: ${result.diagnosis.summary ?? ''}`);
    const showReport = vscode.workspace.getConfiguration('denpex').get<boolean>('showReportOnDiagnose') ?? true;
    if (showReport) {
      report.show(result, { origin, text, cliPrefix: server!.cliPrefix() });
    } else {
      const pick = await vscode.window.showInformationMessage(result.diagnosis.summary || 'Denpex: nothing recognised.', 'Open Report');
      if (pick) report.show(result, { origin, text, cliPrefix: server!.cliPrefix() });
    }
  };

  const terminalDeps = {
    copySelection: () => vscode.commands.executeCommand('workbench.action.terminal.copySelection'),
    readClipboard: () => vscode.env.clipboard.readText(),
    writeClipboard: (t: string) => vscode.env.clipboard.writeText(t),
  };

  const diagnoseTerminalSelection = async (): Promise<boolean> => {
    const term = vscode.window.activeTerminal;
    const got = await readTerminalSelection(term as unknown as { name: string; selection?: string }, terminalDeps);
    if (!got) return false;
    log.info(`terminal selection read through ${got.via}`);
    await diagnoseText(got.text, `selection in terminal "${term?.name ?? ''}"`);
    return true;
  };

  context.subscriptions.push(
    vscode.commands.registerCommand('denpex.restartServer', () => server!.restart('command')),
    vscode.commands.registerCommand('denpex.showOutput', () => log.show(false)),
    vscode.commands.registerCommand('denpex.diagnoseSelection', async () => {
      const editor = vscode.window.activeTextEditor;
      if (editor) {
        const text = editor.selections
          .filter((s) => !s.isEmpty)
          .map((s) => editor.document.getText(s))
          .join('\n');
        if (text.trim()) {
          await diagnoseText(text, `selection in ${path.basename(editor.document.fileName) || editor.document.uri.toString()}`, editor.document.uri);
          return;
        }
      }
      if (await diagnoseTerminalSelection()) return;
      if (editor && ['log', 'plaintext'].includes(editor.document.languageId)) {
        await diagnoseText(editor.document.getText(), path.basename(editor.document.fileName), editor.document.uri);
        return;
      }
      void vscode.window.showInformationMessage('Denpex: select a traceback or log text in an editor or terminal first.');
    }),
    vscode.commands.registerCommand('denpex.diagnoseTerminalSelection', async () => {
      if (!(await diagnoseTerminalSelection())) {
        void vscode.window.showInformationMessage('Denpex: select a traceback or log text in the terminal first.');
      }
    }),
    vscode.commands.registerCommand('denpex.diagnoseLastTerminalCommand', async () => {
      const term = vscode.window.activeTerminal;
      if (!term) {
        void vscode.window.showInformationMessage('Denpex: open a terminal and run the failing command first.');
        return;
      }
      const rec = recorder.lastCommand(term);
      if (rec && rec.output.trim()) {
        log.info(`last command of terminal "${term.name}" through shell integration: ${rec.commandLine}`);
        await diagnoseText(rec.output, `last command in terminal "${term.name}": ${rec.commandLine}`.trim());
        return;
      }
      // No shell integration event seen: ask VS Code to copy the last command's output.
      const got = await viaClipboard(
        terminalDeps,
        () => vscode.commands.executeCommand('workbench.action.terminal.copyLastCommandOutput'),
        'copyLastCommandOutput',
      );
      if (got) {
        await diagnoseText(got.text, `last command in terminal "${term.name}"`);
        return;
      }
      void vscode.window.showInformationMessage(
        'Denpex: no output of a finished command in this terminal. Shell integration must be active (terminal.integrated.shellIntegration.enabled); or select the output and run "Denpex: Diagnose Selection".',
      );
    }),
    vscode.commands.registerCommand('denpex.diagnoseLogFile', async (arg?: vscode.Uri) => {
      let uri = arg instanceof vscode.Uri ? arg : undefined;
      if (!uri) {
        const picked = await vscode.window.showOpenDialog({
          canSelectMany: false,
          openLabel: 'Diagnose',
          title: 'Denpex: Diagnose Log File',
          filters: { 'Logs': ['log', 'out', 'err', 'txt'], 'All files': ['*'] },
        });
        uri = picked?.[0];
      }
      if (!uri) return;
      let text: string;
      try {
        if (uri.scheme === 'file') {
          const st = await fs.promises.stat(uri.fsPath);
          if (st.size > MAX_TEXT_BYTES) {
            void vscode.window.showErrorMessage(`Denpex: ${path.basename(uri.fsPath)} is larger than 64 MiB; run \`denpex diagnose FILE\` in a terminal.`);
            return;
          }
        }
        text = new TextDecoder('utf-8').decode(await vscode.workspace.fs.readFile(uri));
      } catch (err) {
        void vscode.window.showErrorMessage(`Denpex: cannot read ${uri.fsPath}: ${String(err)}`);
        return;
      }
      await diagnoseText(text, path.basename(uri.fsPath), uri);
    }),
  );

  // Start the server now (Python and log files are what activate the extension).
  void server.start();
  return { server };
}

export async function deactivate(): Promise<void> {
  if (server) await server.stop();
}
