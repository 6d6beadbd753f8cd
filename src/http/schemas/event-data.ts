import { Type, type TSchema } from 'typebox';
import { canonicalJson } from '../../events/canonical-json.js';
import { EVENT_KINDS, type EventKind } from '../../shared/enums.js';
import { LeadSchema } from '../../schemas/lead.js';
import { ApplicationStatus, ModuleUpdatedData, StageChangedData } from '../../schemas/application.js';
import { Invoice, Payment, Refund } from './invoice.js';
import { Task } from './task.js';
import { Document } from './document.js';
import { WebhookEndpoint } from './webhook.js';
import { CURRENT_PAYLOAD_VERSION, SINCE_2026_11_29, V1_FIELDS } from '../../webhooks/versions/index.js';

/** lead.updated's data: the Lead after the change, and which of its fields changed. */
const UpdatedLead = Type.Object(
  {
    ...LeadSchema.properties,
    changed_fields: Type.Array(Type.String(), { description: 'the Lead fields this change set' }),
  },
  { additionalProperties: false },
);

interface KindDocumentation {
  /** The OpenAPI component `data` is (one per shape: kinds that carry the same shape share it). */
  component: string;
  schema: TSchema;
  summary: string;
}

/**
 * The `data` of every webhook event kind: keyed by the kind, so a kind added to EVENT_KINDS does not compile until
 * it is documented here. Each data shape is the API's own schema of its resource, named as an OpenAPI component.
 */
export const EVENT_DATA: { readonly [K in EventKind]: KindDocumentation } = {
  'lead.created': { component: 'Lead', schema: LeadSchema, summary: 'A lead was captured (not a duplicate)' },
  'lead.updated': {
    component: 'UpdatedLead',
    schema: UpdatedLead,
    summary: "A lead's fields changed (through the API, the console or an erasure)",
  },
  'lead.assigned': { component: 'Lead', schema: LeadSchema, summary: 'A lead was given a new owner' },
  'lead.converted': { component: 'Lead', schema: LeadSchema, summary: 'A lead was converted into an application' },
  'lead.lost': { component: 'Lead', schema: LeadSchema, summary: 'A lead was moved to the lost stage' },
  'application.stage_changed': {
    component: 'ApplicationStageChanged',
    schema: StageChangedData,
    summary: "An application's stage changed (opened, moved by staff, or completed by its modules)",
  },
  'application.module_updated': {
    component: 'ApplicationModuleUpdated',
    schema: ModuleUpdatedData,
    summary: "A module of an application's roadmap changed",
  },
  'application.outcome': {
    component: 'ApplicationStatus',
    schema: ApplicationStatus,
    summary: "An application's outcome was recorded",
  },
  'document.uploaded': {
    component: 'Document',
    schema: Document,
    summary: 'A document was uploaded and passed the virus scan',
  },
  'document.rejected': { component: 'Document', schema: Document, summary: 'Staff rejected a document' },
  'invoice.issued': { component: 'Invoice', schema: Invoice, summary: 'An invoice was issued' },
  'payment.received': { component: 'Payment', schema: Payment, summary: 'A payment was recorded against an invoice' },
  'refund.paid': { component: 'Refund', schema: Refund, summary: 'A refund of a payment was paid out' },
  'task.overdue': { component: 'Task', schema: Task, summary: "A task's due time passed while it was open" },
  'webhook.test': {
    component: 'WebhookEndpoint',
    schema: WebhookEndpoint,
    summary: 'A test event, sent on request to one endpoint only (whatever it subscribes to)',
  },
};

/** `lead.stage_changed` → `LeadStageChanged`: the kind as a name for operation ids and components. */
const pascal = (kind: string) => kind.replace(/(^|[._])(\w)/g, (_m, _s, c: string) => c.toUpperCase());

/** The component name of a kind's whole delivery body (the envelope), as `LeadCreatedEvent`. */
export const envelopeComponent = (kind: EventKind) => `${pascal(kind)}Event`;

/** A delivery body of one kind (the spec's WebhookEvent): `event` names the kind, `data` is its documented shape. */
function envelopeOf(kind: EventKind) {
  return Type.Object(
    {
      id: V1_FIELDS.id,
      event: Type.Literal(kind),
      tenant_id: V1_FIELDS.tenant_id,
      created_at: V1_FIELDS.created_at,
      // Present from payload version 2026-11-29 on (src/webhooks/versions/schemas.ts has each version's exact shape);
      // the Events API answers in either version, so the union documents both.
      payload_version: Type.Optional(SINCE_2026_11_29.payload_version),
      resource: Type.Optional(SINCE_2026_11_29.resource),
      data: EVENT_DATA[kind].schema,
    },
    { additionalProperties: false },
  );
}

const ENVELOPES = EVENT_KINDS.map((kind) => [kind, envelopeOf(kind)] as const);

/**
 * Any webhook event, as deliveries and the Events API carry it: one envelope per kind, told apart by `event` (a
 * discriminated union: a generated client narrows `data` by checking `event`).
 */
