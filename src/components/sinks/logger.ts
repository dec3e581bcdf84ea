import { readHeaders, type Event } from "../../core/event.ts";
import { javaMapString } from "../serializers/header-and-text.ts";
import type { TakeLoop } from "../../pipeline/take-loop.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSink } from "./base.ts";

const HEX = "0123456789ABCDEF";

/**
 * Renders an event as Flume's EventHelper.dumpEvent does: Java's map syntax for headers and
 * a commons-io style hex dump (16 bytes a row, then the printable characters) of at most
 * maxBytes of the body, without the leading offset of the first row.
 */
export function dumpEvent(event: Event, maxBytes: number): string {
  const headers = javaMapString(readHeaders(event));
  const data = event.body.subarray(0, Math.max(0, Math.min(event.body.length, maxBytes)));
  const rows: string[] = [];
  for (let row = 0; row < data.length; row += 16) {
    let line = row === 0 ? "" : row.toString(16).toUpperCase().padStart(8, "0");
    line += " ";
    for (let k = 0; k < 16; k++) {
      const i = row + k;
      line += i < data.length ? HEX[data[i] >> 4] + HEX[data[i] & 15] : "  ";
      line += " ";
    }
    for (let i = row; i < Math.min(row + 16, data.length); i++) line += data[i] >= 32 && data[i] < 127 ? String.fromCharCode(data[i]) : ".";
    rows.push(line);
  }
  return `{ headers:${headers} body:${rows.join("\n")} }`;
}

/** Flume's logger sink: logs each event at INFO, one event per transaction. */
export class LoggerSink extends BaseSink {
  protected readonly takeLoop: TakeLoop;

  // The events are data: written through output, which never folds equal lines as messages are.
  constructor(ctx: ComponentContext, maxBytesToLog: number, write: (line: string) => void = (line) => (ctx.logger.output ? ctx.logger.output(line) : ctx.logger.info(line))) {
    super(ctx);
    this.takeLoop = this.newTakeLoop({
      batchSize: 1,
      deliver: (events) => write(`Event: ${dumpEvent(events[0], maxBytesToLog)}`),
    });
  }
}

export const definition = defineComponent({
  ...builtIn.loggerSink,
  doc: "Logs every event at INFO level; for testing and debugging.",
  props: {maxBytesToLog: { type: "int", default: 16, min: 0, doc: "Maximum number of body bytes to log" }},
  create(config, ctx) {
    return new LoggerSink(ctx, config.maxBytesToLog);
  },
});
