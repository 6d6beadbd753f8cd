import { randomUUID } from 'node:crypto';
import { latestFailures, obsoletePauseNotices, recordNotices } from '../../webhooks/owner-notices.js';
import { composePauseNotice } from '../../webhooks/pause-notice.js';
import {
  decideChange,
  decideChangeRateLimit,
  decideChangeVersion,
  decideCreate,
  decideDelete,
  decidePause,
  decideResume,
  decideRotateSecret,
  decideSendTest,
  EndpointNotFoundError,
  endpointStream,
  fold,
  toEndpointEvent,
  type EndpointState,
} from '../../domain/webhooks/endpoint.js';
import type { StoreTransaction } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import type { AppServices } from '../../bootstrap.js';
import {
  countEndpoints,
  findEndpoint,
  toPublicEndpoint,
  type EndpointRow,
  type PublicEndpoint,
} from '../../projections/webhook-endpoints.js';
import { webhookEndpointLimit } from '../../workspaces/plans.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { checkWebhookTarget, RefusedAddressError } from '../../webhooks/address-guard.js';
import { resendDelivery, scheduleResumedBacklog } from '../../webhooks/deliveries.js';
import { findFeedEvent } from '../../webhooks/event-feed.js';
import { generateSecret } from '../../webhooks/signing.js';
import { CURRENT_PAYLOAD_VERSION, FIRST_PAYLOAD_VERSION, type PayloadVersion } from '../../webhooks/versions/index.js';
import { NotFoundError, WebhookLimitError, WebhookUrlRefusedError } from '../errors.js';
import { runCommand } from '../run-command.js';

export interface CreateEndpointInput {
  url: string;
  description?: string | null;
  events: string[];
  /** The payload version its deliveries are rendered in; the current one when not given. */
  payload_version?: PayloadVersion;
  /** The most deliveries a second it accepts (1..1000); null: no limit. Not given: none on creation, unchanged on a change. */
  rate_limit_per_second?: number | null;
}

/** A lock-only stream name: creations in one workspace and mode queue on it, so the limit check cannot race. */
const registryLock = (tenantId: string, sandbox: boolean) =>
  `webhook-endpoints-${tenantId}-${sandbox ? 'test' : 'live'}`;

const notFound = () => new NotFoundError('webhook endpoint');

/** Refuses a URL that is not public HTTPS (WebhookUrlRefusedError; 400 validation_failed on `url` over HTTP). */
export async function assertPublicUrl(services: AppServices, url: string): Promise<void> {
  try {
    await checkWebhookTarget(url, {
      allowLoopback: services.config.webhookAllowLoopback,
      resolve: services.webhooks.resolve,
    });
  } catch (error) {
    if (error instanceof RefusedAddressError) throw new WebhookUrlRefusedError(error.message);
    throw error;
  }
}

/**
 * Creates an endpoint; with `send_test`, then sends it a webhook.test (in a transaction of its own, after the one that
 * made the endpoint: the test's payload is the endpoint's public shape, which its read model row gives).
 */
export async function createEndpoint(
  services: AppServices,
  context: CommandContext,
  workspace: Workspace,
  input: CreateEndpointInput & { send_test?: boolean },
): Promise<{ endpoint: PublicEndpoint; secret: string; test_event_id?: string }> {
  await assertPublicUrl(services, input.url);
  const id = randomUUID();
  const secret = generateSecret();
  const limit = webhookEndpointLimit(workspace);
  await runCommand(
    services.store,
    context,
    [registryLock(context.tenantId, context.sandbox), endpointStream(id)],
    async (tx) => {
      const count = await countEndpoints(tx.sql, context.tenantId, context.sandbox);
      if (count >= limit) throw new WebhookLimitError(limit, context.sandbox);
      const events = decideCreate(null, {
        endpointId: id,
        url: input.url,
        description: input.description ?? null,
        events: input.events,
        sealedSecret: services.secretBox.webhookSecrets.sealFor(id, secret),
        payloadVersion: input.payload_version ?? CURRENT_PAYLOAD_VERSION,
        rateLimitPerSecond: input.rate_limit_per_second ?? null,
      });
      await tx.append(endpointStream(id), 'no_stream', events);
      await tx.sql.query(
        'INSERT INTO webhook_endpoint_health (endpoint_id, consecutive_failures) VALUES ($1, 0) ON CONFLICT (endpoint_id) DO NOTHING',
        [id],
      );
    },
  );
  const row = await findEndpoint(services.pool, context.tenantId, id);
  if (!row) throw new Error(`Webhook endpoint ${id} was created but cannot be read`);
  const endpoint = toPublicEndpoint(row, services.now());
  if (!input.send_test) return { endpoint, secret };
  const { event_id } = await sendTestEvent(services, context, id);
  return { endpoint, secret, test_event_id: event_id };
}

