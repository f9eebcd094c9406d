// Types of the denpex.diagnosis/1 JSON (what `denpex diagnose --format json` prints and what the
// server's `denpex.diagnose` command returns), and small helpers over it. Every field is treated
// as optional at runtime: the report must render whatever a newer or older server sends.

export interface DiagnosisFrame {
  path: string;
  line: number;
  function?: string | null;
  code?: string | null;
  log_line?: number | null;
  library?: boolean;
  /** Added by the server when it mapped the frame to a workspace file (optional). */
  uri?: string | null;
  resolved_path?: string | null;
}

export interface DiagnosisFinding {
  rule: string;
  role: 'initiating' | 'collateral' | 'context' | string;
  line: number;
  text: string;
  rank?: number | null;
  local_rank?: number | null;
  node?: string | null;
  process?: string | number | null;
  evidence?: string[];
  count?: number;
  variant?: string | null;
}

export interface DiagnosisVerdict {
  rule: string;
  code?: string | null;
  title?: string;
  line: number;
  text: string;
  rank?: number | null;
  local_rank?: number | null;
  node?: string | null;
  process?: string | number | null;
  attribution?: string[];
  confidence?: string;
  root_cause?: string;
  fix?: string;
  eager_fallback?: string | null;
  verify?: string | null;
  asynchronous?: boolean;
  via?: string | null;
  notes?: string[];
  context?: { start_line: number; end_line: number; lines: string[] };
  frames?: DiagnosisFrame[];
  fingerprint?: DiagnosisFinding | null;
  suspect_ranks?: number[];
  frameworks?: string[];
  first_divergence?: { line: number; text: string } | null;
  checklist?: string[];
  references?: string[];
  alternatives?: Array<{ rule: string; title?: string; line?: number; rank?: number | null; why_not_first?: string }>;
}

export interface Diagnosis {
  schema: string;
  input?: { source?: string; bytes?: number; lines?: number; truncated_last_line?: boolean };
  summary?: string;
  warnings?: string[];
  verdict: DiagnosisVerdict | null;
  findings: DiagnosisFinding[];
}

/** A frame the server mapped to a workspace file (`line` is 0-based). */
export interface MappedLocation {
  uri: string;
  path: string;
  line: number;
  frame?: Partial<DiagnosisFrame>;
}

export interface DiagnoseResult {
  diagnosis: Diagnosis;
  markdown: string;
  locations: MappedLocation[];
}

/** The server's mapping of a frame, matched by (path, line) of the log frame. */
export function locationForFrame(frame: DiagnosisFrame, locations: MappedLocation[]): MappedLocation | undefined {
  return locations.find((l) => l.frame && l.frame.path === frame.path && l.frame.line === frame.line);
}

/**
 * Accepts what the server's `denpex.diagnose` command returned and normalises it to
 * {diagnosis, markdown}. Tolerates a bare diagnosis object and a JSON string.
 */
export function normaliseDiagnoseResult(raw: unknown): DiagnoseResult | undefined {
  let value: unknown = raw;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (!value || typeof value !== 'object') return undefined;
  const obj = value as Record<string, unknown>;
  if (obj.diagnosis && typeof obj.diagnosis === 'object') {
    const d = obj.diagnosis as Diagnosis;
    if (!isDiagnosis(d)) return undefined;
    const locations = Array.isArray(obj.locations)
      ? (obj.locations as MappedLocation[]).filter((l) => l && typeof l.uri === 'string' && typeof l.line === 'number')
      : [];
    return { diagnosis: d, markdown: typeof obj.markdown === 'string' ? obj.markdown : '', locations };
  }
  if (isDiagnosis(obj as unknown as Diagnosis)) return { diagnosis: obj as unknown as Diagnosis, markdown: '', locations: [] };
  return undefined;
}

function isDiagnosis(d: Diagnosis): boolean {
  return (
    !!d &&
    typeof d === 'object' &&
    typeof d.schema === 'string' &&
    d.schema.startsWith('denpex.diagnosis/') &&
    Array.isArray(d.findings)
  );
}

/** "rank 1 · local rank 1 · node n3 · pid 709" or "" when nothing is known. */
export function describeWho(v: {
  rank?: number | null;
  local_rank?: number | null;
  node?: string | null;
  process?: string | number | null;
}): string {
  const parts: string[] = [];
  if (v.rank !== null && v.rank !== undefined) parts.push(`rank ${v.rank}`);
  if (v.local_rank !== null && v.local_rank !== undefined && v.local_rank !== v.rank) parts.push(`local rank ${v.local_rank}`);
  if (v.node) parts.push(`node ${v.node}`);
  if (v.process !== null && v.process !== undefined && v.process !== '') parts.push(`process ${v.process}`);
  return parts.join(' · ');
}

/** Ranks a log mentions in rank prefixes ("[rank3]:", "[rank3]") or torchrun's failure table. */
export function ranksMentioned(text: string, limit = 64): number[] {
  const found = new Set<number>();
  const head = text.length > 8 * 1024 * 1024 ? text.slice(0, 8 * 1024 * 1024) : text;
  const patterns = [/\[(?:rank|RANK)\s*(\d{1,5})\]/g, /^\s*rank\s*:\s*(\d{1,5})\s*\(local_rank/gm, /\[default(\d{1,5})\]:/g];
  for (const re of patterns) {
    let m: RegExpExecArray | null;
    while ((m = re.exec(head)) !== null) {
      found.add(Number(m[1]));
      if (found.size >= limit) break;
    }
  }
  return [...found].sort((a, b) => a - b);
}
