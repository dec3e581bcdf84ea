/**
 * Ids of traced events: the number a simulated event carries, and a content hash for the
 * events of a live agent, which carry none.
 */
import type { Event } from "../core/event.ts";

/** The header simulated events carry their number in. */
export const SIM_ID_HEADER = "sim.id";
const decoder = new TextDecoder();

/** The number of a simulated event: its sim.id header, or a body "event N" if an interceptor dropped the header. */
export function simIdOf(event: Event): number {
  const h = event.headers[SIM_ID_HEADER];
  if (h !== undefined) return Number(h);
  // "event 17" as simulated clients write it, wherever the body has it (syslog bodies may keep a timestamp first).
  const text = decoder.decode(event.body.subarray(0, 96));
  const m = /\bevent (\d+)/.exec(text) ?? /(\d+)/.exec(text);
  return m ? Number(m[1]) : -1;
}

/**
 * An id for an event of a live agent, which carries no number: a 64-bit FNV-1a hash of its
 * headers and body (the same after a file channel's round trip). Identical events share an id;
 * replay compares takes in order, so that only weakens the check for those events.
 */
export function contentIdOf(event: Event): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x050c5d1f;
  const mix = (b: number) => {
    h1 = Math.imul(h1 ^ b, 0x01000193);
    h2 = Math.imul(h2 ^ b, 0x01000193) ^ (h1 >>> 15);
  };
  const keys = Object.keys(event.headers).sort();
  for (const k of keys) {
    for (let i = 0; i < k.length; i++) mix(k.charCodeAt(i) & 0xff);
    mix(0x3d);
    const v = event.headers[k];
    for (let i = 0; i < v.length; i++) mix(v.charCodeAt(i) & 0xff);
    mix(0x0a);
  }
  const body = event.body;
  for (let i = 0; i < body.length; i++) mix(body[i]);
  return (h1 >>> 0).toString(16).padStart(8, "0") + (h2 >>> 0).toString(16).padStart(8, "0");
}
