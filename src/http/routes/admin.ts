import { adminAuthentication } from '../admin-auth.js';
import { ADMIN_PREFIX, registerAdminDocument } from '../openapi.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';
import { registerAdminApplicationRoutes } from './admin-applications.js';
import { registerAdminErasureRoutes } from './admin-erasure.js';
import { registerAdminDocumentRoutes } from './admin-documents.js';
import { registerAdminExportRoutes } from './admin-export.js';
import { registerAdminHistoryRoutes } from './admin-history.js';
import { registerAdminInvoiceRoutes } from './admin-invoices.js';
import { registerAdminTaskRoutes } from './admin-tasks.js';
import { registerAdminWebhookRoutes } from './admin-webhooks.js';
import { registerOperatorRoutes } from './admin-operator.js';

/**
 * The admin interface (the workspace UI's back end) as one encapsulated plugin: its OpenAPI document at
 * `/admin/openapi.json` and `/admin/docs`, and its operations under `/admin/v1`, where one `onRequest` hook
 * authenticates every request before anything else of it is read. Off unless ADMIN_TOKEN is set: then nothing under
 * `/admin` exists and every path there answers the app's 404 `not_found`.
 */
export async function registerAdminInterface(app: TypedApp, services: AppServices): Promise<void> {
  const adminToken = services.config.adminToken;
  if (!adminToken) return;
  await app.register(
    async (admin: TypedApp) => {
      await registerAdminDocument(admin, services.config);
      registerOperatorRoutes(admin, services, adminToken);
      await admin.register(
        async (v1: TypedApp) => {
          v1.decorateRequest('staff', null);
          v1.addHook('onRequest', adminAuthentication(services));
          registerAdminApplicationRoutes(v1, services);
          registerAdminWebhookRoutes(v1, services);
          registerAdminTaskRoutes(v1, services);
          registerAdminInvoiceRoutes(v1, services);
          registerAdminDocumentRoutes(v1, services);
          registerAdminHistoryRoutes(v1, services);
          registerAdminErasureRoutes(v1, services);
          registerAdminExportRoutes(v1, services);
        },
        { prefix: '/v1' },
      );
    },
    { prefix: ADMIN_PREFIX },
  );
}
