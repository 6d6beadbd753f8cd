import { Type } from 'typebox';
import { findApplicationStatus } from '../../projections/applications.js';
import { notFound } from '../errors.js';
import { ApplicationStatus } from '../schemas/application.js';
import { errorResponses } from '../schemas/error.js';
import type { AppServices, TypedApp } from '../services.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function registerApplicationRoutes(app: TypedApp, services: AppServices): void {
  app.get(
    '/v1/applications/:id/status',
    {
      schema: {
        tags: ['applications'],
        summary: 'Read the stage and progress of an application',
        // Any text is accepted here so that an id that is not a uuid gets 404 not_found, like an unknown one.
        params: Type.Object({ id: Type.String({ description: 'uuid of the application' }) }),
        response: { 200: ApplicationStatus, ...errorResponses(401, 402, 403, 404, 429) },
      },
      config: { auth: { keys: 'secret', scope: 'applications:read' } },
    },
    async (request) => {
      const auth = request.auth!;
      const status = UUID.test(request.params.id) ? await findApplicationStatus(services.pool, auth.workspace.id, auth.sandbox, request.params.id) : undefined;
      if (!status) throw notFound('application');
      return status;
    },
  );
}
