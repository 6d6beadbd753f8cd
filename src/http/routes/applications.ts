import { Type } from 'typebox';
import { findApplicationStatus } from '../../projections/applications.js';
import { notFound } from '../errors.js';
import { ApplicationStatus } from '../../schemas/application.js';
import { answer, errorResponses } from '../schemas/error.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

export function registerApplicationRoutes(app: TypedApp, services: AppServices): void {
  app.get(
    '/v1/applications/:id/status',
    {
      schema: {
        tags: ['applications'],
        operationId: 'getApplicationStatus',
        summary: 'Read the stage and progress of an application',
        params: Type.Object(
          { id: Type.String({ format: 'uuid', description: 'uuid of the application' }) },
          { additionalProperties: false },
        ),
        response: {
          200: answer(ApplicationStatus, 'The stage and progress of the application'),
          ...errorResponses(401, 402, 403, 404, 429),
        },
      },
      config: { auth: { keys: 'secret', scope: 'applications:read' } },
    },
    async (request) => {
      const auth = request.auth!;
      const status = await findApplicationStatus(services.pool, auth.workspace.id, auth.sandbox, request.params.id);
      if (!status) throw notFound('application');
      return status;
    },
  );
}
