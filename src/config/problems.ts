/**
 * A problem found in a configuration file: where it is, which component and key it concerns,
 * what is wrong and how to fix it. Parsing, substitution and validation all report these.
 */

export type Severity = "error" | "warning";

/** The component kinds of Flume's grammar that a problem can belong to. */
export type EntryKind = "source" | "channel" | "sink" | "sinkgroup";

/** A machine-readable category, so callers (tests, `flume run --lenient`) need not parse messages. */
export type ProblemCode =
  | "syntax" // the properties file itself is malformed
  | "duplicate-key" // a key appears twice; the later value wins
  | "not-in-agent" // a key that belongs to no agent and that nothing references
  | "no-agent" // the file configures no agent
  | "unknown-agent" // -n names an agent the file does not configure
  | "ambiguous-agent" // several agents, no -n
  | "unresolved-variable"
  | "substitution-cycle"
  | "config-filter" // a config filter is misconfigured or failed
  | "invalid-key" // a key under the agent that Flume's grammar does not know
  | "empty-list"
  | "missing-type"
  | "unknown-type"
  | "unsupported-type" // a Flume type that Flume TS does not implement
  | "unknown-property"
  | "deprecated-property" // a name Flume still reads but warns about
  | "bad-value"
  | "listed-not-configured"
  | "configured-not-listed"
  | "duplicate-name"
  | "missing-channels"
  | "missing-channel"
  | "undefined-channel"
  | "undefined-sink"
  | "sink-in-two-groups"
  | "missing-sinks"
  | "batch-exceeds-transaction"
  | "transaction-exceeds-capacity"
  | "channel-unused"
  | "topic-loop" // a sink sends each event back to the topic its source read it from
  | "no-channels"
  | "no-sources-or-sinks";

export interface Problem {
  file: string;
  /** 1-based line; 0 when the problem concerns the file as a whole. */
  line: number;
  /** Who is concerned, as printed: "source r1", "sinkgroup g1", or the agent name. */
  component: string;
  /** The key relative to the component (e.g. "batchSize", "interceptors.i1.type"), or "" */
  key: string;
  message: string;
  /** How to fix it; printed in parentheses after the message. */
  hint?: string;
  severity: Severity;
  code: ProblemCode;
  /** The component to drop when running leniently (Flume drops misconfigured components). */
  ref?: { kind: EntryKind; name: string };
}

/** The message followed by the hint, as shown to users (human output and --json). */
export function fullMessage(p: Problem): string {
  return p.hint ? `${p.message} (${p.hint})` : p.message;
}

/** `file:line: error: component: key: message (hint)`; `file: error: ...` for the whole file. */
export function formatProblem(p: Problem): string {
  const parts = [p.line > 0 ? `${p.file}:${p.line}` : p.file, p.severity];
  if (p.component) parts.push(p.component);
  if (p.key) parts.push(p.key);
  parts.push(fullMessage(p));
  return parts.join(": ");
}

/** File order, then line, errors before warnings on the same line. */
export function sortProblems(problems: Problem[]): Problem[] {
  return [...problems].sort(
    (a, b) =>
      byCodePoint(a.file, b.file) ||
      a.line - b.line ||
      (a.severity === b.severity ? 0 : a.severity === "error" ? -1 : 1) ||
      byCodePoint(a.component, b.component) ||
      byCodePoint(a.key, b.key),
  );
}

/** Plain string order: the same everywhere, and no ICU collator (megabytes) in an agent that reports a warning. */
function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Levenshtein distance, case-insensitive (type names and keys are compared loosely). */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  if (s === t) return 0;
  let prev = Array.from({ length: t.length + 1 }, (_, i) => i);
  let cur = new Array<number>(t.length + 1);
  for (let i = 1; i <= s.length; i++) {
    cur[0] = i;
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[t.length];
}

/**
 * The closest candidate, if it is close enough to be a plausible typo: at most a third of
 * the word's length (at least 2 edits, 1 for names of up to 3 letters), or the same word
 * ignoring case, '-', '_' and '.'.
 */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const squash = (s: string) => s.toLowerCase().replace(/[-_.]/g, "");
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    if (c === word) continue;
    const d = squash(c) === squash(word) ? 0.5 : editDistance(word, c);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  // Short names ("c1", "k2") only get suggestions one edit away; otherwise any two-letter name matches.
  const limit = word.length <= 3 ? 1 : Math.max(2, Math.floor(word.length / 3));
  return best !== undefined && bestDistance <= limit ? best : undefined;
}
