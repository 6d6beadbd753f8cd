import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { createKey, KeyRefusal, listKeys, revokeKey, type ListedKey, type NewKey } from '../../keys/repository.js';
import { sandboxSubmissions } from '../../projections/leads-queries.js';
import { SCOPES, type Scope } from '../../shared/enums.js';
import {
  allow,
  allowRecent,
  ConsoleRefusal,
  formList,
  formOf,
  memberView,
  needsPassword,
  sendPage,
  type MemberView,
} from '../context.js';
import { momentOf, timeZoneOf, when } from '../time.js';
import { html, type Html, table } from '../html.js';
import { csrfField, field, notice, page, select, signInAgain } from '../layout.js';

const lines = (text: string | undefined) =>
  (text ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);

type Errors = Record<string, string>;
type Form = Record<string, string | undefined>;

function keysTable(view: MemberView, keys: ListedKey[]): Html {
  const base = `/console/w/${view.workspace.slug}/keys`;
  return table({
    caption: 'Keys of this workspace',
    headings: ['Name', 'Ends in', 'Type', 'Mode', 'Scopes', 'Last use', 'Expires', 'State'],
    rows: keys.map(
      (k) =>
        html`<tr>
          <td>${k.mode === 'test' ? html`<a href="${base}/${k.id}">${k.name}</a>` : k.name}</td>
          <td>…${k.last4}</td>
          <td>${k.kind}</td>
          <td>${k.mode}</td>
          <td>${k.scopes.join(', ')}</td>
          <td>${k.last_used_at ? when(k.last_used_at, timeZoneOf(view.workspace)) : 'never'}</td>
          <td>${when(k.expires_at, timeZoneOf(view.workspace))}</td>
          <td>
            ${
              k.revoked_at
                ? 'revoked'
                : html`<a href="${base}/${k.id}/revoke">Revoke<span class="visually-hidden"> ${k.name}</span></a>`
            }
          </td>
        </tr>`,
    ),
  });
}

function newKeySection(services: AppServices, view: MemberView, errors: Errors, v: Form): Html {
  return html`<section aria-labelledby="new">
    <h2 id="new">Create a key</h2>
    <form method="post" action="/console/w/${view.workspace.slug}/keys">
      ${csrfField(view.signedIn.csrf)}
      ${field({ name: 'name', label: 'Name', value: v.name ?? '', required: true, error: errors.name })}
      ${select({ name: 'type', label: 'Type', options: ['secret', 'public'], value: v.type ?? 'secret', error: errors.type })}
      ${select({ name: 'mode', label: 'Mode', options: ['test', 'live'], value: v.mode ?? 'test', error: errors.mode })}
      <fieldset>
        <legend>Scopes (none chosen: every scope for a secret key, leads:create for a public one)</legend>
        ${SCOPES.map((s) => html`<div><input type="checkbox" id="scope-${s}" name="scopes" value="${s}" /> <label for="scope-${s}" class="inline">${s}</label></div>`)}
        ${errors.scopes ? html`<p class="error">${errors.scopes}</p>` : ''}
      </fieldset>
      ${field({ name: 'origins', label: 'Allowed origins (public keys)', value: v.origins ?? '', hint: 'Separated by spaces or commas, e.g. https://www.example.com', error: errors.origins })}
      ${field({ name: 'ips', label: 'Allowed IP addresses or ranges', value: v.ips ?? '', hint: 'Separated by spaces or commas; empty: any.', error: errors.ips })}
      ${field({ name: 'expires', label: 'Expires at', type: 'datetime-local', value: v.expires ?? '', hint: `In ${timeZoneOf(view.workspace)}; empty: never.`, error: errors.expires })}
      ${needsPassword(services, view.signedIn, 'keys.create_live_secret') ? signInAgain(view.signedIn.csrf, errors.password) : ''}
      <button type="submit">Create key</button>
    </form>
  </section>`;
}

