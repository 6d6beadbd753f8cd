import swagger, { type SwaggerOptions, type SwaggerTransform } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, onRequestHookHandler, RouteOptions } from 'fastify';
import type { Config } from '../config.js';
import { withEveryAnswer } from './schemas/error.js';
import { eventDataComponents, eventWebhooks, referToEventComponents } from './schemas/event-data.js';
import { stateEdgeRules } from './stated-rules.js';

/**
 * The two OpenAPI documents, each generated from the schemas that validate its routes:
 * - the public API (`/openapi.json`, rendered at `/docs`): every `/v1` operation integrators call with API keys;
 * - the admin interface (`/admin/openapi.json`, rendered at `/admin/docs`): the workspace UI's staff operations,
 *   served only when the admin interface is on (ADMIN_TOKEN set). See docs/decisions.md, "The API documents".
 */

export const API_VERSION = '1.0.0';
/** Where the admin interface and its document live; its operations are under `${ADMIN_PREFIX}/v1`. */
export const ADMIN_PREFIX = '/admin';

// The service is not open source: its interface comes with no licence to reuse it. SPDX's form for a licence it does
// not list is `LicenseRef-<name>`.
const LICENSE = { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' };

const PUBLIC_DESCRIPTION = [
  'Lead capture, lead sync, application status and webhooks of a visa-consultancy CRM workspace.',
  '',
  'Authenticate with `Authorization: Bearer <API key>`: a secret key from servers, a public key (lead creation and',
  'the form configuration only) from the web origins it lists. Test-mode keys work on the sandbox.',
  'Every answer other than 2xx has the Error body; answers carry `Request-Id`, and answers given after the',
  "key's rate-limit buckets were taken carry `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`.",
].join('\n');

const PUBLIC_TAGS = [
  {
    name: 'leads',
    description:
      'Create leads from servers and from the embeddable form, list them in update order for sync, read and update them.',
  },
  { name: 'applications', description: 'The stage and progress of an application (a case opened from a lead).' },
  {
    name: 'webhooks',
    description:
      'Endpoints that receive signed webhook deliveries when leads and applications change (Growth and Enterprise plans); ' +
      'a test event on demand, and a replay that sends an endpoint the events of a time window (at most 30 days back) again.',
  },
  {
    name: 'events',
    description:
      'The webhook events of the last 30 days, exactly as deliveries carry them: what a receiver that missed a delivery fetches (scope events:read).',
  },
  { name: 'widget', description: 'The configuration the embeddable lead form reads with a public key.' },
  { name: 'metadata', description: "The workspace's custom fields, visa types and countries." },
];

const ADMIN_DESCRIPTION = [
  "The staff operations of the workspace UI's back end: converting leads and working on cases, tasks, invoices,",
  'payments and refunds, and the webhook delivery log, resend, resume, secret rotation and test events.',
  '',
  "Every operation takes a staff member's personal access token (`Authorization: Bearer vcrm_pat_…`, made in the",
  'console, never an API key): the member is recorded as the actor of every change, and their role must allow the',
  "operation (the permission table in docs/decisions.md). One operation is the platform operator's, not staff's:",
  'POST /admin/v1/workspaces takes the operator token (ADMIN_TOKEN) and opens nothing else.',
].join('\n');

const ADMIN_TAGS = [
  {
    name: 'workspaces',
    description:
      "The platform operator's one operation (ADMIN_TOKEN): create a workspace from its definition and invite its first owner.",
  },
  {
    name: 'leads',
    description:
      "Erase a lead's person on request: the data keys of the lead and its applications are deleted (crypto-shredding).",
  },
  {
    name: 'applications',
    description: 'Convert leads into applications and work on cases: stages, status, outcome and roadmap modules.',
  },
  {
    name: 'webhooks',
    description:
      'Webhook endpoints of both modes, their delivery log, resend, replay, resume, secret rotation and webhook.test.',
  },
  {
    name: 'invoices',
    description:
      'Invoices for leads and applications, payments against them and refunds of payments; amounts are integers in minor units.',
  },
  {
    name: 'tasks',
    description: 'Tasks for staff on leads and applications; a due time passing while open sends task.overdue once.',
  },
  {
    name: 'documents',
    description:
      'Documents for leads and applications: every file is scanned by ClamAV before it is accepted (document.uploaded); staff may reject one (document.rejected).',
  },
  {
    name: 'history',
    description:
      "For auditors: a lead's or an application's history, paged, and its state at any past instant, replayed from its events.",
  },
];

function servers(config: Config) {
  return [{ url: config.publicBaseUrl, description: 'This service (PUBLIC_BASE_URL)' }];
}

/** True for a route of the admin interface or its document, which stay out of the public document. */
export function isAdminRoute(url: string): boolean {
  return url === ADMIN_PREFIX || url.startsWith(`${ADMIN_PREFIX}/`);
}

const leaveOutAdminRoutes: SwaggerTransform = ({ schema, url }) =>
  isAdminRoute(url) ? { schema: { ...schema, hide: true }, url } : { schema, url };

function publicDocument(config: Config): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'visa-crm-api', version: API_VERSION, description: PUBLIC_DESCRIPTION, license: LICENSE },
      servers: servers(config),
      tags: PUBLIC_TAGS,
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'A secret or public API key (`key_live_…`, `key_test_…`, `key_live_pub_…`, `key_test_pub_…`)',
          },
        },
        // Plain JSON built from the TypeBox schemas, as `webhooks` below.
        schemas: eventDataComponents() as Record<string, never>,
      },
      security: [{ bearer: [] }],
      // Every webhook event kind, its body the kind's envelope with `data` a component.
      // Plain JSON built from the TypeBox schemas; swagger types it as OpenAPI path items.
      webhooks: eventWebhooks() as Record<string, never>,
    },
    transform: leaveOutAdminRoutes,
    // The operations name the event components rather than repeat them (the Events API's data typed by kind).
    transformObject: (document) => ('openapiObject' in document ? referToEventComponents(document.openapiObject) : {}),
  };
}

