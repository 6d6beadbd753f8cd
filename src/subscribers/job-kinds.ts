import type { AppServices } from '../bootstrap.js';
import { leadBulkKinds } from '../commands/bulk/lead-actions.js';
import { leadImportKinds } from '../commands/leads/import-rows.js';
import { jobKinds, type JobKinds } from '../jobs/kinds.js';

/** Every kind of job the workers run: add a kind here (its handler beside its commands) to have it run. */
export function jobKindsOf(services: Pick<AppServices, 'pool' | 'store' | 'now'>): JobKinds {
  return jobKinds([...leadBulkKinds(services), ...leadImportKinds(services)]);
}
