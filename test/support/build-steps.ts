/** What the harnesses share to resolve or build their peers (mvn, go): the cache and the command runner. */
import { spawn } from "node:child_process";
import { homedir } from "node:os";
import path from "node:path";

/** Where resolved and built peers are kept between runs (`kind`: "jvm", "go"); outside the repository. */
export function peerCacheDir(kind: string): string {
  const base = process.env.FLUME_TS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), ".cache"), "flume-ts");
  return path.join(base, kind);
}

export interface CommandResult {
  code: number | null;
  /** stdout and stderr interleaved, the last 200 kB. */
  output: string;
}

/** Runs `cmd args` to its end, or SIGKILLs it after timeoutMs (said at the end of the output). */
export function runCommand(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output = (output + d).slice(-200_000)));
    child.stderr.on("data", (d) => (output = (output + d).slice(-200_000)));
    const timer = setTimeout(() => {
      output += `\n(killed after ${opts.timeoutMs} ms)`;
      child.kill("SIGKILL");
    }, opts.timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ code: -1, output: `${output}\n${e.message}` });
    });
  });
}

/** The last `lines` lines of a command's output, for an error message. */
export function lastLines(text: string, lines: number): string {
  return text.split("\n").slice(-lines).join("\n");
}
