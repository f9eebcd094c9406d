// End-to-end: the packaged .vsix in a real VS Code (code-server) driven as a user would.
// Each step leaves a screenshot in test-artifacts/.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CodeServer } from './harness.mjs';

const STEP_TIMEOUT = 120_000;

describe('Denpex in VS Code (code-server + Chromium)', { timeout: 900_000 }, () => {
  const cs = new CodeServer();
  let page;
  const original = () => readFileSync(join(cs.workspace, 'train.py'), 'utf8');
  let originalText;

  before(async () => {
    cs.prepare();
    originalText = original();
    page = await cs.start();
  });

  after(async () => {
    try {
      await cs.screenshot('final-state');
    } catch {
      /* no page */
    }
    if (process.env.DENPEX_E2E_DEBUG) console.log(cs.log.join('').slice(-5000));
    await cs.stop();
  });

  it('installs from the .vsix and starts the bundled server (status bar)', { timeout: STEP_TIMEOUT }, async () => {
    await cs.openFile('train.py');
    // the status item's accessible label follows the server's state
    await page.locator('.statusbar-item [aria-label="Denpex language server running"]').first().waitFor({ timeout: 60_000 });
    await cs.screenshot('workbench-server-running');
  });

  it('shows the error squiggle on .item() in a function called from torch.cuda.graph', { timeout: STEP_TIMEOUT }, async () => {
    const squiggle = page.locator('.monaco-editor .squiggly-error').first();
    await squiggle.waitFor({ timeout: 60_000 });
    // the squiggle sits on line 9 (`scale = y.abs().max().item()`): compare with the line's box
    const line9 = page.locator('.monaco-editor .view-line', { hasText: 'scale = y.abs().max().item()' }).first();
    const [sq, ln] = [await squiggle.boundingBox(), await line9.boundingBox()];
    assert.ok(sq && ln, 'squiggle and line visible');
    assert.ok(Math.abs(sq.y + sq.height / 2 - (ln.y + ln.height / 2)) < ln.height, 'the squiggle is on the .item() line');
    await cs.screenshot('squiggle-on-item');
  });

  it('hover explains the hazard', { timeout: STEP_TIMEOUT }, async () => {
    const squiggle = page.locator('.monaco-editor .squiggly-error').first();
    const box = await squiggle.boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
    const hover = page.locator('.monaco-hover:not(.hidden)').filter({ hasText: /capture/i }).first();
    await hover.waitFor({ timeout: 20_000 });
    const text = await hover.innerText();
    assert.match(text, /\.item\(\)/);
    assert.match(text, /captur/i);
    await page.waitForTimeout(400); // let the hover finish laying out
    await cs.screenshot('hover-explanation');
    await page.mouse.move(5, 5);
    await page.keyboard.press('Escape');
  });

  it('Ctrl+. offers the device-value (static) and eager-fallback fixes, and applying one edits the file', { timeout: STEP_TIMEOUT }, async () => {
    // put the cursor inside `.item()` on line 9
    await page.keyboard.press('Control+G');
    await page.locator('.quick-input-widget input').fill(':9:30');
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
    await page.keyboard.press('Control+.');
    const menu = page.locator('.action-widget');
    await menu.waitFor({ timeout: 20_000 });
    const items = menu.locator('.monaco-list-row');
    await items.first().waitFor();
    const titles = (await items.allInnerTexts()).map((t) => t.trim());
    assert.ok(titles.some((t) => /keep the value on the device|static/i.test(t)), `device/static-buffer fix offered: ${titles.join(' | ')}`);
    assert.ok(titles.some((t) => /eager fallback/i.test(t)), `eager fallback offered: ${titles.join(' | ')}`);
    await cs.screenshot('quick-fix-menu');
    // apply "Static buffer: keep the value on the device ... (drop .item())": walk the menu with the keyboard as a user would
    for (let i = 0; i < 8; i++) {
      const focused = (await menu.locator('.monaco-list-row.focused').first().getAttribute('aria-label')) ?? '';
      if (/keep the value on the device|static/i.test(focused)) break;
      await page.keyboard.press('ArrowDown');
    }
    await page.keyboard.press('Enter');
    await page.locator('.monaco-editor .view-line', { hasText: 'scale = y.abs().max()  #' }).first().waitFor({ timeout: 10_000 });
    await page.keyboard.press('Control+S');
    await page.waitForFunction(() => !document.querySelector('.tab.active.dirty'), undefined, { timeout: 10_000 });
    const now = original();
    assert.equal(now, originalText.replace('scale = y.abs().max().item()', 'scale = y.abs().max()'));
    // the error is gone from the .item() line
    await page.waitForFunction(() => document.querySelectorAll('.monaco-editor .squiggly-error').length === 0, undefined, { timeout: 20_000 });
    await page.waitForTimeout(1000); // let the tab and explorer problem badges catch up
    await cs.screenshot('quick-fix-applied');
  });

  it('Diagnose Selection on a1_rank1_dies.log opens the report naming the capture error and rank 1', { timeout: STEP_TIMEOUT }, async () => {
    await cs.openFile('a1_rank1_dies.log');
    await page.keyboard.press('Control+B'); // hide the side bar: more room for the log and the report
    await page.locator('.editor-instance .monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+A');
    await cs.screenshot('log-selected');
    await cs.runCommand('Denpex: Diagnose Selection');
    // the report is a webview: an iframe holding the active frame with our HTML
    const outer = page.frameLocator('iframe.webview.ready').last();
    const report = outer.frameLocator('#active-frame');
    await report.locator('#verdict').waitFor({ timeout: 60_000 });
    const verdict = await report.locator('#verdict').innerText();
    assert.match(verdict, /rank 1/);
    assert.match(verdict, /CUDA-graph capture|capture/i);
    const started = await report.locator('#initiating').innerText();
    assert.match(started, /operation not permitted when stream is capturing/);
    assert.match(started, /rank 1/);
    const lanes = await report.locator('.lane-label').allInnerTexts();
    assert.ok(lanes.includes('rank 0') && lanes.includes('rank 1'), `lanes: ${lanes.join(', ')}`);
    assert.match(await report.locator('.event.first').innerText(), /first failure/i);
    const tab = page.locator('.tab', { hasText: 'Denpex: DPX101 (rank 1)' });
    await tab.waitFor();
    await page.waitForTimeout(500);
    await cs.screenshot('report-top');
    await report.locator('#cascade').scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await cs.screenshot('report-cascade-fix');
    await report.locator('#frames').scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await cs.screenshot('report-verify-frames');
  });

  it('a source frame in the report opens the workspace file at the line', { timeout: STEP_TIMEOUT }, async () => {
    const report = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    // the log says /workspace/gpu/multi/a_item_capture_rank1.py; the workspace has gpu/multi/a_item_capture_rank1.py
    await report.locator('a.frame-link').first().click();
    await page.locator('.tab.active', { hasText: 'a_item_capture_rank1.py' }).waitFor({ timeout: 20_000 });
    await page.locator('.statusbar-item', { hasText: /Ln 40, Col/ }).first().waitFor({ timeout: 10_000 });
    await page.waitForTimeout(500);
    await cs.screenshot('frame-link-opened');
  });

  it('the Run in terminal button runs the verification command in a terminal', { timeout: STEP_TIMEOUT }, async () => {
    await page.locator('.tab', { hasText: 'Denpex: DPX101 (rank 1)' }).click();
    const report = page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');
    const input = report.locator('#verify-command');
    await input.waitFor();
    // a user would point it at their script; keep it harmless here
    await input.fill('denpex --version');
    await report.locator('#run-verify').click();
    await page.locator('.terminal-tab, .single-terminal-tab, .tabs-container .terminal-tabs-entry', { hasText: 'Denpex: verify' }).first().waitFor({ timeout: 20_000 }).catch(() => undefined);
    const rows = page.locator('.terminal .xterm-rows');
    await rows.first().waitFor({ timeout: 20_000 });
    await page.waitForFunction(() => /denpex \d+\.\d+/.test(document.querySelector('.terminal .xterm-rows')?.textContent ?? ''), undefined, { timeout: 30_000 });
    await cs.screenshot('verify-in-terminal');
  });
});
