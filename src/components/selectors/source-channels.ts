import type { PropError, ValidationContext } from "../../config/schema.ts";

/**
 * A selector's check against its wiring: every channel it names (`[key, names]`, keys relative
 * to the selector) must be one of its source's channels. Nothing to check outside an agent.
 */
export function channelsOutsideSource(context: ValidationContext | undefined, named: Iterable<readonly [string, readonly string[]]>): PropError[] {
  const channels = context?.channels;
  if (channels === undefined) return [];
  const problems: PropError[] = [];
  for (const [key, names] of named) {
    for (const ch of names) {
      if (channels.includes(ch)) continue;
      problems.push({ key, code: "undefined-channel", message: `channel ${ch} is not one of the source's channels (${channels.join(" ") || "none"})`, hint: `add ${ch} to {owner}channels` });
    }
  }
  return problems;
}
