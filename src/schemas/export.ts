import { Type, type Static } from 'typebox';

/**
 * The export format of one workspace's event log (docs/decisions.md, "Export and import"): NDJSON, one header line,
 * one line per event in global order, one trailer line. Import checks every line against these schemas.
 */
export const EXPORT_FORMAT = 'visa-crm-export';
export const EXPORT_VERSION = 1;

/** A place in the global log, `<txId>/<position>` as `audit verify` prints it after the head. */
export const PositionToken = Type.String({
  pattern: '^\\d{1,20}/\\d{1,19}$',
  maxLength: 40,
  description: 'a place in the global log, `<txId>/<position>`: the trailer’s `next` of an earlier export',
});

/** Lower case only: PostgreSQL compares uuids without regard to case, so another spelling could name another row. */
const Uuid = Type.String({
  pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
  description: 'a lower-case uuid',
});
const Hash = Type.String({ pattern: '^[0-9a-f]{64}$' });

export const ExportWorkspace = Type.Object(
  {
    id: Uuid,
    slug: Type.String({ minLength: 1 }),
    name: Type.String({ minLength: 1 }),
    plan: Type.Union([Type.Literal('starter'), Type.Literal('growth'), Type.Literal('enterprise')]),
    status: Type.Union([Type.Literal('active'), Type.Literal('suspended')]),
    settings: Type.Object({}, { additionalProperties: true, description: 'the stored settings, ids included' }),
  },
  { additionalProperties: false },
);

export const ExportHeader = Type.Object(
  {
    format: Type.Literal(EXPORT_FORMAT),
    version: Type.Literal(EXPORT_VERSION),
    workspace: ExportWorkspace,
    after: Type.Union([PositionToken, Type.Null()], { description: 'null: the log from its start' }),
    exported_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type ExportHeader = Static<typeof ExportHeader>;

export const ExportEvent = Type.Object(
  {
    id: Uuid,
    stream: Type.String({ minLength: 1 }),
    revision: Type.Integer({ minimum: 0, maximum: 2147483647 }),
    type: Type.String({ minLength: 1 }),
    tenant: Uuid,
    sandbox: Type.Boolean(),
    time: Type.String({ format: 'date-time' }),
    data: Type.Object({}, { additionalProperties: true }),
    metadata: Type.Object({ correlation_id: Type.String() }, { additionalProperties: true }),
    hash: Hash,
    position: PositionToken,
    personal_key: Type.Optional(
      Type.Object(
        {
          person: Uuid,
          wrapped: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
          erased_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
        },
        {
          additionalProperties: false,
          description:
            "the stream's data key (crypto-shredding), wrapped with SECRET_ENCRYPTION_KEY's person-key purpose, or its erasure; not hashed",
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ExportEvent = Static<typeof ExportEvent>;

export const ExportTrailer = Type.Object(
  {
    trailer: Type.Literal(true),
    events: Type.Integer({ minimum: 0, description: 'event lines in this export' }),
    next: PositionToken,
    head: Hash,
    anchor: Type.String({ description: '`<head>@<next>`, what `audit verify --anchor` takes' }),
    erasures: Type.Optional(
      Type.Array(
        Type.Object({ person: Uuid, erased_at: Type.String({ format: 'date-time' }) }, { additionalProperties: false }),
        {
          description:
            "the workspace's erasure ledger when the export was written (who was erased and when, nothing personal): an import keeps each of them erased; absent in exports written before 2026-11-26",
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ExportTrailer = Static<typeof ExportTrailer>;

export const ExportQuery = Type.Object({ after: Type.Optional(PositionToken) }, { additionalProperties: false });