async function keysPage(
  services: AppServices,
  view: MemberView,
  o: { errors?: Errors; values?: Form } = {},
): Promise<string> {
  allow(view, 'keys.view');
  const keys = await listKeys(services.pool, view.workspace.id);
  return page(
    view.frame('API keys', 'API keys'),
    html`${keysTable(view, keys)} ${newKeySection(services, view, o.errors ?? {}, o.values ?? {})}`,
  );
}

type KeyType = Pick<NewKey, 'kind' | 'mode'>;

/** The type and mode the form chose, or which of them it did not. */
function keyType(form: Form): KeyType | { errors: Errors } {
  const kind = form.type === 'public' ? 'public' : form.type === 'secret' ? 'secret' : undefined;
  const mode = form.mode === 'live' ? 'live' : form.mode === 'test' ? 'test' : undefined;
  if (!kind) return { errors: { type: 'Choose secret or public.' } };
  if (!mode) return { errors: { mode: 'Choose test or live.' } };
  return { kind, mode };
}

/** The key the form asks for (scopes, expiry, name, origins, addresses), or the first thing wrong with it. */
function keyWanted(
  request: FastifyRequest,
  form: Form,
  type: KeyType,
  now: Date,
  zone: string,
): Omit<NewKey, 'tenantId'> | { errors: Errors } {
  const chosen = formList(request, 'scopes');
  const unknown = chosen.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length) return { errors: { scopes: `Unknown scope: ${unknown.join(', ')}.` } };
  const scopes = (chosen.length ? chosen : type.kind === 'public' ? ['leads:create'] : [...SCOPES]) as Scope[];
  let expiresAt: Date | null = null;
  if (form.expires) {
    const at = momentOf(form.expires, zone);
    if (typeof at === 'string') return { errors: { expires: at } };
    expiresAt = at;
    if (expiresAt.getTime() <= now.getTime()) return { errors: { expires: 'Choose a time in the future.' } };
  }
  const name = (form.name ?? '').trim();
  if (!name || name.length > 100) return { errors: { name: 'Give the key a name of up to 100 characters.' } };
  return { ...type, name, scopes, allowedOrigins: lines(form.origins), ipAllowlist: lines(form.ips), expiresAt };
}

/** A refusal of createKey next to the field it concerns; undefined for an error that is not a refusal. */
function keyRefusal(error: unknown): Errors | undefined {
  if (error instanceof KeyRefusal) {
    const about = /origin/i.test(error.message)
      ? 'origins'
      : /ip|cidr|address/i.test(error.message)
        ? 'ips'
        : /scope/i.test(error.message)
          ? 'scopes'
          : 'name';
    return { [about]: error.message };
  }
  if (error instanceof TypeError)
    return { origins: 'Each origin must be a full address like https://www.example.com.' };
  return undefined;
}

/** The new key's value, on this answer only: never cached (the console's every page is no-store), never shown again. */
function newKeyPage(view: MemberView, key: Omit<NewKey, 'tenantId'>, value: string): string {
  return page(
    view.frame('Your new key', 'API keys'),
    html`<div role="status">
        <p>
          The ${key.mode} ${key.kind} key <strong>${key.name}</strong> is ready. Copy it now: it is shown this once and
          never again.
        </p>
        <p class="secret" id="new-key">${value}</p>
      </div>
      <p><a href="/console/w/${view.workspace.slug}/keys">Back to the keys</a></p>`,
  );
}

