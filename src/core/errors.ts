/** Base of every error Flume TS raises on purpose. */
export class FlumeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Whether trying again may help. An error says it cannot by carrying `retryable = false` (a
 * channel whose directories hold another program's format): the supervisor then gives up on
 * the component at once instead of retrying it forever.
 */
export function isRetryable(err: unknown): boolean {
  return !(typeof err === "object" && err !== null && (err as { retryable?: unknown }).retryable === false);
}

/** A channel refused an operation (transaction capacity, closed channel, storage failure). */
export class ChannelException extends FlumeError {}

/** The channel had no room for a commit within keep-alive. */
export class ChannelFullException extends ChannelException {}

/** A sink could not deliver its batch; the batch was rolled back and will be retried. */
export class EventDeliveryException extends FlumeError {}

/** A transaction method was called in a state that does not allow it. */
export class TransactionStateError extends FlumeError {}

/** A configuration value is missing or wrong; names the key so the user can fix it. */
export class ConfigurationError extends FlumeError {
  constructor(
    readonly key: string,
    /** What is wrong with the key, without the key and component names. */
    readonly detail: string,
    readonly component?: string,
  ) {
    super(component ? `${component}: ${key}: ${detail}` : `${key}: ${detail}`);
  }
}

/**
 * The ConfigurationError that `build` throws, as a problem at its key (none when it builds).
 * Another error is a problem at `otherKey` when one is given, else it propagates. For a
 * component's validate.
 */
export function configurationProblems(build: () => unknown, otherKey?: string): { key: string; message: string }[] {
  try {
    build();
    return [];
  } catch (err) {
    if (err instanceof ConfigurationError) return [{ key: err.key, message: err.detail }];
    if (otherKey === undefined) throw err;
    return [{ key: otherKey, message: err instanceof Error ? err.message : String(err) }];
  }
}

/** A command line (or simulation input) the user must correct; commands exit 2 on it. */
export class UsageError extends FlumeError {}