/** Loads the endpoint's state inside the command, refusing another workspace's or the other mode's endpoint. */
async function load(
  tx: StoreTransaction,
  context: CommandContext,
  id: string,
): Promise<{ row: EndpointRow; state: EndpointState | null }> {
  const row = await findEndpoint(tx.sql, context.tenantId, id, context.sandbox);
  if (!row) throw notFound();
  const events = await tx.readStream(endpointStream(id));
  return { row, state: fold(events.map(toEndpointEvent)) };
}

export function domainErrors<T>(work: () => Promise<T>): Promise<T> {
  return work().catch((error: unknown) => {
    if (error instanceof EndpointNotFoundError) throw notFound();
    throw error;
  });
}

/**
 * Changes the endpoint's address (under the same guard as a new one's), description and kinds, and its payload
 * version when one is given.
 */
export async function changeEndpoint(
  services: AppServices,
  context: CommandContext,
  id: string,
  input: CreateEndpointInput,
): Promise<PublicEndpoint> {
  await assertPublicUrl(services, input.url);
  await domainErrors(() =>
    runCommand(services.store, context, [endpointStream(id)], async (tx) => {
      const { state } = await load(tx, context, id);
      const events = decideChange(state, {
        url: input.url,
        description: input.description ?? null,
        events: input.events,
      });
      const version = input.payload_version
        ? decideChangeVersion(state, { payloadVersion: input.payload_version, firstVersion: FIRST_PAYLOAD_VERSION })
        : [];
      const rate =
        input.rate_limit_per_second !== undefined
          ? decideChangeRateLimit(state, { rateLimitPerSecond: input.rate_limit_per_second })
          : [];
      await tx.append(endpointStream(id), 'any', [...events, ...version, ...rate]);
    }),
  );
  return toPublicEndpoint((await findEndpoint(services.pool, context.tenantId, id))!, services.now());
}

/**
 * Moves the endpoint to another payload version (upgrade or back): the deliveries fanned out after this commits are
 * rendered in it; those made before, their retries and their resends keep the version they were made in.
 */
export async function changeEndpointVersion(
  services: AppServices,
  context: CommandContext,
  id: string,
  version: PayloadVersion,
): Promise<PublicEndpoint> {
  await domainErrors(() =>
    runCommand(services.store, context, [endpointStream(id)], async (tx) => {
      const { state } = await load(tx, context, id);
      const events = decideChangeVersion(state, { payloadVersion: version, firstVersion: FIRST_PAYLOAD_VERSION });
      await tx.append(endpointStream(id), 'any', events);
    }),
  );
  return toPublicEndpoint((await findEndpoint(services.pool, context.tenantId, id))!, services.now());
}

/**
 * What an owner changes of an endpoint without touching its address or kinds: its payload version and its rate
 * (null removes the rate), either or both. What is not given stays as it is.
 */
export async function updateEndpointSettings(
  services: AppServices,
  context: CommandContext,
  id: string,
  input: { payload_version?: PayloadVersion; rate_limit_per_second?: number | null },
): Promise<PublicEndpoint> {
  await domainErrors(() =>
    runCommand(services.store, context, [endpointStream(id)], async (tx) => {
      const { state } = await load(tx, context, id);
      const version = input.payload_version
        ? decideChangeVersion(state, { payloadVersion: input.payload_version, firstVersion: FIRST_PAYLOAD_VERSION })
        : [];
      const rate =
        input.rate_limit_per_second !== undefined
          ? decideChangeRateLimit(state, { rateLimitPerSecond: input.rate_limit_per_second })
          : [];
      await tx.append(endpointStream(id), 'any', [...version, ...rate]);
    }),
  );
  return toPublicEndpoint((await findEndpoint(services.pool, context.tenantId, id))!, services.now());
}

