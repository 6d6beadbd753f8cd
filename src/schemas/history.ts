import { Type, type Static } from 'typebox';
import { AdminApplication } from './application.js';
import { LeadSchema } from './lead.js';
import { WorkspaceRef } from './workspace-ref.js';

const Uuid = Type.String({ format: 'uuid' });

export const HistoryItem = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'the event id (the webhook envelope id, when it was sent)' }),
    type: Type.String({ description: 'the event type, e.g. lead.updated' }),
    at: Type.String({ format: 'date-time', description: 'when it happened (ISO 8601 UTC)' }),
    revision: Type.Integer({ minimum: 0, description: 'its place in the record’s stream, from 0' }),
    actor: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: 'who did it: a staff user, an API key or the system',
    }),
    actor_text: Type.String(),
    summary: Type.String({ description: 'what it did, in words' }),
    facts: Type.Object({}, { additionalProperties: true, description: 'the facts the event stores' }),
  },
  { additionalProperties: false },
);

export const HistoryPage = Type.Object(
  { object: Type.Literal('list'), data: Type.Array(HistoryItem), has_more: Type.Boolean() },
  { additionalProperties: false },
);
export type HistoryPage = Static<typeof HistoryPage>;

export const HistoryQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
    starting_after: Type.Optional(Type.String({ format: 'uuid', description: 'the last event id of the page before' })),
    sandbox: Type.Optional(Type.Boolean({ default: false, description: 'the sandbox record instead of the live one' })),
  },
  { additionalProperties: false },
);

export const AsOfQuery = Type.Object(
  {
    as_of: Type.String({
      format: 'date-time',
      description:
        'the instant (RFC 3339, in UTC between the years 0001 and 9999); not in the future (400 `validation_failed`)',
    }),
    sandbox: Type.Optional(Type.Boolean({ default: false, description: 'the sandbox record instead of the live one' })),
  },
  { additionalProperties: false },
);

export const LeadHistoryParams = Type.Object({ workspace: WorkspaceRef, leadId: Uuid });
export const ApplicationHistoryParams = Type.Object({ workspace: WorkspaceRef, id: Uuid });

export const LeadAsOf = Type.Object(
  {
    as_of: Type.String({ format: 'date-time' }),
    revision: Type.Integer({ minimum: 0, description: 'the last event replayed' }),
    lead: LeadSchema,
  },
  { additionalProperties: false },
);
export const ApplicationAsOf = Type.Object(
  {
    as_of: Type.String({ format: 'date-time' }),
    revision: Type.Integer({ minimum: 0, description: 'the last event replayed' }),
    application: AdminApplication,
  },
  { additionalProperties: false },
);
