import type { AppServices } from '../../bootstrap.js';
import { eraseLead } from '../../commands/leads/erase-lead.js';
import { staffContext } from '../../commands/run-command.js';
import { AdminLeadParams, ModeQuery } from '../../schemas/application.js';
import { LeadErasure } from '../../schemas/lead.js';
import { staffOf } from '../admin-auth.js';
import { adminErrorResponses } from '../schemas/admin.js';
import { answer } from '../schemas/error.js';
import type { TypedApp } from '../typed-app.js';

/** Under the admin interface's prefix (/admin/v1, src/http/routes/admin.ts). */
const BASE = '/workspaces/:workspace';

/** Erasing a person on request (crypto-shredding; docs/architecture.md, "Personal data and erasure"). */
export function registerAdminErasureRoutes(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/leads/:leadId/erase`,
    {
      schema: {
        tags: ['leads'],
        operationId: 'eraseLead',
        summary:
          "Erase a lead's person: their data keys are deleted, so no personal value of the lead or its applications can be read back; idempotent",
        params: AdminLeadParams,
        querystring: ModeQuery,
        response: { 200: answer(LeadErasure, 'What the erasure did'), ...adminErrorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { workspace, actor } = staffOf(request);
      const sandbox = request.query.sandbox ?? false;
      return eraseLead(services, {
        tenantId: workspace.id,
        sandbox,
        leadId: request.params.leadId,
        context: (now) => staffContext(workspace.id, sandbox, actor, now),
      });
    },
  );
}
