/**
 * Stands in for `ajv` inside the Kafka client (tsconfig.json's `paths` map the client's imports
 * of it here; Bun's runtime and bundler follow them). The client checks its own options with
 * JSON Schema only in its `strict` mode, which this agent never turns on (src/kafka/settings.ts
 * checks Flume's properties and builds the options), yet it compiled its ~50 schemas as it
 * loaded: measured under Bun, 35-40 MB of peak RSS and ~0.4 s of CPU at the start of every agent
 * with a Kafka component. Its schema registries (which build validators of their own) are not
 * used. Under Deno, which does not read `paths`, the real ajv loads; nothing else differs.
 */
type Validate = ((data: unknown) => boolean) & { errors: null };

function accept(): Validate {
  return Object.assign(() => true, { errors: null });
}

export class Ajv {
  constructor(_options?: unknown) {}
  addKeyword(_definition: unknown): this {
    return this;
  }
  addFormat(_name: string, _format: unknown): this {
    return this;
  }
  addMetaSchema(_schema: unknown): this {
    return this;
  }
  compile(_schema: unknown): Validate {
    return accept();
  }
  errorsText(_errors?: unknown): string {
    return "";
  }
}

export class Ajv2020 extends Ajv {}

export default Ajv;
