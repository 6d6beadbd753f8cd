import type { Command } from 'commander';
import { staffContext } from '../../commands/run-command.js';
import { resumeEndpoint, rotateEndpointSecret, sendTestEvent } from '../../commands/webhooks/endpoints.js';
import { replayEndpointEvents } from '../../commands/webhooks/replay.js';
import type { Operation } from '../../identity/permissions.js';
import type { AppServices } from '../../bootstrap.js';
import {
  findEndpoint,
  listAllEndpoints,
  toPublicEndpoint,
  type EndpointRow,
} from '../../projections/webhook-endpoints.js';
import { listDeliveries, resendDelivery } from '../../webhooks/deliveries.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { requireWorkspace, withServices } from '../context.js';
import { requireId } from '../ids.js';
import { CliError, output, table } from '../output.js';
import { staffActor } from '../staff.js';

async function endpointIn(
  s: AppServices,
  idOrSlug: string,
  endpointId: string,
): Promise<{ workspace: Workspace; row: EndpointRow }> {
  requireId(endpointId, 'webhook endpoint');
  const workspace = await requireWorkspace(s, idOrSlug);
  const row = await findEndpoint(s.pool, workspace.id, endpointId);
  if (!row) throw new CliError(`No webhook endpoint ${endpointId} in the workspace ${workspace.slug}`);
  return { workspace, row };
}

/** Runs a staff operation on one endpoint (a refusal is reported by the CLI's error handler, src/cli/main.ts). */
async function onEndpoint<T>(
  idOrSlug: string,
  endpointId: string,
  as: string,
  operation: Operation,
  work: (s: AppServices, row: EndpointRow, context: ReturnType<typeof staffContext>) => Promise<T>,
): Promise<T> {
  requireId(endpointId, 'webhook endpoint');
  return withServices(async (s) => {
    const { workspace, row } = await endpointIn(s, idOrSlug, endpointId);
    return work(s, row, staffContext(workspace.id, row.sandbox, staffActor(workspace, as, operation), s.now()));
  });
}

