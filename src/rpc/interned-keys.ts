/**
 * Header names repeat from event to event, so recently seen ones are recognised by their bytes
 * and the same string instance is returned: property insertion with a known key is far cheaper
 * for the engine than with a fresh string. Shared by the Avro and Thrift decoders.
 */
const KEY_CACHE_SIZE = 32;
const MAX_KEY_CACHE_LEN = 64;
const keyCache: { bytes: Uint8Array; text: string }[] = [];

type Utf8Sliceable = Buffer & { utf8Slice(start: number, end: number): string };

/** The UTF-8 text of buf[start, start + len), interned when short. */
export function internedUtf8(buf: Buffer, start: number, len: number): string {
  if (len <= MAX_KEY_CACHE_LEN) {
    for (let k = 0; k < keyCache.length; k++) {
      const entry = keyCache[k];
      const bytes = entry.bytes;
      if (bytes.length !== len) continue;
      let i = 0;
      while (i < len && bytes[i] === buf[start + i]) i++;
      if (i === len) return entry.text;
    }
  }
  const text = (buf as Utf8Sliceable).utf8Slice(start, start + len);
  if (len <= MAX_KEY_CACHE_LEN) {
    if (keyCache.length >= KEY_CACHE_SIZE) keyCache.shift();
    keyCache.push({ bytes: Uint8Array.from(buf.subarray(start, start + len)), text });
  }
  return text;
}