export const WebhookEvent = Type.Union(
  ENVELOPES.map(([, envelope]) => envelope),
  { description: 'a webhook event: `event` names its kind and so the shape of `data`' },
);

/** Plain JSON of a TypeBox schema (its symbols dropped), as a document embeds it. */
const plain = (schema: TSchema): Record<string, unknown> =>
  JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;

/** Every component the public document names for webhook events: envelopes first, then the data shapes. */
function namedSchemas(): [string, TSchema][] {
  const data = new Map<string, TSchema>();
  for (const kind of EVENT_KINDS) data.set(EVENT_DATA[kind].component, EVENT_DATA[kind].schema);
  return [
    ['WebhookEvent', WebhookEvent],
    ...ENVELOPES.map(([kind, envelope]) => [envelopeComponent(kind), envelope] as [string, TSchema]),
    ...data,
  ];
}

/**
 * Replaces, top down, every sub-schema of `node` that is exactly a named component by a `$ref` to it (`skip`: the
 * component being written itself). The route schemas hold the shapes whole, as fastify's serializer needs them; the
 * document names each once.
 */
function referTo(byJson: Map<string, string>, node: unknown, skip?: string): unknown {
  if (Array.isArray(node)) return node.map((item) => referTo(byJson, item));
  if (node === null || typeof node !== 'object') return node;
  const name = byJson.get(canonicalJson(node)!);
  if (name !== undefined && name !== skip) return { $ref: `#/components/schemas/${name}` };
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, referTo(byJson, value)]));
}

export function eventDataComponents(): Record<string, unknown> {
  return Object.fromEntries(namedSchemas().map(([name, schema]) => [name, plain(schema)]));
}

/**
 * The document with every inline copy of an event component, in its operations and in the other components,
 * replaced by its `$ref`. Compared as the document writer left them (it rewrites a schema's keywords and their
 * order alike in components and operations), in canonical JSON (RFC 8785).
 */
export function referToEventComponents<T extends { paths?: unknown; components?: { schemas?: unknown } }>(
  document: T,
): T {
  const schemas = (document.components?.schemas ?? {}) as Record<string, unknown>;
  const names = namedSchemas().map(([name]) => name);
  const byJson = new Map(names.map((name) => [canonicalJson(schemas[name])!, name]));
  const components = Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [name, referTo(byJson, schema, name)]),
  );
  return {
    ...document,
    components: { ...document.components, schemas: components },
    paths: referTo(byJson, document.paths),
  };
}

/** The `webhooks` object: one POST per event, its body the envelope with `data` the component. */
const header = (name: string, description: string, required = true, schema: object = { type: 'string' }) => ({
  name,
  in: 'header',
  required,
  description,
  schema,
});

/** The headers of every delivery (src/subscribers/webhook-delivery-worker.ts, `deliveryHeaders`). */
const DELIVERY_HEADERS = [
  header('X-Service-Event', 'the event kind'),
  header('X-Service-Delivery', 'the delivery id (a resend has its own)', true, { type: 'string', format: 'uuid' }),
  header('X-Service-Signature', '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, one v1 per valid secret'),
  header(
    'X-Service-Sequence',
    "this endpoint's number for the delivery: 1, 2, 3 … in the order the fan-out assigned them, never reused; a resend keeps its number. A number skipped since the last one received is a missed event: fetch it from GET /v1/events or GET /v1/webhooks/{id}/deliveries?sequence_gte=",
    true,
    { type: 'string', pattern: '^[1-9][0-9]*$' },
  ),
  header(
    'X-Service-Previous-Event',
    'the id of the event this endpoint was sent just before this one (absent on its first delivery)',
    false,
    { type: 'string', format: 'uuid' },
  ),
  header('webhook-id', 'Standard Webhooks: the event id', true, { type: 'string', format: 'uuid' }),
  header('webhook-timestamp', 'Standard Webhooks: unix seconds'),
  header(
    'webhook-signature',
    'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "<id>.<t>.<body>">`, one per valid secret',
  ),
];

/** The public document's `webhooks`: one POST per kind, its body the kind's envelope component. */
export function eventWebhooks(): Record<string, unknown> {
  return Object.fromEntries(
    EVENT_KINDS.map((kind) => [
      kind,
      {
        post: {
          operationId: `on${pascal(kind)}`,
          summary: EVENT_DATA[kind].summary,
          description:
            kind === 'webhook.test'
              ? 'Sent to one endpoint when its owner asks for a test; `data` is the WebhookEndpoint.'
              : `Delivered to endpoints subscribed to \`${kind}\`, signed like every delivery; \`data\` is the ${EVENT_DATA[kind].component}. The body as payload version ${CURRENT_PAYLOAD_VERSION} has it; older versions: /docs/payload-versions.`,
          tags: ['webhooks'],
          security: [],
          parameters: DELIVERY_HEADERS,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${envelopeComponent(kind)}` } } },
          },
          responses: { '200': { description: 'Acknowledged: any 2xx within 10 seconds' } },
        },
      },
    ]),
  );
}