/** The create form posted: the new key's page, or the form again with what is wrong next to its field. */
async function createKeyAnswer(services: AppServices, request: FastifyRequest, reply: FastifyReply) {
  const view = await memberView(services, request);
  const form = formOf(request);
  const refuse = async (errors: Errors) =>
    sendPage(reply, await keysPage(services, view, { errors, values: form }), 400);
  const type = keyType(form);
  if ('errors' in type) return refuse(type.errors);
  const operation = type.kind === 'secret' && type.mode === 'live' ? 'keys.create_live_secret' : 'keys.create';
  try {
    await allowRecent(services, view, operation, form);
  } catch (error) {
    if (error instanceof ConsoleRefusal && error.field) return refuse({ [error.field]: error.message });
    throw error;
  }
  const wanted = keyWanted(request, form, type, services.now(), timeZoneOf(view.workspace));
  if ('errors' in wanted) return refuse(wanted.errors);
  let created;
  try {
    created = await createKey(services.pool, { tenantId: view.workspace.id, ...wanted });
  } catch (error) {
    const refused = keyRefusal(error);
    if (!refused) throw error;
    return refuse(refused);
  }
  return sendPage(reply, newKeyPage(view, wanted, created.value), 201);
}

/** What was sent with a test key: each submission and how it ended. */
function submissionsTable(submissions: Awaited<ReturnType<typeof sandboxSubmissions>>, zone: string): Html {
  return table({
    caption: 'Leads sent with this key, newest first',
    headings: ['Received', 'Outcome', 'Name', 'Email', 'Phone'],
    rows: submissions.map(
      (s) =>
        html`<tr>
          <td>${when(s.received_at, zone)}</td>
          <td>${s.outcome}</td>
          <td>${s.full_name}</td>
          <td>${s.email ?? ''}</td>
          <td>${s.phone ?? ''}</td>
        </tr>`,
    ),
  });
}

export function registerKeyPages(app: TypedApp, services: AppServices): void {
  app.get('/w/:slug/keys', async (request, reply) => {
    const view = await memberView(services, request);
    return sendPage(reply, await keysPage(services, view));
  });

  app.post('/w/:slug/keys', async (request, reply) => createKeyAnswer(services, request, reply));

  app.get('/w/:slug/keys/:id/revoke', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'keys.revoke');
    const key = (await listKeys(services.pool, view.workspace.id)).find(
      (k) => k.id === (request.params as { id: string }).id,
    );
    if (!key) throw new ConsoleRefusal(404, 'No such key in this workspace.');
    return sendPage(
      reply,
      page(
        view.frame('Revoke a key', 'API keys'),
        html`<p>
            Revoke the ${key.mode} ${key.kind} key <strong>${key.name}</strong> (ending ${key.last4})? Requests with it
            are refused from now on; this cannot be undone.
          </p>
          <form method="post" action="/console/w/${view.workspace.slug}/keys/${key.id}/revoke">
            ${csrfField(view.signedIn.csrf)} <button type="submit" class="danger">Revoke the key</button>
            <a href="/console/w/${view.workspace.slug}/keys">Keep it</a>
          </form>`,
      ),
    );
  });

  app.post('/w/:slug/keys/:id/revoke', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'keys.revoke');
    const id = (request.params as { id: string }).id;
    if (!/^[0-9a-f-]{36}$/.test(id) || !(await revokeKey(services.pool, view.workspace.id, id)))
      throw new ConsoleRefusal(404, 'No such key in this workspace.');
    return reply.redirect(`/console/w/${view.workspace.slug}/keys`, 303);
  });

  app.get('/w/:slug/keys/:id', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'sandbox.view');
    const key = (await listKeys(services.pool, view.workspace.id)).find(
      (k) => k.id === (request.params as { id: string }).id,
    );
    if (!key || key.mode !== 'test') throw new ConsoleRefusal(404, 'No such test key in this workspace.');
    const submissions = await sandboxSubmissions(services.pool, services.personalData, view.workspace.id, key.id);
    return sendPage(
      reply,
      page(
        view.frame(`Test key ${key.name}`, 'API keys'),
        html`<p>Ends in …${key.last4}; scopes ${key.scopes.join(', ')}.</p>
          <h2>Sandbox submissions</h2>
          ${submissions.length === 0 ? notice('Nothing has been sent with this key yet.') : ''}
          ${submissionsTable(submissions, timeZoneOf(view.workspace))}`,
      ),
    );
  });
}
