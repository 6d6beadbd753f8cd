import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { AppServices } from '../../bootstrap.js';
import { exportLines } from '../../commands/export/export-log.js';
import { anchorText, parseAnchor, verifyChains, type VerifyResult } from '../../events/verify-chain.js';
import { Type } from 'typebox';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { allow, allowRecent, ConsoleRefusal, needsPassword, sendPage, type MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { csrfField, field, page } from '../layout.js';
import { viewOf } from '../routes.js';
import { formBody, OptionalText, SlugParams } from '../schemas.js';
import { partsAsText } from '../validation.js';

/** The copy buttons' script: the only script of these pages (CSP script-src 'self'); without it the head is still selectable text. */
export const COPY_SCRIPT = `document.querySelectorAll('button[data-copy]').forEach(function (button) {
  button.hidden = false;
  button.addEventListener('click', function () {
    var source = document.getElementById(button.getAttribute('data-copy'));
    var said = document.getElementById(button.getAttribute('data-copy') + '-copied');
    navigator.clipboard.writeText(source.textContent.trim()).then(
      function () { said.textContent = 'Copied.'; },
      function () { said.textContent = 'Could not copy: select the text and copy it.'; }
    );
  });
});
`;

const REASONS: Record<NonNullable<VerifyResult['broken']>['reason'], string> = {
  revision_gap: 'an event is missing or out of order in its stream (its revision does not follow the one before)',
  hash_mismatch: 'the event’s stored hash is not the one its content and the event before it give: it was changed',
  anchor_mismatch: 'the head at the kept position is not the head you kept: something up to then was changed',
};

/** A verification against a kept head, and (when the head does not match) whether the chains themselves verify. */
export interface AuditCheck {
  result: VerifyResult;
  /** The chains verified without the kept head, when the kept head did not match. */
  chains?: VerifyResult;
}

/** Verifies the chains against the kept head; a head that does not match is checked again without it. */
export async function verifyAgainst(
  services: Pick<AppServices, 'pool'>,
  tenantId: string,
  anchor: Parameters<typeof verifyChains>[2],
): Promise<AuditCheck> {
  const result = await verifyChains(services.pool, tenantId, anchor);
  if (result.broken?.reason !== 'anchor_mismatch') return { result };
  return { result, chains: await verifyChains(services.pool, tenantId, undefined) };
}

/** A kept head that does not match: what that means, and whether the chains themselves verify. */
function keptHeadMismatch(check: AuditCheck): Html {
  const chains = check.chains;
  const at = check.result.broken!.position;
  return html`<div class="notice alert" role="alert" id="verify-outcome">
    <p><strong>The head you kept does not match.</strong></p>
    <p>
      The workspace’s head at the position you kept (${at.txId}/${at.position}) is not the one you kept. Either the head
      was copied wrongly or belongs to another workspace’s log, or something in this log up to that position was changed
      after you kept it. Compare it with the head printed in the export or report you kept it from.
    </p>
    ${
      chains && !chains.broken
        ? html`<p>
            Every event’s own chain verifies (${chains.events} event(s) in ${chains.streams} stream(s)): no event was
            altered in place or removed from the middle of its stream.
          </p>`
        : chains?.broken
          ? html`<p>A chain is broken as well: ${REASONS[chains.broken.reason]} (${describeLink(chains.broken)}).</p>`
          : ''
    }
  </div>`;
}

/** The first broken link, by the record and revision it concerns. */
function describeLink(b: NonNullable<VerifyResult['broken']>): string {
  return `event ${b.eventId}, revision ${b.revision} of ${b.streamId}, position ${b.position.txId}/${b.position.position}`;
}

/** A verification's outcome in words: the head to keep, a kept head that does not match, or the first broken link. */
function outcome(check: AuditCheck, checkedAnchor: boolean): Html {
  const result = check.result;
  if (result.broken?.reason === 'anchor_mismatch') return keptHeadMismatch(check);
  if (result.broken) {
    const b = result.broken;
    return html`<div class="notice alert" role="alert" id="verify-outcome">
      <p><strong>A chain is broken.</strong> ${REASONS[b.reason]}.</p>
      <p>
        First broken link: event <code>${b.eventId}</code>, stream <code>${b.streamId}</code>, revision ${b.revision},
        position ${b.position.txId}/${b.position.position}.
      </p>
      <p class="hint">${b.detail}</p>
    </div>`;
  }
  const anchor = anchorText(result.head, result.at);
  return html`<div class="notice status" role="status" id="verify-outcome">
    <p>
      <strong>Every chain verifies</strong>: ${result.events} event(s) in ${result.streams}
      stream(s)${checkedAnchor ? ', and nothing up to the kept head changed' : ''}.
    </p>
    <p>The head to keep (a later check against it proves nothing before it changed):</p>
    <p class="secret" id="head">${anchor}</p>
    <button type="button" data-copy="head" hidden>Copy the head</button>
    <span id="head-copied" role="status"></span>
  </div>`;
}

function auditPage(
  services: AppServices,
  view: MemberView,
  o: { result?: AuditCheck; anchor?: string; errors?: Record<string, string> } = {},
): string {
  allow(view, 'audit.verify');
  const csrf = csrfField(view.signedIn.csrf);
  const errors = o.errors ?? {};
  const base = `/console/w/${view.workspace.slug}/audit`;
  const exportForm = can(view.role, 'workspace.export')
    ? html`<section aria-labelledby="export">
        <h2 id="export">Export the log</h2>
        <p>
          The workspace’s whole event log as NDJSON, compressed with gzip. Its last line (the trailer) holds the head as
          of the export’s end: keep it, and check it here later. A file without that line was cut short.
        </p>
        <form method="post" action="${base}/export">
          ${csrf}
          ${
            needsPassword(services, view.signedIn, 'workspace.export') || errors.password
              ? field({
                  name: 'password',
                  label: 'Your password (exporting asks for a recent sign-in)',
                  type: 'password',
                  autocomplete: 'current-password',
                  error: errors.password,
                })
              : ''
          }
          <button type="submit">Download the export</button>
        </form>
      </section>`
    : '';
  return page(
    view.frame('Audit', 'Audit'),
    html`<p>
        Every event is chained to the one before it in its stream by a hash, and the workspace’s streams to one head.
        Verifying recomputes every hash from the stored events.
      </p>
      <section aria-labelledby="verify">
        <h2 id="verify">Verify the chains</h2>
        <form method="post" action="${base}/verify">
          ${csrf}
          ${field({
            name: 'anchor',
            label: 'A head you kept (optional)',
            value: o.anchor ?? '',
            hint: 'As verify or an export printed it: <64 hex characters>@<transaction>/<position>.',
            error: errors.anchor,
          })}
          <button type="submit">Verify</button>
        </form>
        ${o.result ? outcome(o.result, Boolean(o.anchor)) : ''}
      </section>
      ${exportForm}
      <script src="/console/assets/copy.js"></script>`,
  );
}

const VerifyBody = formBody({
  anchor: OptionalText({
    max: 200,
    message: 'This is not a head: it reads <64 hex characters>@<transaction>/<position>.',
  }),
});
// A password is whatever its owner chose: any text the edge checks let through, up to a bound.
const ExportBody = formBody({ password: Type.Optional(Type.String({ maxLength: 1024 })) });

export function registerAuditPages(app: TypedApp, services: AppServices): void {
  app.get('/assets/copy.js', { config: { console: 'open' } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(COPY_SCRIPT),
  );

  app.get(
    '/w/:slug/audit',
    { schema: { params: SlugParams }, config: { console: { operation: 'audit.verify' } } },
    async (request, reply) => sendPage(reply, auditPage(services, viewOf(request))),
  );

  app.post(
    '/w/:slug/audit/verify',
    {
      schema: { params: SlugParams, body: VerifyBody },
      config: {
        console: { operation: 'audit.verify' },
        onInvalid: (request, errors) =>
          auditPage(services, viewOf(request), { anchor: partsAsText(request).body.anchor, errors }),
      },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const text = (request.body.anchor ?? '').trim();
      const anchor = text ? parseAnchor(text) : undefined;
      if (anchor === null)
        return sendPage(
          reply,
          auditPage(services, view, {
            anchor: text,
            errors: { anchor: 'This is not a head: it reads <64 hex characters>@<transaction>/<position>.' },
          }),
          400,
        );
      const result = await verifyAgainst(services, view.workspace.id, anchor);
      return sendPage(reply, auditPage(services, view, { result, anchor: text }), result.result.broken ? 409 : 200);
    },
  );

  app.post(
    '/w/:slug/audit/export',
    {
      schema: { params: SlugParams, body: ExportBody },
      config: { console: { operation: 'workspace.export' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      try {
        await allowRecent(services, view, 'workspace.export', request.body);
      } catch (error) {
        if (error instanceof ConsoleRefusal && error.field)
          return sendPage(reply, auditPage(services, view, { errors: { [error.field]: error.message } }), error.status);
        throw error;
      }
      const now = services.now();
      const lines = Readable.from(exportLines(services.pool, view.workspace, null, now));
      const gzip = zlib.createGzip();
      lines.on('error', (error) => gzip.destroy(error));
      const name = `${view.workspace.slug}-log-${now.toISOString().slice(0, 19).replaceAll(':', '')}Z.ndjson.gz`;
      reply
        .type('application/gzip')
        .header('content-disposition', `attachment; filename="${name}"`)
        .header('content-security-policy', "default-src 'none'");
      return reply.send(lines.pipe(gzip));
    },
  );
}
