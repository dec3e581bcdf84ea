/**
 * Flume's preserveExisting, read by every interceptor that sets one header through
 * HeaderInterceptor (host, static, timestamp, uuid); only its default differs by type.
 */
export function preserveExistingProp(keep: boolean) {
  return { type: "boolean", default: keep, doc: "Keep the header when it is already set." } as const;
}
