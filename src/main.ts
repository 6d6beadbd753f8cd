import { pino, type Logger } from 'pino';
import { createServices } from './bootstrap.js';
import { loadConfig, type Config } from './config.js';
import { buildApp, loggerOptions } from './http/app.js';
import type { AppServices } from './bootstrap.js';
import type { TypedApp } from './http/typed-app.js';
import { openDatabase } from './storage/database.js';
import { startWorkers } from './subscribers/index.js';
import { compileEverySchema } from './http/schema-compilation.js';

export interface RunningService {
  app: TypedApp;
  services: AppServices;
  log: Logger;
  url: string;
  stop(reason: string): Promise<void>;
}

/** Connections of the pool for the API's requests, and for the workers when they run in the process. */
const API_CONNECTIONS = 20;
const WORKER_CONNECTIONS = 8;

/** Opens the database, builds the app, starts the workers and listens; `beforeListen` runs once the database is ready. */
export async function startService(
  config: Config,
  beforeListen?: (services: AppServices, log: Logger) => Promise<void>,
): Promise<RunningService> {
  // Logs go to stderr: stdout carries only what a command prints, so `visa-crm --json demo` is one JSON document.
  const log = pino(loggerOptions(config.logLevel) as pino.LoggerOptions, pino.destination(2));
  const db = await openDatabase(config, {
    poolSize: API_CONNECTIONS + (config.runWorkers ? WORKER_CONNECTIONS : 0),
    log: (message) => log.debug({ component: 'postgres' }, message),
  });
  log.info({ database: db.kind === 'external' ? 'DATABASE_URL' : `embedded in ${config.dataDir}` }, 'database ready');
  const services = await createServices(config, db);
  let ready = false;
  let workers: { stop(): Promise<void> } = { stop: async () => undefined };
  const release = async () => {
    await workers.stop();
    await services.rateLimits.close();
    await services.keys.close();
    await db.close();
  };
  const app = await buildApp(services, {
    isReady: () => ready,
    logger: loggerOptions(config.logLevel, pino.destination(2)),
  });
  let url: string;
  try {
    await services.keys.listen(services.direct.url);
    // Every route's validators and serializers, compiled before the first request (src/http/schema-compilation.ts).
    await compileEverySchema(app);
    if (beforeListen) await beforeListen(services, log);
    if (config.runWorkers) workers = await startWorkers(services, log);
    url = await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    // A start that fails (a port in use, say) lets go of what it opened, so the process ends with its sentence.
    await app.close();
    await release();
    throw error;
  }
  ready = true;

  let stopping: Promise<void> | undefined;
  const stop = (reason: string) =>
    (stopping ??= (async () => {
      ready = false;
      log.info({ reason }, 'shutting down: finishing requests in flight');
      const force = setTimeout(() => {
        log.error('shutdown took longer than 30 s; exiting');
        process.exit(1);
      }, 30_000);
      force.unref();
      await app.close();
      await release();
      log.info('stopped');
    })());
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
  return { app, services, log, url, stop };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  startService(loadConfig()).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
