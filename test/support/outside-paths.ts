/**
 * Finds places in the repository's text files that name a path outside the repository, so that
 * a fresh clone has everything its tests, benchmarks and scripts read. A line offends when it:
 *
 * - names the folder `shared` one level up (where the golden data once lived, next to the
 *   repository);
 * - holds a `../` chain that, resolved against the file's own directory, leaves the repository:
 *   a string literal such as "../../x", consecutive literal arguments such as "..", "..", or a
 *   bare chain in a comment; a chain passed right after `ROOT` or `process.cwd()` is resolved
 *   against the repository root instead;
 * - names an absolute path under a top-level folder that holds users' or machines' files rather
 *   than the system's (MACHINE_DIRS: work, root, home, Users, Volumes, workspace), or the
 *   repository's own absolute path. System paths (tmp, dev, proc, sys, usr, bin, etc, var, ...
 *   at the top of the file system) are fine.
 *
 * Files holding a NUL byte are binary (recorded golden data) and are not read.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

export interface Offender {
  file: string;
  line: number;
  why: string;
  text: string;
}

const MACHINE_DIRS = ["work", "root", "home", "Users", "Volumes", "workspace"];
const MACHINE_PATH = new RegExp(`(?<![\\w.:/~\\-])/(?:${MACHINE_DIRS.join("|")})(?=[/"'\`\\s)\\]},;:]|$)`);
const SHARED = new RegExp(["\\.\\.", "shared\\b"].join("/"));
/** A run of comma-separated string literals, each ".." or starting with "../". */
const LITERAL_RUN = /(?:(["'`])\.\.(?:\/[^"'`\s]*)?\1\s*,\s*)*(["'`])\.\.(?:\/[^"'`\s]*)?\2/g;
const LITERAL = /(["'`])([^"'`]*)\1/g;
const BARE_CHAIN = /(?<![\w.\/-])(?:\.\.\/)+[\w.\-\/]*/g;
const ROOT_ANCHOR = /(?:\bROOT|process\.cwd\(\))\s*,\s*$/;

/** The offending places of one file's text; file is its absolute path. */
export function findOutsidePaths(file: string, text: string, root: string): Offender[] {
  const offenders: Offender[] = [];
  const rootPath = path.resolve(root);
  const inside = (p: string) => {
    const rel = path.relative(rootPath, p);
    return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
  };
  const rel = path.relative(rootPath, file);
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    const report = (why: string) => offenders.push({ file: rel, line: i + 1, why, text: line.trim() });
    if (SHARED.test(line)) report("names the shared folder beside the repository");
    if (MACHINE_PATH.test(line)) report(`names an absolute path of a machine (${MACHINE_PATH.exec(line)?.[0]}...)`);
    else if (line.includes(rootPath)) report(`names the repository's absolute path ${rootPath}`);

    let rest = line;
    for (const m of line.matchAll(LITERAL_RUN)) {
      const parts = [...m[0].matchAll(LITERAL)].map((l) => l[2]);
      const before = line.slice(0, m.index);
      const base = ROOT_ANCHOR.test(before) ? rootPath : path.dirname(file);
      const target = path.resolve(base, ...parts);
      if (!inside(target)) report(`${parts.map((p) => JSON.stringify(p)).join(", ")} from ${path.relative(rootPath, base) || "the repository root"} leaves the repository (${target})`);
      rest = rest.replace(m[0], " ".repeat(m[0].length));
    }
    for (const m of rest.matchAll(BARE_CHAIN)) {
      const target = path.resolve(path.dirname(file), m[0]);
      if (!inside(target)) report(`${m[0]} from ${path.relative(rootPath, path.dirname(file))} leaves the repository (${target})`);
    }
  });
  return offenders;
}

/** Every text file below the given folders of the repository (node_modules and dot folders left out). */
export function repositoryFiles(root: string, folders: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) out.push(p);
    }
  };
  for (const f of folders) walk(path.join(root, f));
  return out.sort();
}

/** The offenders of every text file below the folders; binary files are skipped. */
export function scanRepository(root: string, folders: string[]): Offender[] {
  const offenders: Offender[] = [];
  for (const file of repositoryFiles(root, folders)) {
    const bytes = readFileSync(file);
    if (bytes.includes(0)) continue;
    offenders.push(...findOutsidePaths(file, bytes.toString("utf8"), root));
  }
  return offenders;
}

export const formatOffender = (o: Offender) => `${o.file}:${o.line}: ${o.why}: ${o.text}`;
