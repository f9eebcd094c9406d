// Starts a fresh code-server (VS Code 1.100 in a browser) with the packaged .vsix installed, and
// drives it with playwright-core through Debian's Chromium. Nothing here downloads anything.

import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const EXT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ARTIFACTS = process.env.DENPEX_E2E_ARTIFACTS ?? join(EXT_ROOT, 'test-artifacts');
const pkg = JSON.parse(readFileSync(join(EXT_ROOT, 'package.json'), 'utf8'));

export function vsixPath() {
  return process.env.DENPEX_VSIX ?? join(EXT_ROOT, `denpex-${pkg.version}.vsix`);
}

export function codeServerBin() {
  const candidates = [process.env.CODE_SERVER, join(EXT_ROOT, '.tools/code-server/node_modules/.bin/code-server')].filter(Boolean);
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`code-server not found (tried ${candidates.join(', ')}); run scripts/install-code-server.sh`);
  return found;
}

export function chromiumBin() {
  const c = [process.env.CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean).find((p) => existsSync(p));
  if (!c) throw new Error('Chromium not found: apt-get install chromium');
  return c;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class CodeServer {
  constructor() {
    this.root = mkdtempSync(join(tmpdir(), 'denpex-e2e-'));
    this.userData = join(this.root, 'user-data');
    this.extensions = join(this.root, 'extensions');
    this.workspace = join(this.root, 'workspace');
    this.proc = undefined;
    this.browser = undefined;
    this.page = undefined;
    this.log = [];
    this.shot = 0;
  }

  /** Copies the fixture workspace, writes user settings and installs the .vsix. */
  prepare() {
    cpSync(join(EXT_ROOT, 'test/fixtures/workspace'), this.workspace, { recursive: true });
    cpSync(join(EXT_ROOT, 'test/fixtures/a1_rank1_dies.log'), join(this.workspace, 'a1_rank1_dies.log'));
    mkdirSync(join(this.userData, 'User'), { recursive: true });
    writeFileSync(
      join(this.userData, 'User', 'settings.json'),
      JSON.stringify(
        {
          'workbench.startupEditor': 'none',
          'workbench.colorTheme': 'Default Dark Modern',
          'workbench.tips.enabled': false,
          'workbench.enableExperiments': false,
          'workbench.welcomePage.walkthroughs.openOnInstall': false,
          'telemetry.telemetryLevel': 'off',
          'update.mode': 'none',
          'extensions.ignoreRecommendations': true,
          'extensions.autoCheckUpdates': false,
          'security.workspace.trust.enabled': false,
          'editor.minimap.enabled': false,
          'editor.hover.delay': 200,
          'editor.fontSize': 14,
          'files.autoSave': 'off',
          'chat.disableAIFeatures': true,
          'chat.commandCenter.enabled': false,
          'window.commandCenter': false,
          'workbench.secondarySideBar.defaultVisibility': 'hidden',
          'git.enabled': false,
          'terminal.integrated.gpuAcceleration': 'off', // DOM renderer: the test can read the terminal text
          'files.associations': { '*.log': 'log' },
        },
        null,
        2,
      ),
    );
    const vsix = vsixPath();
    if (!existsSync(vsix)) throw new Error(`${vsix} not found: run "npm run package" first`);
    const r = spawnSync(
      codeServerBin(),
      ['--user-data-dir', this.userData, '--extensions-dir', this.extensions, '--install-extension', vsix],
      { encoding: 'utf8', timeout: 180_000 },
    );
    if (r.status !== 0) throw new Error(`installing ${vsix} failed:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
  }

  async start() {
    this.port = await freePort();
    this.proc = spawn(
      codeServerBin(),
      [
        '--auth', 'none', '--bind-addr', `127.0.0.1:${this.port}`, '--disable-telemetry', '--disable-update-check',
        '--disable-workspace-trust', '--disable-getting-started-override', '--user-data-dir', this.userData,
        '--extensions-dir', this.extensions, this.workspace,
      ],
      { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DENPEX_E2E: '1' } },
    );
    const keep = (b) => {
      this.log.push(b.toString());
      if (this.log.length > 2000) this.log.shift();
    };
    this.proc.stdout.on('data', keep);
    this.proc.stderr.on('data', keep);
    const deadline = Date.now() + 90_000;
    for (;;) {
      try {
        const r = await fetch(`http://127.0.0.1:${this.port}/healthz`);
        if (r.ok) break;
      } catch {
        /* not up yet */
      }
      if (this.proc.exitCode !== null) throw new Error(`code-server exited: ${this.log.join('')}`);
      if (Date.now() > deadline) throw new Error(`code-server did not answer: ${this.log.join('')}`);
      await sleep(300);
    }
    this.browser = await chromium.launch({
      executablePath: chromiumBin(),
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    const context = await this.browser.newContext({ viewport: { width: 1500, height: 900 }, deviceScaleFactor: 1 });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: `http://127.0.0.1:${this.port}` });
    this.page = await context.newPage();
    this.page.setDefaultTimeout(30_000);
    await this.page.goto(`http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(this.workspace)}`);
    await this.page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
    return this.page;
  }

  /** Saves a PNG under test-artifacts/ with a step number; returns its path. */
  async screenshot(name) {
    mkdirSync(ARTIFACTS, { recursive: true });
    this.shot += 1;
    const file = join(ARTIFACTS, `${String(this.shot).padStart(2, '0')}-${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  async stop() {
    try {
      await this.browser?.close();
    } catch {
      /* already gone */
    }
    if (this.proc && this.proc.exitCode === null) {
      // code-server forks an extension host and the language server: end the whole group we started
      try {
        process.kill(-this.proc.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
      const deadline = Date.now() + 5000;
      while (this.proc.exitCode === null && Date.now() < deadline) await sleep(100);
      try {
        process.kill(-this.proc.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    if (!process.env.DENPEX_E2E_KEEP) rmSync(this.root, { recursive: true, force: true });
  }

  // ---- user actions ---------------------------------------------------------------------------

  async openFile(name) {
    const page = this.page;
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill(name);
    // wait until the list is filtered down to the file, or Enter opens whatever was first
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: name }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator(`.tab.active[data-resource-name="${name}"], .tab.active:has-text("${name}")`).first().waitFor();
    await page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor();
  }

  async runCommand(title) {
    const page = this.page;
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill(`>${title}`);
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    await row.waitFor();
    await page.keyboard.press('Enter');
  }
}