/**
 * Pauses the endpoint by a member's hand: what comes for it waits, as after a run of failures, until it is resumed.
 * No owner is mailed (a member chose it). Does nothing when it is paused already.
 */
export async function disableEndpoint(
  services: AppServices,
  context: CommandContext,
  id: string,
  byWhom: string,
): Promise<void> {
  await domainErrors(() =>
    runCommand(services.store, context, [endpointStream(id)], async (tx) => {
      const { row, state } = await load(tx, context, id);
      const events = decidePause(existingState(state), {
        reason: `disabled by ${byWhom}`,
        consecutiveFailures: row.consecutive_failures,
      });
      await tx.append(endpointStream(id), 'any', events);
    }),
  );
}

/** A deleted endpoint is not found, for a pause by hand as for every other command. */
function existingState(state: EndpointState | null): EndpointState {
  if (!state || state.deleted) throw notFound();
  return state;
}

export async function deleteEndpoint(services: AppServices, context: CommandContext, id: string): Promise<void> {
  await domainErrors(() =>
    runCommand(services.store, context, [endpointStream(id)], async (tx) => {
      const { state } = await load(tx, context, id);
      await tx.append(endpointStream(id), 'any', decideDelete(state));
      // What still waits for this endpoint is never sent; its log stays until the retention purge.
      // The queue row goes first: its lock comes before the deliveries', as in the claims and the recording.
      await tx.sql.query('DELETE FROM webhook_queues WHERE endpoint_id = $1', [id]);
      await tx.sql.query(
        `UPDATE webhook_deliveries SET status = 'cancelled', updated_at = $2 WHERE endpoint_id = $1 AND status = 'pending'`,
        [id, context.now],
      );
      await tx.sql.query('DELETE FROM webhook_endpoint_health WHERE endpoint_id = $1', [id]);
    }),
  );
}

export async function resumeEndpoint(
  services: AppServices,
  context: CommandContext,
  id: string,
): Promise<PublicEndpoint> {
  await domainErrors(() =>
    runCommand(services.store, context, [endpointStream(id)], async (tx) => {
      const { state } = await load(tx, context, id);
      const events = decideResume(state);
      await tx.append(endpointStream(id), 'any', events);
      if (events.length > 0) {
        await tx.sql.query('UPDATE webhook_endpoint_health SET consecutive_failures = 0 WHERE endpoint_id = $1', [id]);
        // Deliveries held while paused come due from now on, a bounded number per second.
        await scheduleResumedBacklog(tx.sql, id, context.now);
        // A pause notice not mailed yet (SMTP down) would now be wrong: it is kept as the record, marked obsolete.
        await obsoletePauseNotices(tx.sql, id);
        await tx.sql.query("SELECT pg_notify('webhook_deliveries', '')");
      }
    }),
  );
  return toPublicEndpoint((await findEndpoint(services.pool, context.tenantId, id))!, services.now());
}

export async function rotateEndpointSecret(
  services: AppServices,
  context: CommandContext,
  id: string,
): Promise<{ endpoint: PublicEndpoint; secret: string }> {
  const secret = generateSecret();
  await domainErrors(() =>
    runCommand(services.store, context, [endpointStream(id)], async (tx) => {
      const { row, state } = await load(tx, context, id);
      await tx.append(
        endpointStream(id),
        'any',
        decideRotateSecret(state, {
          // Bound to the endpoint: its id as stored, the one the delivery worker opens it with.
          sealedSecret: services.secretBox.webhookSecrets.sealFor(row.id, secret),
          now: context.now,
        }),
      );
    }),
  );
  return {
    endpoint: toPublicEndpoint((await findEndpoint(services.pool, context.tenantId, id))!, services.now()),
    secret,
  };
}

/** Appends a webhook.test event; the fan-out sends it to this endpoint only. Returns the event id. */
export async function sendTestEvent(
  services: AppServices,
  context: CommandContext,
  id: string,
): Promise<{ event_id: string }> {
  return domainErrors(() =>
    runCommand(services.store, context, [endpointStream(id)], (tx) => appendTestEvent(tx, context, id)),
  );
}

