import type { Workspace } from '../../workspaces/workspace.js';
import { answer, errorResponses } from '../schemas/error.js';
import { MetaFields } from '../schemas/meta.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

/** The workspace's custom fields, visa types and countries, as the API shows them. */
export function metaFieldsOf(workspace: Workspace): MetaFields {
  const { custom_fields, visa_types, countries } = workspace.settings;
  return { fields: custom_fields, visa_types, countries };
}

export function registerMetaRoutes(app: TypedApp, _services: AppServices): void {
  app.get(
    '/v1/meta/fields',
    {
      schema: {
        tags: ['metadata'],
        operationId: 'getMetaFields',
        summary: "The workspace's custom fields, visa types and countries",
        description: 'Any secret key may read it, whatever its scopes (see docs/decisions.md, Widget and metadata).',
        response: {
          200: answer(MetaFields, "The workspace's custom fields, visa types and countries"),
          ...errorResponses(401, 402, 403, 429),
        },
      },
      // No scope: every integration needs the field keys, and the same data is public through the widget configuration.
      config: { auth: { keys: 'secret' } },
    },
    async (request) => metaFieldsOf(request.auth!.workspace),
  );
}
