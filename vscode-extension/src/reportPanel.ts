// The report webview: one panel, reused for each diagnosis. Rendering is in core/report.ts; this
// file handles the panel's life and the messages its buttons and links send.

import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { DiagnoseResult, DiagnosisFrame, locationForFrame, ranksMentioned } from './core/diagnosis';
import { renderReportHtml, reportTitle } from './core/report';
import { bestSuffixMatch, rewriteDenpexCommand, shellQuote } from './core/util';

export interface ReportContext {
  origin: string;
  /** The diagnosed text (for lanes of ranks that reported nothing). */
  text: string;
  /** argv prefix that runs the Denpex CLI, when `denpex` may not be on PATH. */
  cliPrefix?: string[];
}

type Message =
  | { type: 'openFrame'; path: string; line: number; index: number }
  | { type: 'runVerify'; command: string }
  | { type: 'copyMarkdown' }
  | { type: 'copyJson' };

export class ReportPanel implements vscode.Disposable {
  public static readonly viewType = 'denpex.report';
  private panel: vscode.WebviewPanel | undefined;
  private result: DiagnoseResult | undefined;
  private ctx: ReportContext | undefined;
  private terminal: vscode.Terminal | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly log: vscode.LogOutputChannel) {
    this.disposables.push(
      vscode.window.onDidCloseTerminal((t) => {
        if (t === this.terminal) this.terminal = undefined;
      }),
    );
  }

  show(result: DiagnoseResult, ctx: ReportContext): void {
    this.result = result;
    this.ctx = ctx;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        ReportPanel.viewType,
        reportTitle(result.diagnosis),
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false },
        { enableScripts: true, enableFindWidget: true, localResourceRoots: [] },
      );
      this.panel.onDidDispose(() => (this.panel = undefined), null, this.disposables);
      this.panel.webview.onDidReceiveMessage((m: Message) => void this.onMessage(m), null, this.disposables);
    } else {
      this.panel.reveal(this.panel.viewColumn ?? vscode.ViewColumn.Beside, false);
    }
    this.panel.title = reportTitle(result.diagnosis);
    this.panel.webview.html = renderReportHtml(result, {
      cspSource: this.panel.webview.cspSource,
      nonce: crypto.randomBytes(16).toString('base64'),
      origin: ctx.origin,
      ranksInLog: ranksMentioned(ctx.text),
      verifyRunAs: ctx.cliPrefix && ctx.cliPrefix.length ? ctx.cliPrefix.map(shellQuote).join(' ') : undefined,
    });
  }

  private async onMessage(m: Message): Promise<void> {
    try {
      switch (m.type) {
        case 'openFrame':
          await this.openFrame(m.index, m.path, m.line);
          break;
        case 'runVerify':
          this.runVerify(m.command);
          break;
        case 'copyMarkdown':
          await vscode.env.clipboard.writeText(this.result?.markdown ?? '');
          void vscode.window.setStatusBarMessage('Denpex: report copied as Markdown', 3000);
          break;
        case 'copyJson':
          await vscode.env.clipboard.writeText(JSON.stringify(this.result?.diagnosis ?? {}, null, 2));
          void vscode.window.setStatusBarMessage('Denpex: diagnosis JSON copied', 3000);
          break;
      }
    } catch (err) {
      this.log.error(`report action ${m.type}: ${String(err)}`);
    }
  }

  private async openFrame(index: number, logPath: string, line: number): Promise<void> {
    const frame: DiagnosisFrame | undefined = this.result?.diagnosis.verdict?.frames?.[index];
    let uri: vscode.Uri | undefined;
    let target = Math.max(1, Number(line) || 1);
    // 1. the server mapped it (absolute, relative and container paths matched to the workspace)
    const loc = frame && this.result ? locationForFrame(frame, this.result.locations) : undefined;
    if (loc) {
      uri = vscode.Uri.parse(loc.uri);
      target = loc.line + 1;
    }
    // 2. the path exists as written
    if (!uri && path.isAbsolute(logPath) && fs.existsSync(logPath)) uri = vscode.Uri.file(logPath);
    // 3. a workspace file sharing the longest path suffix
    if (!uri && vscode.workspace.workspaceFolders?.length) {
      for (const folder of vscode.workspace.workspaceFolders) {
        const rel = path.join(folder.uri.fsPath, logPath);
        if (!path.isAbsolute(logPath) && fs.existsSync(rel)) {
          uri = vscode.Uri.file(rel);
          break;
        }
      }
      if (!uri) {
        const base = path.basename(logPath.replace(/\\/g, '/'));
        const found = await vscode.workspace.findFiles(`**/${base}`, '**/{node_modules,.git,.venv,venv,site-packages}/**', 200);
        const best = bestSuffixMatch(logPath, found.map((u) => u.fsPath));
        if (best) uri = vscode.Uri.file(best);
      }
    }
    if (!uri) {
      const pick = await vscode.window.showWarningMessage(
        `Denpex: ${logPath} is not in this workspace.`,
        'Find File...',
      );
      if (pick === 'Find File...') {
        const chosen = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: `Open as ${path.basename(logPath)}` });
        if (chosen?.[0]) uri = chosen[0];
      }
      if (!uri) return;
    }
    const pos = new vscode.Position(target - 1, 0);
    await vscode.window.showTextDocument(uri, {
      viewColumn: vscode.ViewColumn.One,
      selection: new vscode.Range(pos, pos),
      preview: false,
    });
  }

  private runVerify(command: string): void {
    const cmd = rewriteDenpexCommand(command, this.ctx?.cliPrefix);
    if (!cmd) return;
    if (!this.terminal) {
      const cwd = vscode.workspace.workspaceFolders?.[0]?.uri;
      this.terminal = vscode.window.createTerminal({ name: 'Denpex: verify', cwd });
    }
    this.terminal.show(false);
    this.terminal.sendText(cmd, true);
    this.log.info(`verification command sent to the terminal: ${cmd}`);
  }

  dispose(): void {
    this.panel?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
