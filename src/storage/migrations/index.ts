import type pg from 'pg';
import * as eventStore from './0001-event-store.js';
import * as workspacesAndKeys from './0002-workspaces-and-keys.js';
import * as leads from './0003-leads.js';
import * as applications from './0004-applications.js';
import * as webhooks from './0005-webhooks.js';
import * as writeIntentsInSessionNames from './0006-write-intents-in-session-names.js';
import * as expectationChecks from './0007-expectation-checks.js';
import * as leadBodiesAsJsonText from './0008-lead-bodies-as-json-text.js';
import * as noExpectationChecks from './0009-no-expectation-checks.js';
import * as fairWebhookClaims from './0020-fair-webhook-claims.js';
import * as endpointSpeed from './0021-endpoint-speed.js';
import * as webhookClaimIndexes from './0022-webhook-claim-indexes.js';
import * as ownerMailOutbox from './0025-owner-mail-outbox.js';
import * as tasks from './0030-tasks.js';
import * as invoices from './0031-invoices.js';
import * as documents from './0032-documents.js';
import * as eventHashChain from './0040-event-hash-chain.js';
import * as personalDataKeys from './0041-personal-data-keys.js';
import * as eventsTenantOrder from './0042-events-tenant-order.js';
import * as eventsInlineRows from './0043-events-inline-rows.js';
import * as personIndexWithoutLeads from './0044-person-index-without-leads.js';
import * as dueIndexForDueReads from './0045-due-index-for-due-reads.js';
import * as dueTestDeliveriesIndex from './0046-due-test-deliveries-index.js';
import * as resendsByEvent from './0047-resends-by-event.js';
import * as quotaCounters from './0050-quota-counters.js';
import * as idempotencyByKeyKind from './0051-idempotency-by-key-kind.js';
import * as endpointBoundWebhookSecrets from './0055-endpoint-bound-webhook-secrets.js';
import * as erasureLedger from './0056-erasure-ledger.js';
import * as staffIdentity from './0080-staff-identity.js';
import * as derivedKeyRowsIndex from './0090-derived-key-rows-index.js';
import * as leadSearchTrigrams from './0095-lead-search-trigrams.js';
import * as leadListFilterIndexes from './0096-lead-list-filter-indexes.js';
import * as keyLastUseAndSandboxIndex from './0097-key-last-use-and-sandbox-index.js';
import * as passkeySessions from './0100-passkey-sessions.js';
import * as passwordDoors from './0105-password-doors.js';
import * as deliverySequences from './0120-delivery-sequences.js';
import * as eventsByCreationTime from './0121-events-by-creation-time.js';
import * as deletedWebhookEndpoints from './0130-deleted-webhook-endpoints.js';
import * as consoleOneTimeSecrets from './0131-console-one-time-secrets.js';
import * as todayAndSwitcherIndexes from './0150-today-and-switcher-indexes.js';
import * as passkeyTokens from './0160-passkey-tokens.js';
import * as jobs from './0170-jobs.js';
import * as listSortIndexes from './0171-list-sort-indexes.js';
import * as roomForHotUpdates from './0190-room-for-hot-updates.js';
import * as attemptsWithoutForeignKey from './0230-attempts-without-foreign-key.js';
import * as endpointDeliveryQueues from './0200-endpoint-delivery-queues.js';
import * as payloadVersions from './0280-payload-versions.js';
import * as leadNamesInLeadOrder from './0320-lead-names-in-lead-order.js';
import * as oneIdempotencyStore from './0330-one-idempotency-store.js';
import * as endpointRateLimits from './0300-endpoint-rate-limits.js';
import * as webhookReplays from './0290-webhook-replays.js';
import * as webhookLeaseRows from './0340-webhook-lease-rows.js';
import * as leadRowsLeftJoin from './0350-lead-rows-left-join.js';
import * as leadImports from './0177-lead-imports.js';
import * as memberNotifications from './0185-member-notifications.js';
import * as leadBoardColumns from './0174-lead-board-columns.js';
import * as consoleFormKeys from './0180-console-form-keys.js';
import * as consoleSearch from './0181-console-search.js';
import * as apiIdempotency from './0270-api-idempotency.js';
import * as leadOrderForHotUpdates from './0220-lead-order-for-hot-updates.js';
import * as leadRowsJoinedById from './0221-lead-rows-joined-by-id.js';
import * as leadBodiesReserialised from './0240-lead-bodies-reserialised.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** Work SQL alone cannot do (a backfill computed in code), run after `sql` in the same transaction. */
  run?: (client: pg.ClientBase) => Promise<void>;
  /** The Lead's fields the stored lead bodies have after it: a migration whose `run` re-serialises them (lead-rows.ts). */
  leadFields?: readonly string[];
}

