/**
 * The one part of `mnemonist` the Kafka client uses (its LRU cache), which tsconfig.json's
 * `paths` give it in place of the package's index: that index loads every structure of the
 * package, about 7 MB of RSS under Bun for one class. Under Deno the whole package loads.
 * Required, not imported: the package exports its single modules to require() only.
 */
import type LRU from "mnemonist/lru-cache.js";

export const LRUCache: typeof LRU = require("mnemonist/lru-cache.js");
