import { describe, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { AGENT_HEAD_COLOR, LINK_COLOR } from "../../src/simulate/html.ts";
import { ROOT, runCli, tempDir } from "../support/helpers.ts";
import { countColor, readPng } from "../support/png.ts";
import { CHROMIUM, needsChromium } from "../support/requires.ts";

/** Headless Chromium on a fresh profile, nothing fetched from the network. */
function chromium(profile: string, ...args: string[]) {
  const r = spawnSync(
    CHROMIUM,
    ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", `--user-data-dir=${profile}`, ...args],
    { encoding: "utf8", timeout: 20000 },
  );
  if (r.status !== 0) throw new Error(`chromium exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

interface TierJson {
  verdictLine: string;
  agents: { name: string; verdict: string }[];
  links: { name: string; events: number; answersLost: number }[];
  crashes: { agent: string; at: number; dropped: { events: number }[]; lost: number }[];
  channels: { name: string; peak: number }[];
}

describe("the HTML report in a browser", () => {
  needsChromium.test("draws the tier's topology and a timeline per agent: the DOM Chromium renders has every agent, channel, sink and link with its counts, and the screenshot shows them", () => {
    const { dir, cleanup } = tempDir("flume-sim-html-");
    try {
      const page = path.join(dir, "tier.html");
      const sim = runCli(["simulate", "-f", path.join(ROOT, "conf", "tier.conf"), "--events", "20000", "--lose-answer", "0.05", "--link-latency", "10ms", "--crash", "edge2@1200ms", "--json", "--html", page], { env: { TMPDIR: dir } });
      expect(sim.code).toBe(1);
      const report = JSON.parse(sim.stdout) as TierJson;

      const dom = chromium(path.join(dir, "profile-dom"), "--dump-dom", `file://${page}`);
      const agents = [...dom.matchAll(/<g class="agent" data-agent="([^"]+)" data-verdict="([^"]+)"/g)].map((m) => `${m[1]} ${m[2]}`);
      expect(agents).toEqual(report.agents.map((a) => `${a.name} ${a.verdict}`));
      const channels = [...dom.matchAll(/<g class="channel" data-channel="([^"]+)" data-peak="(\d+)"/g)].map((m) => `${m[1]} ${m[2]}`);
      expect(channels).toEqual(report.channels.map((c) => `${c.name} ${c.peak}`));
      expect([...dom.matchAll(/<g class="sink" data-sink="k1"/g)]).toHaveLength(3);
      const links = [...dom.matchAll(/<g class="link" data-link="([^"]+)" data-events="(\d+)" data-requests="\d+" data-answers-lost="(\d+)"/g)].map((m) => `${m[1].replace("&gt;", ">")} ${m[2]} ${m[3]}`);
      expect(links).toEqual(report.links.map((l) => `${l.name} ${l.events} ${l.answersLost}`));
      expect(links.length).toBe(2);
      // One timeline per agent; the crash label counts what the verdict counts.
      expect([...dom.matchAll(/<svg [^>]*class="timeline" data-agent="([^"]+)"/g)].map((m) => m[1])).toEqual(["edge1", "edge2", "collector"]);
      const crash = report.crashes[0];
      const label = `crash ${1.2.toFixed(3)}s (${crash.dropped[0].events.toLocaleString("en-US")} dropped, ${crash.lost.toLocaleString("en-US")} lost)`;
      expect(dom).toContain(label);
      expect(report.verdictLine).toBe(`tier at-least-once: VIOLATED (${crash.lost.toLocaleString("en-US")} lost)`);

      const shot = path.join(dir, "shot.png");
      chromium(path.join(dir, "profile-shot"), `--screenshot=${shot}`, "--window-size=1200,900", `file://${page}`);
      expect(existsSync(shot)).toBe(true);
      expect(statSync(shot).size).toBeGreaterThan(20_000);
      const png = readPng(shot);
      expect([png.width, png.height]).toEqual([1200, 900]);
      // The three agents' title bars (360 x 24 each, minus the text) and the two link strokes are on screen.
      expect(countColor(png, AGENT_HEAD_COLOR)).toBeGreaterThan(3 * 360 * 24 * 0.6);
      expect(countColor(png, LINK_COLOR, 6)).toBeGreaterThan(2 * 150);
      // The page draws on white, not a blank or error page.
      expect(png.pixel(5, 5)).toEqual([255, 255, 255, 255]);
      expect(readFileSync(page, "utf8")).not.toMatch(/<script|<link|src="http/);
    } finally {
      cleanup();
    }
  }, 60_000);
});
