import { applicationsProjection } from './applications.js';
import { leadsProjection } from './leads.js';
import type { Projection } from './projection.js';
import { invoicesProjection } from './invoices.js';
import { documentsProjection } from './documents.js';
import { tasksProjection } from './tasks.js';
import { webhookEndpointsProjection } from './webhook-endpoints.js';

/** Every inline read model, in the order they are applied. */
export const projections: Projection[] = [
  leadsProjection,
  applicationsProjection,
  webhookEndpointsProjection,
  tasksProjection,
  invoicesProjection,
  documentsProjection,
];
