/**
 * What TAILDIR must know after a restart to go on where it was, and how it is kept.
 *
 * For every tracked file a record: inode, committed position, path, the fingerprint of the
 * bytes before the position, and (for a copytruncate copy waiting for its original to be
 * truncated) the original's inode. Every change of a record gets the next sequence number,
 * so records from different places can be merged by age.
 *
 * Records live in three places:
 * - the state file `<positionFile>.state`: a snapshot line (all records, written atomically and
 *   flushed) followed by one line per later change, appended with one write() each. A SIGKILL
 *   leaves every line written so far; a power loss may take the lines after the snapshot.
 * - a durable channel (file channel): each commit stores, in the same transaction as the
 *   events, the records changed since the last flushed snapshot (`base`). So positions and
 *   fingerprints are exactly those of the committed events, even after a power loss.
 * - Flume's position file (positions only), rewritten with each snapshot for Flume's tools
 *   and for going back to Flume; read only when there is no state file.
 */
import { closeSync, fdatasync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { syncDirectory, writeFileAtomic } from "../../../io/atomic-write.ts";
import { type Fingerprint, formatFingerprint, parseFingerprint } from "./fingerprint.ts";
import { formatPositions, type PositionEntry } from "./position-file.ts";

export interface FileRecord {
  inode: number;
  pos: number;
  file: string;
  fp: Fingerprint | null;
  /** A copy of the tracked file with this inode, not read until that file is truncated. */
  copyOf?: number;
  /** The change that wrote this record. */
  seq: number;
}

/** A durable channel's value: the records changed (or let go) since snapshot `base`. */
export interface ChannelState {
  seq: number;
  base: number;
  files: FileRecord[];
  gone: { inode: number; seq: number }[];
  /** Written by a version that stored Flume's plain position array (no fingerprints, no sequence). */
  legacy?: boolean;
}

export function recordJson(r: FileRecord): string {
  const fp = r.fp ? `,"fp":"${formatFingerprint(r.fp)}"` : "";
  const copy = r.copyOf !== undefined ? `,"copyOf":${r.copyOf}` : "";
  return `{"seq":${r.seq},"inode":${r.inode},"pos":${r.pos},"file":${JSON.stringify(r.file)}${fp}${copy}}`;
}

export function goneJson(inode: number, seq: number): string {
  return `{"seq":${seq},"inode":${inode},"gone":true}`;
}

function parseRecord(o: Record<string, unknown>, fallbackSeq: number): FileRecord | null {
  if (typeof o.inode !== "number" || typeof o.pos !== "number" || typeof o.file !== "string") return null;
  const r: FileRecord = { inode: o.inode, pos: o.pos, file: o.file, fp: parseFingerprint(o.fp), seq: typeof o.seq === "number" ? o.seq : fallbackSeq };
  if (typeof o.copyOf === "number") r.copyOf = o.copyOf;
  return r;
}

/** The value a durable channel stores with a commit; `records` are the changed ones, already JSON. */
export function formatChannelState(seq: number, base: number, records: Iterable<string>, gone: Iterable<string>): string {
  return `{"v":2,"seq":${seq},"base":${base},"files":[${[...records].join(",")}],"gone":[${[...gone].join(",")}]}`;
}

/** Parses a channel's stored value: ours, or Flume's position array stored by older versions. */
export function parseChannelState(text: string): ChannelState {
  const data: unknown = JSON.parse(text);
  if (Array.isArray(data)) {
    const files: FileRecord[] = [];
    for (const item of data) {
      const r = typeof item === "object" && item !== null ? parseRecord(item as Record<string, unknown>, 0) : null;
      if (!r) throw new Error(`an entry without inode, pos and file: ${JSON.stringify(item)}`);
      files.push(r);
    }
    return { seq: 0, base: -1, files, gone: [], legacy: true };
  }
  const o = data as Record<string, unknown>;
  if (typeof o !== "object" || o === null || o.v !== 2 || typeof o.seq !== "number" || typeof o.base !== "number" || !Array.isArray(o.files)) {
    throw new Error("not a TAILDIR state (expected {v: 2, seq, base, files})");
  }
  const files: FileRecord[] = [];
  const gone: { inode: number; seq: number }[] = [];
  for (const item of o.files as unknown[]) {
    const r = typeof item === "object" && item !== null ? parseRecord(item as Record<string, unknown>, o.seq) : null;
    if (r) files.push(r);
  }
  for (const item of (Array.isArray(o.gone) ? o.gone : []) as Record<string, unknown>[]) {
    if (typeof item?.inode === "number" && typeof item.seq === "number") gone.push({ inode: item.inode, seq: item.seq });
  }
  return { seq: o.seq, base: o.base, files, gone };
}

/** The state file's content: the snapshot's sequence number, and every record after replaying the lines. */
export interface JournalState {
  snapshotSeq: number;
  seq: number;
  records: Map<number, FileRecord>;
  /** Lines that could not be read (a torn last line after a power loss, say). */
  skipped: number;
}

/** Replays a state file's lines; null when it holds no snapshot. */
export function parseJournal(text: string): JournalState | null {
  let state: JournalState | null = null;
  let skipped = 0;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(line) as Record<string, unknown>;
    } catch {
      skipped++;
      continue;
    }
    if (o.v === 2 && Array.isArray(o.files) && typeof o.seq === "number") {
      const records = new Map<number, FileRecord>();
      for (const item of o.files as Record<string, unknown>[]) {
        const r = typeof item === "object" && item !== null ? parseRecord(item, o.seq) : null;
        if (r) records.set(r.inode, r);
      }
      state = { snapshotSeq: o.seq, seq: o.seq, records, skipped: 0 };
      continue;
    }
    if (!state || typeof o.seq !== "number" || typeof o.inode !== "number") {
      skipped++;
      continue;
    }
    state.seq = Math.max(state.seq, o.seq);
    const cur = state.records.get(o.inode);
    if (cur && cur.seq > o.seq) continue;
    if (o.gone === true) state.records.delete(o.inode);
    else {
      const r = parseRecord(o, o.seq);
      if (r) state.records.set(r.inode, r);
    }
  }
  if (state) state.skipped = skipped;
  return state;
}

