/** The version printed by `flume version`; kept in step with package.json by a test. */
export const VERSION = "0.1.0";
/** The Apache Flume release whose behaviour, names and wire format we follow. */
export const FLUME_COMPAT = "1.11.0";
