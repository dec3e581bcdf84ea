import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import type { Event } from "../../core/event.ts";
import { EventInterceptor, type Interceptor } from "../../core/interceptor.ts";
import { compileJavaRegex } from "../../java/regex.ts";

const decoder = new TextDecoder();

/**
 * Keeps (or, with excludeEvents, drops) events whose body contains a match of the regex
 * (Flume's RegexFilteringInterceptor; Java's find(), not a whole-body match).
 */
export class RegexFilteringInterceptor extends EventInterceptor {
  constructor(
    private readonly regex: RegExp,
    private readonly excludeEvents: boolean,
  ) {
    super();
  }

  intercept(event: Event): Event | null {
    const found = this.regex.test(decoder.decode(event.body));
    return found !== this.excludeEvents ? event : null;
  }
}

export const definition = defineComponent({
  ...builtIn.regexFilterInterceptor,
  doc: "Keeps or drops events by whether their body (as text) contains a match of a regex.",
  props: {
    regex: { type: "string", default: ".*", doc: "Regular expression searched in the body." },
    excludeEvents: { type: "boolean", default: false, doc: "Drop matching events instead of keeping only them." },
  },
  create(config): Interceptor {
    return new RegexFilteringInterceptor(compileJavaRegex(config.regex, "regex"), config.excludeEvents);
  },
  validate(config) {
    try {
      compileJavaRegex(config.regex, "regex");
      return [];
    } catch (err) {
      return [{ key: "regex", message: (err as Error).message }];
    }
  },
});
