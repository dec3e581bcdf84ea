import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import type { PropError } from "../../config/schema.ts";
import { ConfigurationError } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import { EventInterceptor, type Interceptor } from "../../core/interceptor.ts";
import type { Logger } from "../../core/logger.ts";
import { DatePattern } from "../../java/date-pattern.ts";
import { compileJavaRegex } from "../../java/regex.ts";

const decoder = new TextDecoder();

/** Turns one matched group into a header value (Flume's RegexExtractorInterceptorSerializer). */
export interface GroupSerializer {
  serialize(value: string): string;
}

const PASS_THROUGH_TYPES = ["DEFAULT", "org.apache.flume.interceptor.RegexExtractorInterceptorPassThroughSerializer", "passthrough"];
const MILLIS_TYPES = ["org.apache.flume.interceptor.RegexExtractorInterceptorMillisSerializer", "millis"];

export const passThrough: GroupSerializer = { serialize: (v) => v };

/** Parses the group with a date pattern into epoch milliseconds. */
export class MillisSerializer implements GroupSerializer {
  private readonly format: DatePattern;
  constructor(pattern: string) {
    // Joda-Time (which Flume's serializer uses) takes the year 2000 when the pattern has none.
    this.format = new DatePattern(pattern, { defaultYear: 2000 });
  }
  serialize(value: string): string {
    const ms = this.format.parse(value);
    if (ms === undefined) throw new Error(`"${value}" does not match the date pattern "${this.format.pattern}"`);
    return String(ms);
  }
}

interface Named {
  header: string;
  serializer: GroupSerializer;
}

/**
 * Finds the first match of a regex in the body and writes each group to a header, through the
 * serializer configured for that group (Flume's RegexExtractorInterceptor).
 */
export class RegexExtractorInterceptor extends EventInterceptor {
  constructor(
    private readonly regex: RegExp,
    private readonly serializers: readonly Named[],
    private readonly logger?: Logger,
  ) {
    super();
  }

  intercept(event: Event): Event {
    const m = this.regex.exec(decoder.decode(event.body));
    if (!m) return event;
    const n = Math.min(m.length - 1, this.serializers.length);
    for (let g = 1; g <= n; g++) {
      const value = m[g];
      if (value === undefined) continue;
      const s = this.serializers[g - 1];
      try {
        event.headers[s.header] = s.serializer.serialize(value);
      } catch (err) {
        // Flume lets the exception escape and loses the batch; we keep the event without this header.
        this.logger?.warn(`regex_extractor: header ${s.header} not set: ${(err as Error).message}`);
      }
    }
    return event;
  }
}

const SERIALIZER_FIELDS = {
  name: { type: "string", required: true, doc: "The header the group is written to" },
  type: { type: "enum", values: [...PASS_THROUGH_TYPES, ...MILLIS_TYPES], caseSensitive: true, default: "DEFAULT", doc: "DEFAULT (pass-through) or a serializer class" },
  pattern: { type: "string", doc: "The Joda date pattern of the millis serializer (e.g. yyyy-MM-dd HH:mm)" },
} as const;

type SerializerSettings = Readonly<Record<string, { readonly name: string; readonly type: string; readonly pattern: string | undefined }>>;

/** The listed serializers that cannot be built, at their keys: none listed, no name, millis without pattern. */
// ids defaults for a check run without the required list (the validator skips that case; tests do not).
function serializerProblems(ids: readonly string[] = [], settings: SerializerSettings): PropError[] {
  if (ids.length === 0) return [{ key: "serializers", message: "must name at least one serializer (e.g. serializers = s1 s2)" }];
  const problems: PropError[] = [];
  for (const id of ids) {
    const s = settings[id];
    if (s === undefined) problems.push({ key: `serializers.${id}.name`, message: `is required: the header group ${ids.indexOf(id) + 1} is written to` });
    else if (MILLIS_TYPES.includes(s.type) && !s.pattern) problems.push({ key: `serializers.${id}.pattern`, message: "is required for the millis serializer (a Joda date pattern such as yyyy-MM-dd HH:mm)" });
  }
  return problems;
}

function buildSerializers(ids: readonly string[], settings: SerializerSettings): Named[] {
  const [problem] = serializerProblems(ids, settings);
  if (problem) throw new ConfigurationError(problem.key, problem.message);
  return ids.map((id) => {
    const { name, type, pattern } = settings[id];
    return { header: name, serializer: MILLIS_TYPES.includes(type) && pattern ? new MillisSerializer(pattern) : passThrough };
  });
}

export const definition = defineComponent({
  ...builtIn.regexExtractorInterceptor,
  doc: "Extracts regex groups from the body into headers, each group through a serializer (pass-through or date-to-millis).",
  props: {
    regex: { type: "string", required: true, doc: "Regular expression with groups, searched in the body." },
    serializers: { type: "list", required: true, doc: "Space-separated serializer ids, one per group in order." },
  },
  groups: { serializerSettings: { prefix: "serializers.", doc: "serializers.<id>.<setting>: one record per serializer id", fields: SERIALIZER_FIELDS } },
  create(config, ctx): Interceptor {
    return new RegexExtractorInterceptor(compileJavaRegex(config.regex, "regex"), buildSerializers(config.serializers, config.serializerSettings), ctx.logger);
  },
  validate(config) {
    const errors = serializerProblems(config.serializers, config.serializerSettings);
    try {
      compileJavaRegex(config.regex, "regex");
    } catch (err) {
      errors.push({ key: "regex", message: err instanceof ConfigurationError ? err.detail : (err as Error).message });
    }
    return errors;
  },
});
