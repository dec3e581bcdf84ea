/** The core tests' helpers live in test/support/core.ts; memory-channel.model.test.ts imports them from here. */
export * from "../support/core.ts";
