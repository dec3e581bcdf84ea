import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { type DeserializerFactory, isSupportedOutputCharset, LineCodec, LineDeserializer } from "../sources/spooldir/deserializers.ts";

export const definition = defineComponent({
  ...builtIn.lineDeserializer,
  doc: "One event per line of the file (a spooldir source's default).",
  props: {
    maxLineLength: { type: "int", default: 2048, min: 1, doc: "Longest event in bytes; longer lines continue in the next event" },
    outputCharset: { type: "string", default: "UTF-8", doc: "Charset of the event bodies (UTF-8, ISO-8859-1, US-ASCII)" },
  },
  create: (config): DeserializerFactory => ({
    open: (f) =>
      new LineDeserializer(f.handle, f.pos, f.size, config.maxLineLength, new LineCodec(f.inputCharset, config.outputCharset, f.decodeErrorPolicy), (length) =>
        f.warn(`Line length exceeds max (${config.maxLineLength}), splitting line of ${length}+ bytes in ${f.path}`),
      ),
  }),
  validate: (config) => (isSupportedOutputCharset(config.outputCharset) ? [] : [{ key: "outputCharset", message: `unsupported charset "${config.outputCharset}" (UTF-8, ISO-8859-1 or US-ASCII)` }]),
});