/** Every schema change, in order. Append only: a released migration is never edited. */
export const migrations: Migration[] = [
  { version: 1, ...eventStore },
  { version: 2, ...workspacesAndKeys },
  { version: 3, ...leads },
  { version: 4, ...applications },
  { version: 5, ...webhooks },
  { version: 6, ...writeIntentsInSessionNames },
  { version: 7, ...expectationChecks },
  { version: 8, ...leadBodiesAsJsonText },
  { version: 9, ...noExpectationChecks },
  { version: 20, ...fairWebhookClaims },
  { version: 21, ...endpointSpeed },
  { version: 22, ...webhookClaimIndexes },
  { version: 25, ...ownerMailOutbox },
  { version: 30, ...tasks },
  { version: 31, ...invoices },
  { version: 32, ...documents },
  { version: 40, ...eventHashChain },
  { version: 41, ...personalDataKeys },
  { version: 42, ...eventsTenantOrder },
  { version: 43, ...eventsInlineRows },
  { version: 44, ...personIndexWithoutLeads },
  { version: 45, ...dueIndexForDueReads },
  { version: 46, ...dueTestDeliveriesIndex },
  { version: 47, ...resendsByEvent },
  { version: 50, ...quotaCounters },
  { version: 51, ...idempotencyByKeyKind },
  { version: 55, ...endpointBoundWebhookSecrets },
  { version: 56, ...erasureLedger },
  { version: 80, ...staffIdentity },
  { version: 90, ...derivedKeyRowsIndex },
  { version: 95, ...leadSearchTrigrams },
  { version: 96, ...leadListFilterIndexes },
  { version: 97, ...keyLastUseAndSandboxIndex },
  { version: 100, ...passkeySessions },
  { version: 105, ...passwordDoors },
  { version: 120, ...deliverySequences },
  { version: 121, ...eventsByCreationTime },
  { version: 130, ...deletedWebhookEndpoints },
  { version: 131, ...consoleOneTimeSecrets },
  { version: 150, ...todayAndSwitcherIndexes },
  { version: 160, ...passkeyTokens },
  { version: 170, ...jobs },
  { version: 171, ...listSortIndexes },
  { version: 190, ...roomForHotUpdates },
  { version: 200, ...endpointDeliveryQueues },
  { version: 230, ...attemptsWithoutForeignKey },
  { version: 177, ...leadImports },
  { version: 185, ...memberNotifications },
  { version: 174, ...leadBoardColumns },
  { version: 180, ...consoleFormKeys },
  { version: 181, ...consoleSearch },
  { version: 270, ...apiIdempotency },
  { version: 220, ...leadOrderForHotUpdates },
  { version: 221, ...leadRowsJoinedById },
  { version: 240, ...leadBodiesReserialised },
  { version: 280, ...payloadVersions },
  { version: 320, ...leadNamesInLeadOrder },
  { version: 330, ...oneIdempotencyStore },
  { version: 300, ...endpointRateLimits },
  { version: 290, ...webhookReplays },
  { version: 340, ...webhookLeaseRows },
  { version: 350, ...leadRowsLeftJoin },
];