function adminDocument(config: Config): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'visa-crm-api admin interface',
        version: API_VERSION,
        description: ADMIN_DESCRIPTION,
        license: LICENSE,
      },
      servers: servers(config),
      tags: ADMIN_TAGS,
      components: {
        securitySchemes: {
          adminToken: {
            type: 'http',
            scheme: 'bearer',
            description: "A staff member's personal access token for this workspace, never an API key",
          },
          operatorToken: {
            type: 'http',
            scheme: 'bearer',
            description: "The platform operator's ADMIN_TOKEN: it opens POST /admin/v1/workspaces and nothing else",
          },
        },
      },
      security: [{ adminToken: [] }],
    },
  };
}

/**
 * The docs pages' policy: the console's (src/console/plugin.ts) with what Swagger UI needs, checked in Chromium
 * (test/http/docs-headers.test.ts): its own scripts and styles are files, but it sets `style` attributes as it renders,
 * and fetches the document it shows. Not framed, not sniffed.
 */
const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const docsHeaders: onRequestHookHandler = (_request, reply, done) => {
  reply.header('content-security-policy', DOCS_CSP);
  reply.header('x-frame-options', 'DENY');
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'same-origin');
  done();
};

/** `openapi.json` and the rendered `docs` under the scope's prefix, from the document registered in that scope. */
async function serveDocument(scope: FastifyInstance): Promise<void> {
  // In a scope of their own, so the headers cover Swagger UI's static files too, and nothing else of the service.
  await scope.register(async (docs) => {
    docs.addHook('onRequest', docsHeaders);
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      // Swagger UI would ask validator.swagger.io for a badge: no third party learns who reads the docs.
      uiConfig: { validatorUrl: null },
    });
  });
  scope.get('/openapi.json', { schema: { hide: true } }, async () => scope.swagger());
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Declares on a documented route every status it can answer beside its own (withEveryAnswer): what the route's
 * method, path and authentication expose it to. The response schemas also serialise those answers: the Error shape.
 */
function declareEveryAnswer(route: RouteOptions): void {
  const schema = route.schema as (RouteOptions['schema'] & { hide?: boolean }) | undefined;
  if (!schema || schema.hide) return;
  const methods = [route.method].flat();
  const auth = isAdminRoute(route.url) ? 'staff' : route.config?.auth ? 'api_key' : 'none';
  schema.response = withEveryAnswer((schema.response ?? {}) as Parameters<typeof withEveryAnswer>[0], {
    pathParameters: route.url.includes(':'),
    body: methods.some((method) => BODY_METHODS.has(method)),
    auth,
  });
}

/** The public document, collected from every route of the app but the admin interface's. */
export async function registerPublicDocument(app: FastifyInstance, config: Config): Promise<void> {
  // Before swagger's own onRoute hook, and for every route registered after (the admin scope's included).
  app.addHook('onRoute', declareEveryAnswer);
  app.addHook('onRoute', stateEdgeRules);
  await app.register(swagger, publicDocument(config));
  await serveDocument(app);
}

/**
 * The admin document, registered inside the admin interface's own scope: @fastify/swagger collects the routes of the
 * scope it is registered in, and its `swagger` decorator there shadows the app's, so the admin scope's docs page
 * renders this one.
 */
export async function registerAdminDocument(adminScope: FastifyInstance, config: Config): Promise<void> {
  await adminScope.register(swagger, adminDocument(config));
  await serveDocument(adminScope);
}