export interface MergedState {
  records: FileRecord[];
  seq: number;
  notes: string[];
}

/**
 * The newest record of every file, from the state file and a durable channel's value. A
 * record is taken from the channel when it is newer than the state file's for that inode, or
 * when the state file has none and the record is newer than its snapshot (an older one was
 * let go before the snapshot was written).
 */
export function mergeState(journal: JournalState | null, channel: ChannelState | null): MergedState {
  const notes: string[] = [];
  const records = new Map<number, FileRecord>(journal?.records ?? []);
  const snapshotSeq = journal?.snapshotSeq ?? -1;
  let seq = journal?.seq ?? 0;
  if (channel) {
    if (channel.legacy) {
      // No sequence numbers: the channel's positions are those of the last commit (exact).
      for (const r of channel.files) records.set(r.inode, { ...r, fp: records.get(r.inode)?.fp ?? null, seq: records.get(r.inode)?.seq ?? 0 });
    } else {
      if (journal && channel.base > journal.snapshotSeq) {
        notes.push(`the state file (snapshot ${journal.snapshotSeq}) is older than the one the channel's positions build on (${channel.base}); files read since may be read again`);
      }
      for (const r of channel.files) {
        const cur = records.get(r.inode);
        if (cur ? r.seq > cur.seq : r.seq > snapshotSeq) records.set(r.inode, r);
      }
      for (const g of channel.gone) {
        const cur = records.get(g.inode);
        if (cur && cur.seq < g.seq) records.delete(g.inode);
      }
      seq = Math.max(seq, channel.seq);
    }
  }
  return { records: [...records.values()], seq, notes };
}

const fdatasyncAsync = (fd: number) => new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

/**
 * The state file: loaded once at start, then appended to (one write per change, no flush) and
 * replaced by a fresh snapshot now and then. Lines appended while a snapshot is being flushed
 * go to the old file and, right before the new one replaces it, to the new one too (in one
 * synchronous step: no line can fall between the two).
 */
export class StateJournal {
  readonly file: string;
  private fd: number | null = null;
  /** Bytes appended since the last snapshot. */
  appended = 0;
  /** Lines appended while a snapshot is being written, for the new file. */
  private pending: string[] | null = null;
  private broken: string | null = null;

  constructor(
    readonly positionFile: string,
    private readonly onError: (message: string) => void,
  ) {
    this.file = `${positionFile}.state`;
  }

  load(): JournalState | null {
    let text: string;
    try {
      text = readFileSync(this.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
    const state = parseJournal(text);
    if (!state && text.trim() !== "") throw new Error("it holds no snapshot line (damaged, or not a TAILDIR state file)");
    return state;
  }

  /** Appends change lines; each becomes durable against a crash of this process at once. */
  append(lines: string): void {
    if (this.fd === null) return; // no snapshot yet: the first one carries everything
    try {
      const n = writeSync(this.fd, lines);
      this.appended += n;
      this.broken = null;
    } catch (err) {
      const message = `could not append to ${this.file}: ${(err as Error).message}`;
      if (this.broken !== message) this.onError(message);
      this.broken = message;
    }
    this.pending?.push(lines);
  }

  /**
   * Replaces the state file with a snapshot of `records` (sequence `seq`), flushed, then
   * Flume's position file. Resolves once both are durable.
   */
  async snapshot(records: string[], seq: number, positions: PositionEntry[]): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.tmp`;
    const fd = openSync(tmp, "w");
    let adopted = false;
    this.pending = [];
    try {
      const text = `{"v":2,"seq":${seq},"files":[${records.join(",")}]}\n`;
      writeSync(fd, text);
      await fdatasyncAsync(fd);
      // One synchronous step: the lines appended meanwhile, the rename, the switch.
      let appended = 0;
      for (const l of this.pending) appended += writeSync(fd, l);
      renameSync(tmp, this.file);
      if (this.fd !== null) closeSync(this.fd);
      this.fd = fd;
      adopted = true;
      this.appended = appended;
    } finally {
      this.pending = null;
      if (!adopted) closeSync(fd);
    }
    await syncDirectory(path.dirname(this.file));
    await writeFileAtomic(this.positionFile, formatPositions(positions));
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
