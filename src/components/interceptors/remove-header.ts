import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import type { Event } from "../../core/event.ts";
import { EventInterceptor, type Interceptor } from "../../core/interceptor.ts";
import { compileJavaFullMatch, compileJavaRegex } from "../../java/regex.ts";

/** Removes headers by name, by list, or by a regex on the name (Flume's RemoveHeaderInterceptor). */
export class RemoveHeaderInterceptor extends EventInterceptor {
  constructor(
    private readonly withName: string | undefined,
    private readonly fromList: ReadonlySet<string> | undefined,
    private readonly matching: RegExp | undefined,
  ) {
    super();
  }

  intercept(event: Event): Event {
    const headers = event.headers;
    if (this.withName !== undefined) delete headers[this.withName];
    if (this.fromList || this.matching) {
      for (const name of Object.keys(headers)) {
        if (this.fromList?.has(name) || (this.matching && this.matching.test(name))) delete headers[name];
      }
    }
    return event;
  }
}

export const definition = defineComponent({
  ...builtIn.removeHeaderInterceptor,
  doc: "Removes headers chosen by exact name, by a separated list of names, or by a regex on the name.",
  props: {
    withName: { type: "string", doc: "Name of one header to remove." },
    fromList: { type: "string", doc: "List of header names to remove, split by fromListSeparator." },
    fromListSeparator: { type: "string", default: "\\s*,\\s*", doc: "Regex separating the names in fromList." },
    matching: { type: "string", doc: "Remove every header whose whole name matches this regex." },
  },
  create(config): Interceptor {
    const list = config.fromList;
    const separator = compileJavaRegex(config.fromListSeparator, "fromListSeparator");
    const matching = config.matching;
    return new RemoveHeaderInterceptor(
      config.withName,
      list === undefined ? undefined : new Set(list.split(separator)),
      matching === undefined ? undefined : compileJavaFullMatch(matching, "matching"),
    );
  },
  validate(config) {
    const errors: { key: string; message: string }[] = [];
    for (const key of ["fromListSeparator", "matching"] as const) {
      const v = config[key];
      if (v === undefined) continue;
      try {
        compileJavaRegex(v, key);
      } catch (err) {
        errors.push({ key, message: (err as Error).message });
      }
    }
    return errors;
  },
});
