import { promises as dns } from "node:dns";
import { ConfigurationError } from "../core/errors.ts";

/**
 * Flume's avro source ipFilterRules: comma-separated `allow|deny:ip|name:pattern`, where a
 * pattern uses `*` (any run) and `?` (one character). The first rule that matches the peer
 * decides; a peer no rule matches is allowed (Netty's RuleBasedIpFilter). `name:localhost`
 * matches the loopback and the host's own addresses.
 */
export interface IpFilterRule {
  allow: boolean;
  kind: "ip" | "name";
  pattern: string;
  matcher: RegExp | "localhost";
}

function wildcard(pattern: string): RegExp {
  const escaped = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^(?:${escaped})$`);
}

export function parseIpFilterRules(spec: string, key = "ipFilterRules"): IpFilterRule[] {
  if (spec.trim() === "") throw new ConfigurationError(key, "ipFilter is true but ipFilterRules is empty; e.g. allow:ip:127.*,deny:ip:*");
  return spec.split(",").map((raw) => {
    const rule = raw.trim();
    const m = /^(allow|deny):(ip|name):(.*)$/.exec(rule);
    if (!m) throw new ConfigurationError(key, `invalid rule "${rule}": expected <allow|deny>:<ip|name>:<pattern>, e.g. allow:ip:127.*`);
    const kind = m[2] as "ip" | "name";
    const pattern = m[3].trim();
    const matcher = kind === "name" && pattern === "localhost" ? "localhost" : wildcard(pattern);
    return { allow: m[1] === "allow", kind, pattern, matcher };
  });
}

const LOOPBACK = new Set(["127.0.0.1", "::1"]);

export class IpFilter {
  private readonly needsName: boolean;

  constructor(
    readonly rules: IpFilterRule[],
    /** Reverse lookup for name rules; Java falls back to the address when it has no name. */
    private readonly reverse: (ip: string) => Promise<string> = defaultReverse,
    private readonly localAddresses: () => Set<string> = () => LOOPBACK,
  ) {
    this.needsName = rules.some((r) => r.kind === "name" && r.matcher !== "localhost");
  }

  /** True when the peer at this address may connect. */
  async allows(address: string): Promise<boolean> {
    const ip = address.startsWith("::ffff:") ? address.slice(7) : address;
    let name: string | null = null;
    if (this.needsName) name = await this.reverse(ip).catch(() => ip);
    for (const rule of this.rules) {
      let hit: boolean;
      if (rule.matcher === "localhost") hit = LOOPBACK.has(ip) || this.localAddresses().has(ip);
      else if (rule.kind === "ip") hit = rule.matcher.test(ip);
      else hit = rule.matcher.test(name ?? ip);
      if (hit) return rule.allow;
    }
    return true;
  }
}

async function defaultReverse(ip: string): Promise<string> {
  const names = await dns.reverse(ip);
  return names[0] ?? ip;
}
