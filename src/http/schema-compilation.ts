import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance } from 'fastify';

/**
 * Route schemas compiled when first needed. fastify compiles every route's validators (ajv) and response serializers
 * (fast-json-stringify) as the app gets ready: 1.1 s of CPU per app here (measured 2026-11-27), most of a test file's
 * start, where a test uses a few routes. The service compiles every one before it listens (`compileAll`, called by
 * src/main.ts), so a schema that cannot compile still stops the start and no request waits on a compilation.
 */
export class SchemaCompilations {
  private readonly pending = new Set<() => unknown>();

  /** A getter of what `compile` makes, compiled at the getter's first call or at `compileAll`, whichever is first. */
  onFirstUse<T>(compile: () => T): () => T {
    let compiled: { value: T } | undefined;
    const get = (): T => {
      if (!compiled) {
        compiled = { value: compile() };
        this.pending.delete(get);
      }
      return compiled.value;
    };
    this.pending.add(get);
    return get;
  }

  /** Compiles everything still pending; answers how many there were. */
  compileAll(): number {
    const pending = [...this.pending];
    for (const get of pending) get();
    return pending.length;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    schemaCompilations: SchemaCompilations;
  }
}

const fastJsonStringify = SerializerSelector();

/** fastify's own response serializers (fast-json-stringify with the server's options), each compiled on first use. */
export function serializersOnFirstUse(compilations: SchemaCompilations) {
  return (...factoryArgs: Parameters<typeof fastJsonStringify>) => {
    const compilerFor = fastJsonStringify(...factoryArgs);
    return (route: Parameters<typeof compilerFor>[0]) => {
      const serializer = compilations.onFirstUse(() => compilerFor(route));
      return (data: unknown) => serializer()(data);
    };
  };
}

/** Compiles every schema of `app`'s routes now (they are registered once the app is ready). */
export async function compileEverySchema(app: FastifyInstance): Promise<number> {
  await app.ready();
  return app.schemaCompilations.compileAll();
}