export function registerWebhookVerbs(program: Command, json: () => boolean): void {
  const webhook = program
    .command('webhook')
    .description('webhook endpoints: delivery log, resend, replay, resume, secret rotation, test events');

  webhook
    .command('list <workspace>')
    .description('list the webhook endpoints of a workspace, live and test')
    .action(async (idOrSlug: string) => {
      const rows = await withServices(async (s) => {
        const ws = await requireWorkspace(s, idOrSlug);
        const now = s.now();
        return (await listAllEndpoints(s.pool, ws.id)).map((row) => ({
          ...toPublicEndpoint(row, now),
          mode: row.sandbox ? 'test' : 'live',
        }));
      });
      output(json(), rows, () =>
        table(rows, ['id', 'mode', 'status', 'url', 'events', 'consecutive_failures', 'paused_at']),
      );
    });

  webhook
    .command('deliveries <workspace> <endpointId>')
    .description('the delivery log of an endpoint (last 30 days, newest first)')
    .option('--limit <n>', 'how many deliveries (1 to 100)', '25')
    .option('--cursor <deliveryId>', 'continue after this delivery (the next_cursor of the previous page)')
    .action(async (idOrSlug: string, endpointId: string, o: { limit: string; cursor?: string }) => {
      requireId(endpointId, 'webhook endpoint');
      if (o.cursor !== undefined) requireId(o.cursor, 'delivery');
      const limit = Number(o.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        throw new CliError('--limit must be an integer from 1 to 100');
      const page = await withServices(async (s) => {
        const { row } = await endpointIn(s, idOrSlug, endpointId);
        return listDeliveries(s.pool, row.id, { limit, before: o.cursor, now: s.now() });
      });
      output(json(), page, () => {
        const rows = page.data.map((d) => ({
          ...d,
          last_status: d.log.at(-1)?.response_status ?? d.log.at(-1)?.error ?? '-',
        }));
        return `${table(rows, ['id', 'event', 'event_id', 'status', 'attempts', 'last_status', 'next_attempt_at', 'created_at'])}${page.next_cursor ? `\n\nmore: --cursor ${page.next_cursor}` : ''}`;
      });
    });

  const asOption = (c: Command) =>
    c.requiredOption(
      '--as <email>',
      'the staff member acting (an active user of the workspace whose role allows this)',
    );

  asOption(
    webhook
      .command('resend <workspace> <endpointId> <deliveryId>')
      .description('send a delivery again: same event id and body, new delivery id'),
  ).action(async (idOrSlug: string, endpointId: string, deliveryId: string, o: { as: string }) => {
    requireId(deliveryId, 'delivery');
    const resent = await onEndpoint(idOrSlug, endpointId, o.as, 'webhooks.resend', async (s, row) => {
      const result = await resendDelivery(s.pool, row.id, deliveryId, s.now());
      if (!result) throw new CliError(`No delivery ${deliveryId} for that endpoint`);
      return result;
    });
    output(json(), resent, () => `Queued delivery ${resent.id} of event ${resent.event_id}`);
  });

  asOption(
    webhook
      .command('resume <workspace> <endpointId>')
      .description('resume a paused endpoint; what waited for it is sent'),
  ).action(async (idOrSlug: string, endpointId: string, o: { as: string }) => {
    const endpoint = await onEndpoint(idOrSlug, endpointId, o.as, 'webhooks.resume', (s, row, context) =>
      resumeEndpoint(s, context, row.id),
    );
    output(json(), endpoint, () => `Endpoint ${endpoint.id} is ${endpoint.status}`);
  });

  asOption(
    webhook
      .command('rotate-secret <workspace> <endpointId>')
      .description('rotate the signing secret; the old one keeps signing beside it for 24 hours'),
  ).action(async (idOrSlug: string, endpointId: string, o: { as: string }) => {
    const rotated = await onEndpoint(idOrSlug, endpointId, o.as, 'webhooks.rotate_secret', (s, row, context) =>
      rotateEndpointSecret(s, context, row.id),
    );
    output(
      json(),
      rotated,
      () =>
        `New secret for ${rotated.endpoint.id}:\n\n  ${rotated.secret}\n\nStore it now: it is shown only this once. The previous secret stays valid until ${rotated.endpoint.previous_secret_valid_until}.`,
    );
  });

  asOption(
    webhook
      .command('replay <workspace> <endpointId>')
      .description(
        'send the events of a time window (at most 30 days back) to the endpoint again, in order: same event ids, new delivery ids',
      )
      .requiredOption('--since <dateTime>', 'events created at or after this time (RFC 3339)')
      .option('--until <dateTime>', 'and before this time (RFC 3339); default now')
      .option('--kinds <kinds>', 'only these kinds, comma-separated (each one the endpoint subscribes to)')
      .option('--only-failed', 'only events whose deliveries to the endpoint failed'),
  ).action(
    async (
      idOrSlug: string,
      endpointId: string,
      o: { as: string; since: string; until?: string; kinds?: string; onlyFailed?: boolean },
    ) => {
      const request = {
        since: o.since,
        ...(o.until !== undefined ? { until: o.until } : {}),
        ...(o.kinds !== undefined
          ? {
              kinds: o.kinds
                .split(',')
                .map((k) => k.trim())
                .filter(Boolean),
            }
          : {}),
        only_failed: o.onlyFailed ?? false,
      };
      const { replayed: _replayed, ...summary } = await onEndpoint(
        idOrSlug,
        endpointId,
        o.as,
        'webhooks.replay',
        (s, row, context) => replayEndpointEvents(s, context, row.id, request, null),
      );
      output(
        json(),
        summary,
        () => `Replay ${summary.id}: ${summary.queued} deliveries queued (${summary.since} to ${summary.until})`,
      );
    },
  );

  asOption(
    webhook.command('test <workspace> <endpointId>').description('send a webhook.test event to the endpoint'),
  ).action(async (idOrSlug: string, endpointId: string, o: { as: string }) => {
    const sent = await onEndpoint(idOrSlug, endpointId, o.as, 'webhooks.test', (s, row, context) =>
      sendTestEvent(s, context, row.id),
    );
    output(json(), sent, () => `Sent webhook.test event ${sent.event_id}`);
  });
}
