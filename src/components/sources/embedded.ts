import type { Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { BaseSource } from "./base.ts";

/** The source of an EmbeddedAgent: the application hands it events directly. */
export class EmbeddedSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";

  start(): void {
    this.markStarted();
  }

  stop(): void {
    this.markStopped();
  }

  async put(event: Event): Promise<void> {
    await this.putAll([event]);
  }

  /** One transaction per channel; a refusal (ChannelException) is thrown for the application to retry. */
  async putAll(events: Event[]): Promise<void> {
    if (this.state !== "START") throw new Error(`embedded source ${this.name} is not started`);
    const refused = await this.emitter.offer(events);
    if (refused) throw refused;
  }
}

export const definition = defineComponent({
  ...builtIn.embeddedSource,
  doc: "The source of an EmbeddedAgent; events come from the application's put/putAll calls.",
  props: {},
  create(_config, ctx) {
    return new EmbeddedSource(ctx);
  },
});
