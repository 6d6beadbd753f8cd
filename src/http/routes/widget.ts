import { answer, errorResponses } from '../schemas/error.js';
import { WidgetConfig, WidgetConfigQuery } from '../schemas/widget.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';
import { metaFieldsOf } from './meta.js';

export function registerWidgetRoutes(app: TypedApp, _services: AppServices): void {
  app.get(
    '/v1/widget/config',
    {
      schema: {
        tags: ['widget'],
        operationId: 'getWidgetConfig',
        summary: 'Configuration of the embeddable lead form',
        description:
          "Takes a public key in the `key` query parameter (no Authorization header) and needs an `Origin` among the key's allowed origins; " +
          'the answer then carries `Access-Control-Allow-Origin` for that origin.',
        security: [],
        querystring: WidgetConfigQuery,
        response: {
          200: answer(
            WidgetConfig,
            'The form configuration, with `Access-Control-Allow-Origin` for the request origin',
          ),
          ...errorResponses(400, 401, 402, 403, 429),
        },
      },
      config: { auth: { keys: 'public', scope: 'leads:create', keyFrom: 'query', rate: 'widget' } },
    },
    async (request, reply) => {
      const { workspace, sandbox } = request.auth!;
      const { widget } = workspace.settings;
      // Browsers may keep it for a minute, so a visitor moving between pages does not refetch it; the key is in the URL.
      reply.header('cache-control', 'private, max-age=60');
      return {
        tenant: { name: workspace.name, brand_color: widget.brand_color, logo_url: widget.logo_url },
        ...metaFieldsOf(workspace),
        captcha: { provider: widget.captcha.provider, site_key: widget.captcha.site_key },
        consent_text: widget.consent_text,
        consent_text_version: widget.consent_text_version,
        test_mode: sandbox,
      };
    },
  );
}
