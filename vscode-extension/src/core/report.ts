// Renders a denpex.diagnosis/1 result as the HTML of the report webview. Pure: no vscode import.
// Colours come only from VS Code's theme variables (--vscode-*), so the report follows light,
// dark and high-contrast themes. Every piece of log text is escaped.

import { Diagnosis, DiagnosisFinding, DiagnosisFrame, describeWho } from './diagnosis';

export interface ReportOptions {
  /** webview.cspSource */
  cspSource: string;
  /** A fresh random nonce for the inline script and style. */
  nonce: string;
  /** Where the text came from, e.g. "selection in train.log" or "terminal: bash". */
  origin?: string;
  /** Ranks the log mentions; lanes are drawn for them even when they reported nothing. */
  ranksInLog?: number[];
  /** The verification command exactly as the Run button will run it (when it differs). */
  verifyRunAs?: string;
  /** Maximum number of events drawn in the cascade before folding. */
  maxCascadeEvents?: number;
}

export function escapeHtml(s: unknown): string {
  return String(s ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Minimal inline Markdown: `code` spans only (rule texts use them), everything else escaped. */
export function inlineCode(s: string | null | undefined): string {
  const parts = String(s ?? '').split('`');
  return parts.map((p, i) => (i % 2 === 1 ? `<code>${escapeHtml(p)}</code>` : escapeHtml(p))).join('');
}

function paragraphs(s: string | null | undefined): string {
  return String(s ?? '')
    .split(/\n{1,}/)
    .filter((p) => p.trim())
    .map((p) => `<p>${inlineCode(p)}</p>`)
    .join('');
}

// ---------------------------------------------------------------------------------------------
// Cascade: one lane per rank, events in log order as columns

export interface CascadeEvent {
  finding: DiagnosisFinding;
  lane: string;
  first: boolean;
  /** Another match of the first failure itself (same line, or the same rule a few lines on). */
  sameLine: boolean;
}

export interface Cascade {
  lanes: string[];
  events: CascadeEvent[];
  folded: number;
}

export function laneName(rank: number | null | undefined): string {
  return rank === null || rank === undefined ? 'unattributed' : `rank ${rank}`;
}

/** Builds the cascade model: lanes (ranks, then unattributed) and events in log order. */
export function buildCascade(d: Diagnosis, ranksInLog: number[] = [], maxEvents = 10): Cascade {
  const v = d.verdict;
  const findings = [...(d.findings ?? [])].sort((a, b) => a.line - b.line || a.rule.localeCompare(b.rule));
  const ranks = new Set<number>(ranksInLog);
  let unattributed = false;
  for (const f of findings) {
    if (f.rank === null || f.rank === undefined) unattributed = true;
    else ranks.add(f.rank);
  }
  for (const r of v?.suspect_ranks ?? []) ranks.add(r);
  if (v && v.rank !== null && v.rank !== undefined) ranks.add(v.rank);
  const lanes = [...ranks].sort((a, b) => a - b).map((r) => laneName(r));
  if (unattributed) lanes.push(laneName(null));

  // The verdict's own finding: same line and rank, its rule (or the rule it was refined from).
  const sameSpot = (f: DiagnosisFinding): boolean => !!v && f.line === v.line && (f.rank ?? null) === (v.rank ?? null);
  let firstIdx = findings.findIndex((f) => sameSpot(f) && f.rule === v?.rule);
  if (firstIdx < 0) firstIdx = findings.findIndex((f) => sameSpot(f) && !!v?.via && f.rule === v.via);
  if (firstIdx < 0) firstIdx = findings.findIndex((f) => sameSpot(f));
  const first = firstIdx >= 0 ? findings[firstIdx] : undefined;
  const all: CascadeEvent[] = findings.map((f, i) => ({
    finding: f,
    lane: laneName(f.rank),
    first: i === firstIdx,
    sameLine:
      i !== firstIdx &&
      !!first &&
      (f.rank ?? null) === (first.rank ?? null) &&
      (f.line === first.line || (f.rule === first.rule && f.role === first.role && f.line - first.line >= 0 && f.line - first.line <= 5)),
  }));
  // Keep the first failure and what follows it; fold the excess (oldest context first).
  let events = all;
  let folded = 0;
  if (all.length > maxEvents) {
    const firstIdx = Math.max(0, all.findIndex((e) => e.first));
    const start = Math.min(firstIdx, Math.max(0, all.length - maxEvents));
    events = all.slice(start, start + maxEvents);
    folded = all.length - events.length;
  }
  return { lanes, events, folded };
}

function roleLabel(e: CascadeEvent): string {
  if (e.first) return 'first failure';
  if (e.sameLine) return 'same error';
  if (e.finding.role === 'initiating') return 'another failure';
  if (e.finding.role === 'collateral') return 'collateral';
  return e.finding.role || 'report';
}

/** Lanes are columns (one per rank), events are rows in log order, so it fits a side panel. */
function renderCascade(d: Diagnosis, opts: ReportOptions): { html: string; css: string } {
  const c = buildCascade(d, opts.ranksInLog ?? [], opts.maxCascadeEvents ?? 10);
  if (c.events.length === 0) return { html: '', css: '' };
  const lanes = c.lanes.length;
  const cells: string[] = [];
  cells.push(`<div class="cas-head when">log line ↓</div>`);
  for (const lane of c.lanes) {
    const quiet = !c.events.some((e) => e.lane === lane);
    cells.push(`<div class="cas-head lane-label${quiet ? ' quiet' : ''}" data-lane="${escapeHtml(lane)}">${escapeHtml(lane)}</div>`);
  }
  c.events.forEach((e, row) => {
    const f = e.finding;
    const last = row === c.events.length - 1 ? ' last' : '';
    cells.push(`<div class="when">${escapeHtml(f.line)}</div>`);
    for (const lane of c.lanes) {
      const quiet = !c.events.some((x) => x.lane === lane);
      if (e.lane !== lane) {
        cells.push(`<div class="cell track${quiet ? ' quiet' : ''}${last}"></div>`);
        continue;
      }
      const cls = e.first ? 'first' : f.role === 'collateral' ? 'collateral' : f.role === 'initiating' ? 'initiating' : 'context';
      const count = f.count && f.count > 1 ? ` ×${f.count}` : '';
      cells.push(
        `<div class="cell track event ${cls}${last}" title="${escapeHtml(f.text)}">` +
          `<span class="dot" aria-hidden="true"></span>` +
          `<span class="ev-body"><span class="ev-role">${escapeHtml(roleLabel(e))}</span>` +
          `<span class="ev-rule">${escapeHtml(f.rule)}${escapeHtml(count)}</span></span>` +
          `</div>`,
      );
    }
  });
  const quietLanes = c.lanes.filter((l) => !c.events.some((e) => e.lane === l));
  const legend =
    `<p class="legend"><span class="dot first"></span> first failure ` +
    `<span class="dot collateral"></span> collateral (caused by it) ` +
    `<span class="dot context"></span> launcher / context` +
    (quietLanes.length ? ` · ${escapeHtml(quietLanes.join(', '))}: no error reported` : '') +
    (c.folded ? ` · ${c.folded} more report(s) not drawn` : '') +
    `</p>`;
  return {
    html:
      `<section id="cascade"><h2>Failure cascade</h2>` +
      `<div class="cascade lanes-${lanes}" role="table" aria-label="failure cascade, one lane per rank">${cells.join('')}</div>` +
      legend +
      `</section>`,
    // inline style attributes are blocked by the CSP; the column template goes in the nonce'd sheet
    css: `.cascade.lanes-${lanes} { grid-template-columns: 4.5em repeat(${lanes}, minmax(9em, 1fr)); }`,
  };
}

// ---------------------------------------------------------------------------------------------

function renderContext(v: NonNullable<Diagnosis['verdict']>): string {
  const ctx = v.context;
  const lines: Array<[number, string]> = [];
  if (ctx && Array.isArray(ctx.lines)) {
    ctx.lines.forEach((t, i) => lines.push([ctx.start_line + i, t]));
  }
  if (!lines.some(([n]) => n === v.line)) lines.push([v.line, v.text]);
  // Show at most the 14 lines before the initiating line: enough for its traceback.
  const shown = lines.filter(([n]) => n <= v.line).slice(-15);
  const frameLines = new Set((v.frames ?? []).map((f) => f.log_line).filter((n): n is number => typeof n === 'number'));
  const body = shown
    .map(([n, t]) => {
      const cls = n === v.line ? 'hit' : frameLines.has(n) ? 'frame-line' : '';
      return `<div class="logline ${cls}"><span class="ln">${n}</span><span class="lt">${escapeHtml(t)}</span></div>`;
    })
    .join('');
  return `<div class="log" role="region" aria-label="log lines before the initiating line">${body}</div>`;
}

function renderFrames(frames: DiagnosisFrame[]): string {
  if (!frames.length) return '';
  const items = frames
    .map((f, i) => {
      const lib = f.library ? ' library' : '';
      const fn = f.function ? ` in <code>${escapeHtml(f.function)}</code>` : '';
      const code = f.code ? `<pre class="frame-code">${escapeHtml(f.code)}</pre>` : '';
      return (
        `<li class="frame${lib}">` +
        `<a href="#" class="frame-link" data-frame="${i}" data-path="${escapeHtml(f.path)}" data-line="${escapeHtml(f.line)}"` +
        ` title="Open ${escapeHtml(f.path)} at line ${escapeHtml(f.line)}">${escapeHtml(f.path)}:${escapeHtml(f.line)}</a>${fn}` +
        (f.library ? ' <span class="tag">library</span>' : '') +
        code +
        `</li>`
      );
    })
    .join('');
  return `<section id="frames"><h2>Source frames</h2><ol class="frames">${items}</ol></section>`;
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground);
  background: var(--vscode-editor-background); padding: 0 20px 24px; line-height: 1.45; max-width: 1100px; }
h1 { font-size: 1.5em; font-weight: 600; margin: 18px 0 4px; }
h2 { font-size: 1.08em; font-weight: 600; margin: 22px 0 8px; color: var(--vscode-foreground);
  border-bottom: 1px solid var(--vscode-panel-border, var(--vscode-widget-border, transparent)); padding-bottom: 3px; }
p { margin: 6px 0; }
code, pre, .log { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
code { background: var(--vscode-textCodeBlock-background); padding: 1px 4px; border-radius: 3px; }
pre { background: var(--vscode-textCodeBlock-background); padding: 8px 10px; border-radius: 4px; overflow-x: auto; margin: 6px 0; white-space: pre-wrap; }
a { color: var(--vscode-textLink-foreground); text-decoration: none; }
a:hover { color: var(--vscode-textLink-activeForeground); text-decoration: underline; }
.origin { color: var(--vscode-descriptionForeground); margin: 0 0 10px; }
.verdict { border-left: 4px solid var(--vscode-errorForeground); background: var(--vscode-inputValidation-errorBackground, var(--vscode-textBlockQuote-background));
  padding: 10px 14px; border-radius: 0 4px 4px 0; margin: 10px 0; }
.verdict.low { border-left-color: var(--vscode-editorWarning-foreground); background: var(--vscode-inputValidation-warningBackground, var(--vscode-textBlockQuote-background)); }
.verdict .title { font-size: 1.15em; font-weight: 600; }
.verdict .code { font-family: var(--vscode-editor-font-family); opacity: .9; margin-right: 6px; }
.badges { margin-top: 6px; display: flex; flex-wrap: wrap; gap: 6px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: .9em;
  background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
.badge.who { background: var(--vscode-button-background); color: var(--vscode-button-foreground); font-weight: 600; }
.summary { margin: 8px 0; }
.log { background: var(--vscode-textCodeBlock-background); border-radius: 4px; padding: 6px 0; overflow-x: auto; }
.logline { display: flex; white-space: pre; padding: 0 10px; }
.logline .ln { color: var(--vscode-editorLineNumber-foreground); min-width: 3.5em; text-align: right; padding-right: 12px; user-select: none; }
.logline.hit { background: var(--vscode-editor-lineHighlightBackground, var(--vscode-list-hoverBackground));
  outline: 1px solid var(--vscode-errorForeground); color: var(--vscode-errorForeground); font-weight: 600; }
.logline.frame-line .lt { color: var(--vscode-textLink-foreground); }
.cascade { display: grid; align-items: stretch; overflow-x: auto; margin: 6px 0; }
.cas-head { font-weight: 600; padding: 4px 6px 6px; white-space: nowrap; border-bottom: 1px solid var(--vscode-widget-border, var(--vscode-panel-border, transparent)); }
.cas-head.quiet { color: var(--vscode-descriptionForeground); font-weight: normal; }
.when { color: var(--vscode-editorLineNumber-foreground); font-family: var(--vscode-editor-font-family); text-align: right; padding: 8px 10px 0 0; }
.cas-head.when { font-family: var(--vscode-font-family); font-weight: normal; color: var(--vscode-descriptionForeground); font-size: .85em; padding-top: 6px; }
.cell { position: relative; min-height: 2.8em; }
.cell.track::before { content: ""; position: absolute; top: 0; bottom: 0; left: 13px; border-left: 2px solid var(--vscode-descriptionForeground); opacity: .35; }
.cell.track.quiet::before { border-left-style: dotted; }
.cell.track.last::before { bottom: 50%; }
.event { display: flex; align-items: flex-start; gap: 8px; padding: 6px 4px 6px 6px; }
.event .dot { position: relative; z-index: 1; flex: none; margin: 2px 0 0 0; }
.ev-body { display: flex; flex-direction: column; min-width: 0; }
.dot { display: inline-block; width: 12px; height: 12px; border-radius: 50%; vertical-align: middle; margin: 0 3px 0 8px;
  background: var(--vscode-descriptionForeground); border: 2px solid var(--vscode-editor-background); box-sizing: content-box; }
.dot.first, .event.first .dot { background: var(--vscode-errorForeground); box-shadow: 0 0 0 2px var(--vscode-errorForeground); }
.dot.collateral, .event.collateral .dot, .event.initiating .dot { background: var(--vscode-editorWarning-foreground); }
.dot.context, .event.context .dot { background: var(--vscode-descriptionForeground); border-radius: 2px; }
.ev-role { font-size: .8em; text-transform: uppercase; letter-spacing: .04em; color: var(--vscode-descriptionForeground); }
.event.first .ev-role { color: var(--vscode-errorForeground); font-weight: 700; }
.event.collateral .ev-role { color: var(--vscode-editorWarning-foreground); }
.ev-rule { font-family: var(--vscode-editor-font-family); font-size: .9em; overflow-wrap: anywhere; }
.legend { color: var(--vscode-descriptionForeground); font-size: .9em; }
.legend .dot { width: 9px; height: 9px; box-shadow: none; }
.fix { border-left: 4px solid var(--vscode-testing-iconPassed, var(--vscode-charts-green)); padding: 4px 12px; background: var(--vscode-textBlockQuote-background); }
.fallback { border-left: 4px solid var(--vscode-charts-blue, var(--vscode-textLink-foreground)); padding: 4px 12px; background: var(--vscode-textBlockQuote-background); }
.verify { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.verify input { flex: 1 1 30em; min-width: 18em; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size);
  color: var(--vscode-input-foreground); background: var(--vscode-input-background); border: 1px solid var(--vscode-input-border, transparent); padding: 4px 6px; }
button { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-button-foreground); background: var(--vscode-button-background);
  border: 1px solid var(--vscode-button-border, transparent); padding: 4px 12px; border-radius: 2px; cursor: pointer; }
button:hover { background: var(--vscode-button-hoverBackground); }
button.secondary { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
button.secondary:hover { background: var(--vscode-button-secondaryHoverBackground); }
.hint { color: var(--vscode-descriptionForeground); font-size: .9em; }
.frames { padding-left: 1.6em; }
.frame { margin: 4px 0; }
.frame.library { opacity: .7; }
.frame-code { margin: 2px 0 0; padding: 3px 8px; }
.tag { font-size: .8em; padding: 0 5px; border-radius: 3px; background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
.notes li, .checklist li { margin: 3px 0; }
.warning { color: var(--vscode-editorWarning-foreground); }
.toolbar { display: flex; gap: 8px; margin: 14px 0 0; }
`;

const SCRIPT = `
const vscode = acquireVsCodeApi();
document.addEventListener('click', (ev) => {
  const a = ev.target.closest('a.frame-link');
  if (a) { ev.preventDefault(); vscode.postMessage({ type: 'openFrame', path: a.dataset.path, line: Number(a.dataset.line), index: Number(a.dataset.frame) }); return; }
  const b = ev.target.closest('button[data-action]');
  if (!b) return;
  if (b.dataset.action === 'runVerify') {
    const input = document.getElementById('verify-command');
    vscode.postMessage({ type: 'runVerify', command: input ? input.value : '' });
  } else {
    vscode.postMessage({ type: b.dataset.action });
  }
});
`;

/** The whole webview document. */
export function renderReportHtml(result: { diagnosis: Diagnosis; markdown?: string }, opts: ReportOptions): string {
  const d = result.diagnosis;
  const v = d.verdict;
  const csp =
    `default-src 'none'; img-src ${opts.cspSource} data:; ` +
    `style-src ${opts.cspSource} 'nonce-${opts.nonce}'; script-src 'nonce-${opts.nonce}';`;
  const parts: string[] = [];
  let extraCss = '';
  parts.push(`<h1>Denpex report</h1>`);
  const origin = [opts.origin, d.input?.lines ? `${d.input.lines} lines` : ''].filter(Boolean).join(' · ');
  if (origin) parts.push(`<p class="origin">${escapeHtml(origin)}</p>`);
  for (const w of d.warnings ?? []) parts.push(`<p class="warning">⚠ ${escapeHtml(w)}</p>`);

  if (!v) {
    parts.push(
      `<div class="verdict low"><div class="title">No CUDA-graph failure recognised</div>` +
        `<p>${escapeHtml(d.summary || 'Denpex found no error it knows in this text.')}</p>` +
        `<p class="hint">Select the whole log from the first error onwards (all ranks if you can), or diagnose the log file itself.</p></div>`,
    );
  } else {
    const who = describeWho(v);
    const low = v.confidence && v.confidence !== 'high' ? ' low' : '';
    parts.push(
      `<div class="verdict${low}" id="verdict">` +
        `<div class="title">${v.code ? `<span class="code">${escapeHtml(v.code)}</span>` : ''}${escapeHtml(v.title || v.rule)}</div>` +
        `<div class="badges">` +
        (who ? `<span class="badge who" id="who">${escapeHtml(who)}</span>` : `<span class="badge" id="who">rank unknown</span>`) +
        `<span class="badge">log line ${escapeHtml(v.line)}</span>` +
        (v.confidence ? `<span class="badge">confidence ${escapeHtml(v.confidence)}</span>` : '') +
        `<span class="badge">${escapeHtml(v.rule)}</span>` +
        (v.asynchronous ? `<span class="badge">reported asynchronously</span>` : '') +
        `</div>` +
        (d.summary ? `<p class="summary">${escapeHtml(d.summary)}</p>` : '') +
        `</div>`,
    );
    parts.push(`<section id="initiating"><h2>Where it started</h2>`);
    parts.push(
      `<p>The first failure is on log line <b>${escapeHtml(v.line)}</b>` +
        (who ? `, reported by <b>${escapeHtml(who)}</b>` : '') +
        (v.attribution?.length ? ` <span class="hint">(from ${escapeHtml(v.attribution.join(', '))})</span>` : '') +
        `:</p>`,
    );
    parts.push(renderContext(v));
    parts.push(`</section>`);
    if (v.root_cause) parts.push(`<section id="why"><h2>Why</h2>${paragraphs(v.root_cause)}</section>`);
    const cascade = renderCascade(d, opts);
    extraCss = cascade.css;
    parts.push(cascade.html);
    if (v.fix) parts.push(`<section id="fix"><h2>Fix</h2><div class="fix">${paragraphs(v.fix)}</div></section>`);
    if (v.eager_fallback) {
      parts.push(`<section id="fallback"><h2>Eager fallback</h2><div class="fallback">${paragraphs(v.eager_fallback)}</div></section>`);
    }
    if (v.verify) {
      parts.push(
        `<section id="verify"><h2>Verify the fix</h2><div class="verify">` +
          `<input id="verify-command" type="text" spellcheck="false" aria-label="verification command" value="${escapeHtml(v.verify)}">` +
          `<button data-action="runVerify" id="run-verify" title="Run this command in a new terminal">Run in terminal</button>` +
          `</div><p class="hint">Edit the command (your script and arguments) before running it.` +
          (opts.verifyRunAs ? ` <code>denpex</code> runs as <code>${escapeHtml(opts.verifyRunAs)}</code>.` : '') +
          `</p></section>`,
      );
    }
    parts.push(renderFrames(v.frames ?? []));
    const notes = v.notes ?? [];
    if (notes.length) parts.push(`<section id="notes"><h2>Notes</h2><ul class="notes">${notes.map((n) => `<li>${inlineCode(n)}</li>`).join('')}</ul></section>`);
    if (v.alternatives?.length) {
      parts.push(
        `<section id="alternatives"><h2>Other failures in the log</h2><ul class="notes">` +
          v.alternatives
            .map((a) => `<li><code>${escapeHtml(a.rule)}</code> ${escapeHtml(a.title ?? '')}${a.line ? ` (log line ${escapeHtml(a.line)})` : ''}${a.why_not_first ? ` — ${escapeHtml(a.why_not_first)}` : ''}</li>`)
            .join('') +
          `</ul></section>`,
      );
    }
    if (v.checklist?.length) {
      parts.push(`<section id="checklist"><h2>Check</h2><ul class="checklist">${v.checklist.map((c) => `<li>${inlineCode(c)}</li>`).join('')}</ul></section>`);
    }
    if (v.references?.length) {
      parts.push(
        `<section id="references"><h2>References</h2><ul class="notes">${v.references
          .map((r) => `<li><a href="${escapeHtml(safeUrl(r))}">${escapeHtml(r)}</a></li>`)
          .join('')}</ul></section>`,
      );
    }
  }
  parts.push(
    `<div class="toolbar">` +
      (result.markdown ? `<button class="secondary" data-action="copyMarkdown">Copy as Markdown</button>` : '') +
      `<button class="secondary" data-action="copyJson">Copy JSON</button>` +
      `</div>`,
  );
  return (
    `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">` +
    `<meta http-equiv="Content-Security-Policy" content="${csp}">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1.0">` +
    `<title>Denpex report</title><style nonce="${opts.nonce}">${STYLE}${extraCss}</style></head>` +
    `<body>${parts.join('\n')}<script nonce="${opts.nonce}">${SCRIPT}</script></body></html>`
  );
}

function safeUrl(u: string): string {
  return /^https?:\/\//i.test(u) ? u : '#';
}

/** A report title for the panel tab. */
export function reportTitle(d: Diagnosis): string {
  const v = d.verdict;
  if (!v) return 'Denpex: nothing recognised';
  const who = v.rank !== null && v.rank !== undefined ? ` (rank ${v.rank})` : '';
  return `Denpex: ${v.code ?? v.rule}${who}`;
}
