import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Diagnosis, describeWho, locationForFrame, normaliseDiagnoseResult, ranksMentioned } from '../../core/diagnosis';
import { buildCascade, escapeHtml, inlineCode, renderReportHtml, reportTitle } from '../../core/report';

// out/test/unit/<file>.js -> vscode-extension/test/fixtures
const FIX = join(__dirname, '..', '..', '..', 'test', 'fixtures');
const load = (name: string): Diagnosis => JSON.parse(readFileSync(join(FIX, `${name}.diagnosis.json`), 'utf8')) as Diagnosis;
const logText = (name: string): string => readFileSync(join(FIX, `${name}.log`), 'utf8');
const OPTS = { cspSource: 'vscode-webview://x', nonce: 'N0NCE' };

/** Text content of the element with this id (crude, enough for assertions). */
function section(html: string, id: string): string {
  const start = html.indexOf(`id="${id}"`);
  assert.ok(start >= 0, `section ${id} present`);
  const end = html.indexOf('</section>', start);
  return html.slice(start, end < 0 ? undefined : end);
}

describe('report rendering: a1_rank1_dies (rank 1 fails inside capture, rank 0 is killed)', () => {
  const d = load('a1_rank1_dies');
  const html = renderReportHtml({ diagnosis: d, markdown: '# md' }, { ...OPTS, origin: 'selection in a1_rank1_dies.log', ranksInLog: ranksMentioned(logText('a1_rank1_dies')) });

  it('names the verdict, the capture error and rank 1', () => {
    assert.match(html, /DPX101/);
    assert.match(html, /Host read of a GPU value/);
    assert.match(html, /id="who">rank 1</);
    assert.match(reportTitle(d), /^Denpex: DPX101 \(rank 1\)$/);
  });

  it('shows the initiating line with the lines before it, highlighted and numbered', () => {
    const s = section(html, 'initiating');
    assert.match(s, /log line <b>13<\/b>/);
    assert.match(s, /<div class="logline hit"><span class="ln">13<\/span><span class="lt">\[rank1\]: torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing<\/span>/);
    assert.match(s, /<span class="ln">11<\/span><span class="lt">\[rank1\]:     scale = y.sum\(\).item\(\)/);
    assert.match(s, /class="logline frame-line"><span class="ln">10</, 'the traceback frame line is marked');
  });

  it('draws one lane per rank: rank 1 with the first failure then the collateral, rank 0 quiet', () => {
    const c = buildCascade(d, ranksMentioned(logText('a1_rank1_dies')));
    assert.deepEqual(c.lanes, ['rank 0', 'rank 1', 'unattributed']);
    const first = c.events.findIndex((e) => e.first);
    assert.equal(first, 0, 'the first failure is the first event');
    assert.deepEqual([c.events[0].lane, c.events[0].finding.rule, c.events[0].finding.line], ['rank 1', 'cuda-900-capture-unsupported', 13]);
    const collateral = c.events.filter((e) => e.finding.role === 'collateral');
    assert.ok(collateral.length >= 1);
    assert.ok(collateral.every((e) => e.finding.line > 13), 'collateral comes after the first failure');
    assert.ok(collateral.some((e) => e.lane === 'rank 1' && e.finding.rule === 'cuda-901-capture-invalidated'));
    assert.ok(!c.events.some((e) => e.lane === 'rank 0'), 'rank 0 reported no error of its own');
    const s = section(html, 'cascade');
    assert.match(s, /class="cas-head lane-label quiet" data-lane="rank 0"/);
    assert.ok(s.indexOf('first failure') < s.indexOf('collateral'), 'first failure drawn before the collateral');
    assert.match(s, /rank 0: no error reported/);
  });

  it('shows the fix, the eager fallback and the verification command with its Run button', () => {
    assert.match(section(html, 'fix'), /Keep the value on the device/);
    assert.match(section(html, 'fallback'), /Run the step without torch.cuda.graph/);
    const v = section(html, 'verify');
    assert.match(v, /value="denpex run --expect-absent capture-item-sync -- python train.py"/);
    assert.match(v, /<button data-action="runVerify"/);
  });

  it('makes source frames links carrying path and line', () => {
    assert.match(
      section(html, 'frames'),
      /<a href="#" class="frame-link" data-frame="0" data-path="\/workspace\/gpu\/multi\/a_item_capture_rank1.py" data-line="40"/,
    );
  });

  it('is themed only with VS Code CSS variables and locked down by a CSP with a nonce', () => {
    const style = html.slice(html.indexOf('<style'), html.indexOf('</style>'));
    assert.ok(!/#[0-9a-fA-F]{3,6}\b/.test(style), 'no hard-coded colours');
    assert.ok(!/\brgb\(|\bhsl\(/.test(style), 'no hard-coded colours');
    assert.match(style, /var\(--vscode-errorForeground\)/);
    assert.match(html, /Content-Security-Policy" content="default-src 'none';[^"]*script-src 'nonce-N0NCE'/);
    assert.match(html, /<script nonce="N0NCE">/);
    assert.ok(!/\sstyle="/.test(html), 'no inline style attributes: the CSP would drop them');
    assert.match(style, /\.cascade\.lanes-3 \{ grid-template-columns: 4\.5em repeat\(3, /);
    assert.match(html, /Copy as Markdown/);
  });
});

describe('report rendering: other shapes', () => {
  it('two ranks both failing: lanes for both, the verdict rank first, repeated rules on the same line labelled', () => {
    const d = load('d_allreduce_in_graph_no_warmup');
    const c = buildCascade(d, [], 20);
    assert.deepEqual(c.lanes, ['rank 0', 'rank 1', 'unattributed']);
    const first = c.events.filter((e) => e.first);
    assert.equal(first.length, 1);
    assert.equal(first[0].finding.rule, d.verdict!.rule);
    assert.equal(first[0].lane, 'rank 0');
    assert.ok(c.events.some((e) => e.sameLine && e.finding.rule === 'cuda-900-capture-unsupported'));
  });

  it('folds long cascades but keeps the first failure', () => {
    const d = load('d_allreduce_in_graph_no_warmup');
    const c = buildCascade(d, [], 4);
    assert.equal(c.events.length, 4);
    assert.ok(c.events.some((e) => e.first));
    assert.equal(c.folded, d.findings.length - 4);
    const html = renderReportHtml({ diagnosis: d }, { ...OPTS, maxCascadeEvents: 4 });
    assert.match(html, /8 more report\(s\) not drawn/);
  });

  it('low-confidence verdicts (collateral only, unattributed) render as warnings', () => {
    const d = load('c_allreduce_in_graph_ok');
    const html = renderReportHtml({ diagnosis: d }, OPTS);
    assert.match(html, /class="verdict low"/);
    assert.match(html, /id="who">rank unknown</);
    assert.deepEqual(buildCascade(d).lanes, ['unattributed']);
  });

  it('no verdict: says nothing was recognised and how to get a better answer', () => {
    const d: Diagnosis = { schema: 'denpex.diagnosis/1', summary: 'No known failure found.', warnings: ['the input ends mid-line'], verdict: null, findings: [] };
    const html = renderReportHtml({ diagnosis: d }, OPTS);
    assert.match(html, /No CUDA-graph failure recognised/);
    assert.match(html, /No known failure found\./);
    assert.match(html, /the input ends mid-line/);
    assert.ok(!html.includes('id="cascade"'));
    assert.equal(reportTitle(d), 'Denpex: nothing recognised');
  });

  it('escapes everything that came from the log', () => {
    const d = load('a1_rank1_dies');
    d.verdict!.text = '<img src=x onerror=alert(1)>';
    d.verdict!.frames![0].path = '"><script>alert(1)</script>';
    d.verdict!.references = ['javascript:alert(1)'];
    const html = renderReportHtml({ diagnosis: d }, OPTS);
    assert.ok(!html.includes('<img src=x'));
    assert.ok(!html.includes('<script>alert'));
    assert.ok(!html.includes('href="javascript:'));
    assert.equal(escapeHtml(`<a href='x'>&</a>`), '&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;');
    assert.equal(inlineCode('use `x.copy_(y)` <b>'), 'use <code>x.copy_(y)</code> &lt;b&gt;');
  });

  it('shows how the Run button will run denpex when it is not on PATH', () => {
    const html = renderReportHtml({ diagnosis: load('a1_rank1_dies') }, { ...OPTS, verifyRunAs: 'python3 -I /ext/denpex_server.py' });
    assert.match(section(html, 'verify'), /runs as <code>python3 -I \/ext\/denpex_server.py<\/code>/);
  });
});

describe('diagnosis helpers', () => {
  it('normalises the server result, a bare diagnosis and a JSON string; rejects anything else', () => {
    const d = load('a1_rank1_dies');
    const loc = { uri: 'file:///ws/a.py', path: '/ws/a.py', line: 39, frame: d.verdict!.frames![0] };
    const r = normaliseDiagnoseResult({ diagnosis: d, markdown: 'm', locations: [loc, { bogus: 1 }] });
    assert.equal(r?.markdown, 'm');
    assert.equal(r?.locations.length, 1);
    assert.equal(locationForFrame(d.verdict!.frames![0], r!.locations)?.line, 39);
    assert.equal(normaliseDiagnoseResult(d)?.diagnosis.verdict?.rule, 'capture-item-sync');
    assert.equal(normaliseDiagnoseResult(JSON.stringify({ diagnosis: d }))?.diagnosis.schema, 'denpex.diagnosis/1');
    assert.equal(normaliseDiagnoseResult({ diagnosis: { schema: 'other/1', findings: [] } }), undefined);
    assert.equal(normaliseDiagnoseResult('not json'), undefined);
    assert.equal(normaliseDiagnoseResult(null), undefined);
  });

  it('describes who failed', () => {
    assert.equal(describeWho({ rank: 1, local_rank: 1, node: null, process: 709 }), 'rank 1 · process 709');
    assert.equal(describeWho({ rank: 9, local_rank: 1, node: 'n3' }), 'rank 9 · local rank 1 · node n3');
    assert.equal(describeWho({}), '');
  });

  it('finds the ranks a log mentions', () => {
    assert.deepEqual(ranksMentioned(logText('a1_rank1_dies')), [0, 1]);
    assert.deepEqual(ranksMentioned('[default3]:x\n[rank12]: y'), [3, 12]);
    assert.deepEqual(ranksMentioned('no ranks'), []);
  });
});
