// End-to-end: a Jupyter notebook in a real VS Code (code-server, its built-in .ipynb support, no kernel) with
// the packaged .vsix: the server gets the notebook's Python cells as notebook documents (notebookDocument/*),
// so a capture in cell 4 flags `.item()` in the function cell 2 defines. Squiggle, hover and quick fix are
// used in the cell as a user would; each step leaves a screenshot in test-artifacts/ (prefixed nb-).

import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CodeServer, EXT_ROOT } from './harness.mjs';

const STEP_TIMEOUT = 120_000;
const NOTEBOOK = 'capture_experiment.ipynb';

describe('Denpex in a Jupyter notebook in VS Code (code-server + Chromium)', { timeout: 900_000 }, () => {
  const cs = new CodeServer();
  let page;
  const cellError = () => page.locator('.notebook-editor .cell-editor-container .squiggly-error').first();

  before(async () => {
    cs.prepare();
    cpSync(join(EXT_ROOT, 'test/fixtures/notebook', NOTEBOOK), join(cs.workspace, NOTEBOOK));
    if (process.env.DENPEX_E2E_TRACE) {
      const file = join(cs.userData, 'User', 'settings.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), 'denpex.trace.server': 'verbose' }));
    }
    page = await cs.start();
  });

  after(async () => {
    try {
      await cs.screenshot('nb-final-state');
    } catch {
      /* no page */
    }
    if (process.env.DENPEX_E2E_DEBUG) console.log(cs.log.join('').slice(-5000));
    await cs.stop();
  });

  it('opens the notebook and shows the squiggle on .item() in cell 2, reached from the capture in cell 4', { timeout: STEP_TIMEOUT }, async () => {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill(NOTEBOOK);
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: NOTEBOOK }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.notebook-editor .cell-editor-container .view-lines').first().waitFor({ timeout: 60_000 });
    await page.keyboard.press('Control+B'); // hide the side bar: the cells get the width
    const squiggle = cellError();
    await squiggle.waitFor({ timeout: 90_000 });
    const line = page.locator('.notebook-editor .view-line', { hasText: 'scale = x.abs().max().item()' }).first();
    // the cells re-lay out after the side bar closes: measure once the line is rendered again
    await line.waitFor({ timeout: 30_000 });
    const [sq, ln] = [await squiggle.boundingBox(), await line.boundingBox()];
    assert.ok(sq && ln, 'squiggle and line visible');
    assert.ok(Math.abs(sq.y + sq.height / 2 - (ln.y + ln.height / 2)) < ln.height, 'the squiggle is on the .item() line of cell 2');
    assert.equal(await page.locator('.notebook-editor .squiggly-error').count(), 1, 'one error in the notebook');
    await page.waitForTimeout(500);
    await cs.screenshot('nb-squiggle-in-cell');
  });

  it('hover in the cell explains the hazard', { timeout: STEP_TIMEOUT }, async () => {
    const box = await cellError().boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
    const hover = page.locator('.monaco-hover:not(.hidden)').filter({ hasText: /capture/i }).first();
    await hover.waitFor({ timeout: 20_000 });
    const text = await hover.innerText();
    assert.match(text, /DPX101/);
    assert.match(text, /\.item\(\)/);
    await page.waitForTimeout(400);
    await cs.screenshot('nb-hover-in-cell');
    await page.mouse.move(5, 5);
    await page.keyboard.press('Escape');
  });

  it('Ctrl+. in the cell offers the fixes, and applying one edits that cell and clears the squiggle', { timeout: STEP_TIMEOUT }, async () => {
    const box = await cellError().boundingBox();
    await page.mouse.click(box.x + box.width * 0.7, box.y + box.height / 2); // the cursor inside `.item()`
    await page.waitForTimeout(300);
    await page.keyboard.press('Control+.');
    const menu = page.locator('.action-widget');
    await menu.waitFor({ timeout: 20_000 });
    const items = menu.locator('.monaco-list-row');
    await items.first().waitFor();
    const titles = (await items.allInnerTexts()).map((t) => t.trim());
    assert.ok(titles.some((t) => /keep the value on the device/i.test(t)), `device-value fix offered: ${titles.join(' | ')}`);
    assert.ok(titles.some((t) => /Disable DPX101 for this line/.test(t)), `suppression offered: ${titles.join(' | ')}`);
    await cs.screenshot('nb-quick-fix-menu');
    for (let i = 0; i < 8; i++) {
      const focused = (await menu.locator('.monaco-list-row.focused').first().getAttribute('aria-label')) ?? '';
      if (/keep the value on the device/i.test(focused)) break;
      await page.keyboard.press('ArrowDown');
    }
    await page.keyboard.press('Enter');
    await page.locator('.notebook-editor .view-line', { hasText: 'scale = x.abs().max()' }).first().waitFor({ timeout: 10_000 });
    // the edited line is drawn before the old one is taken away: wait for it to go, then check
    await page.waitForFunction(() => ![...document.querySelectorAll('.notebook-editor .view-line')]
      .some((e) => e.textContent.includes('.item()')), undefined, { timeout: 10_000 }).catch(() => {});
    assert.equal(await page.locator('.notebook-editor .view-line', { hasText: '.item()' }).count(), 0, 'the .item() is gone');
    await page.waitForFunction(() => document.querySelectorAll('.notebook-editor .squiggly-error').length === 0, undefined, { timeout: 30_000 });
    // the other cells are untouched
    await page.locator('.notebook-editor .view-line', { hasText: 'y = step(x)' }).first().waitFor();
    await page.keyboard.press('Control+S');
    await page.waitForFunction(() => !document.querySelector('.tab.active.dirty'), undefined, { timeout: 10_000 });
    const saved = JSON.parse(readFileSync(join(cs.workspace, NOTEBOOK), 'utf8'));
    assert.deepEqual(saved.cells[1].source.join(''), 'import torch\n\ndef step(x):\n    scale = x.abs().max()\n    return x * scale');
    assert.deepEqual(saved.cells[3].source.join(''), 'with torch.cuda.graph(g):\n    y = step(x)');
    await page.waitForTimeout(800);
    await cs.screenshot('nb-quick-fix-applied');
  });
});
