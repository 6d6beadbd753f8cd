import { createServices } from '../bootstrap.js';
import { loadConfig } from '../config.js';
import type { AppServices } from '../bootstrap.js';
import { openDatabase } from '../storage/database.js';
import { findWorkspace } from '../workspaces/repository.js';
import type { Workspace } from '../workspaces/workspace.js';
import { CliError } from './output.js';

/**
 * Opens the database for one CLI command: DATABASE_URL, or the embedded server of a service already running on the
 * data folder, or an embedded server started for the command. Closes it afterwards.
 */
export async function withServices<T>(work: (services: AppServices) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const db = await openDatabase(config, { joinRunningInstance: true, poolSize: 4 });
  try {
    const services = await createServices(config, db);
    try {
      return await work(services);
    } finally {
      await services.rateLimits.close();
      await services.keys.close();
    }
  } finally {
    await db.close();
  }
}

export async function requireWorkspace(services: AppServices, idOrSlug: string): Promise<Workspace> {
  const workspace = await findWorkspace(services.pool, idOrSlug);
  if (!workspace) throw new CliError(`No workspace with the id or slug ${idOrSlug}`);
  return workspace;
}
