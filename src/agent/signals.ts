/**
 * The process signals of a running agent service, as `flume run` handles them: SIGINT or SIGTERM
 * stops it gracefully (a second one cuts the drain short); SIGHUP reloads the configuration at
 * once, as Vector and Fluent Bit do (Flume's JVM would exit). Installed before the start, so a
 * SIGTERM during a long start (a file channel replaying its log) stops the agent once started
 * instead of killing the process.
 */
import type { Logger } from "../core/logger.ts";
import type { AgentService } from "./service.ts";

/** Installs the handlers; the returned function removes them. */
export function installSignalHandlers(service: AgentService, log: Logger): () => void {
  const stopOn = (signal: "SIGINT" | "SIGTERM") => () => {
    if (service.isStopping) {
      // A second one: what the channels still hold is reported as the stop closes them.
      log.warn(`${signal} received again: stopping at once, without waiting for the sinks to drain the channels`);
      void service.stopNow();
      return;
    }
    // Whoever pressed Ctrl-C is at a terminal: tell them the key, not a signal name.
    const again = signal === "SIGINT" ? "press Ctrl-C again (or send SIGTERM)" : "send SIGTERM again";
    service.stopHint = `${again} to stop at once`;
    void service.stop(`${signal} received`);
  };
  const onSigint = stopOn("SIGINT");
  const onSigterm = stopOn("SIGTERM");
  const onSighup = () => {
    if (service.isStopping) return;
    log.info("SIGHUP received: reloading the configuration");
    void service.reload();
  };
  // Until a signal says otherwise, a stop the service makes itself (--fail-fast) offers SIGTERM.
  service.stopHint ??= "send SIGTERM again to stop at once";
  process.on("SIGINT", onSigint);
  process.on("SIGTERM", onSigterm);
  process.on("SIGHUP", onSighup);
  return () => {
    process.off("SIGINT", onSigint);
    process.off("SIGTERM", onSigterm);
    process.off("SIGHUP", onSighup);
  };
}
