/**
 * The bytes of `parts` in one array. A single part is returned as it is (no copy); callers that
 * keep the total pass it as `length` so it is not summed again.
 */
export function concatBytes(parts: readonly Uint8Array[], length?: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  let total = length;
  if (total === undefined) {
    total = 0;
    for (const p of parts) total += p.length;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