/**
 * The webhook.test event in a transaction that holds the endpoint's stream (POST /v1/webhooks/{id}/test adds its
 * Idempotency-Key's answer to the same transaction). Another workspace's or mode's endpoint is not found.
 */
export async function appendTestEvent(
  tx: StoreTransaction,
  context: CommandContext,
  id: string,
): Promise<{ event_id: string }> {
  const { row, state } = await load(tx, context, id);
  const [stored] = await tx.append(
    endpointStream(id),
    'any',
    decideSendTest(state, { payload: { ...toPublicEndpoint(row, context.now) } }),
  );
  return { event_id: stored!.id };
}

/**
 * Pauses an endpoint after its run of failures reached the threshold, and records a notification to each active
 * owner of the workspace in the same transaction. Does nothing when it is already paused or gone.
 */
export async function pauseEndpoint(
  services: AppServices,
  endpointId: string,
  consecutiveFailures: number,
): Promise<boolean> {
  const row = await services.pool.query<{ tenant_id: string; sandbox: boolean; url: string }>(
    'SELECT tenant_id, sandbox, url FROM webhook_endpoints WHERE id = $1',
    [endpointId],
  );
  const endpoint = row.rows[0];
  if (!endpoint) return false;
  const now = services.now();
  const context: CommandContext = {
    tenantId: endpoint.tenant_id,
    sandbox: endpoint.sandbox,
    metadata: { actor: { type: 'system', name: 'webhook-delivery' }, correlation_id: randomUUID() },
    now,
  };
  const reason = `${consecutiveFailures} deliveries failed in a row`;
  return runCommand(services.store, context, [endpointStream(endpointId)], async (tx) => {
    const state = fold((await tx.readStream(endpointStream(endpointId))).map(toEndpointEvent));
    const events = decidePause(state, { reason, consecutiveFailures });
    if (events.length === 0) return false;
    await tx.append(endpointStream(endpointId), 'any', events);
    const workspace = await services.workspaces.get(endpoint.tenant_id, -1);
    const owners = (workspace?.settings.users ?? []).filter((u) => u.role === 'owner' && u.active && !u.pending);
    const failures = await latestFailures(tx.sql, endpointId);
    const messages = owners.map((owner) => {
      const notice = composePauseNotice({
        ownerName: owner.name,
        workspaceSlug: workspace?.slug ?? endpoint.tenant_id,
        endpointId,
        url: endpoint.url,
        sandbox: endpoint.sandbox,
        pausedAt: now,
        reason,
        failures,
        publicBaseUrl: services.config.publicBaseUrl,
      });
      return { recipient: owner.email, subject: notice.subject, body: notice.text };
    });
    await recordNotices(
      tx.sql,
      {
        tenantId: endpoint.tenant_id,
        endpointId,
        kind: 'webhook_endpoint_paused',
        now,
        mailing: services.config.smtpUrl !== undefined,
      },
      messages,
    );
    return true;
  });
}

/**
 * A manual resend of one of the endpoint's deliveries: the same body in the same payload version, or, when `version`
 * is given, the event rendered anew in that version (as read now: an erased person's event reads erased). Undefined
 * when the endpoint has no such delivery or its event is past the Events API's retention.
 */
export async function resendEndpointDelivery(
  services: AppServices,
  row: Pick<EndpointRow, 'id' | 'tenant_id' | 'sandbox'>,
  deliveryId: string,
  version?: PayloadVersion,
): Promise<{ id: string; event_id: string } | undefined> {
  const now = services.now();
  if (!version) return resendDelivery(services.pool, row.id, deliveryId, now);
  const delivery = await services.pool.query<{ event_id: string }>(
    'SELECT event_id FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2',
    [deliveryId, row.id],
  );
  const eventId = delivery.rows[0]?.event_id;
  if (!eventId) return undefined;
  const event = await findFeedEvent(services.pool, services.personalData, {
    tenantId: row.tenant_id,
    sandbox: row.sandbox,
    id: eventId,
    now,
    version,
  });
  if (!event || event === 'expired') return undefined;
  return resendDelivery(services.pool, row.id, deliveryId, now, { version, body: event.envelope });
}
