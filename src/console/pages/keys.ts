import type { FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { createKey, listKeys, revokeKey, type ListedKey, type NewKey } from '../../keys/repository.js';
import { allowListEntries, KeyRefusal } from '../../keys/restrictions.js';
import { sandboxSubmissions } from '../../projections/leads-queries.js';
import { SCOPES, type Scope } from '../../shared/enums.js';
import { allowRecent, ConsoleRefusal, needsPassword, sendPage, type MemberView } from '../context.js';
import { phoneText } from '../labels.js';
import { html, type Html, table } from '../html.js';
import { csrfField, field, notice, page, select, signInAgain } from '../layout.js';
import { keepOneTimeSecret } from '../one-time-secret.js';
import { viewOf } from '../routes.js';
import { momentOf, timeZoneOf, when } from '../time.js';

type Errors = Record<string, string>;

/** Text of a form field: no NUL byte, at most `max` characters. */
const Text = (max: number) => Type.String({ maxLength: max, pattern: '^[^\\u0000]*$' });
const SlugParams = Type.Object({ slug: Type.String({ maxLength: 100 }) });
const KeyParams = Type.Object({ slug: Type.String({ maxLength: 100 }), id: Type.String({ format: 'uuid' }) });
const CsrfOnly = Type.Object({ _csrf: Type.Optional(Text(200)) });
const KeyForm = Type.Object({
  _csrf: Type.Optional(Text(200)),
  name: Type.Optional(Text(200)),
  type: Type.Optional(Text(20)),
  mode: Type.Optional(Text(20)),
  scopes: Type.Optional(Type.Union([Text(40), Type.Array(Text(40), { maxItems: 20 })])),
  origins: Type.Optional(Text(4000)),
  ips: Type.Optional(Text(4000)),
  expires: Type.Optional(Text(40)),
  password: Type.Optional(Text(1000)),
});
type Form = Static<typeof KeyForm>;

function keysTable(view: MemberView, keys: ListedKey[]): Html {
  const base = `/console/w/${view.workspace.slug}/keys`;
  return table({
    caption: 'Keys of this workspace',
    headings: [
      'Name',
      'Ends in',
      'Type',
      'Mode',
      'Scopes',
      'Allowed IPs',
      'Allowed origins',
      'Last use',
      'Expires',
      'State',
    ],
    rows: keys.map(
      (k) =>
        html`<tr>
          <td>${k.mode === 'test' ? html`<a href="${base}/${k.id}">${k.name}</a>` : k.name}</td>
          <td>…${k.last4}</td>
          <td>${k.kind}</td>
          <td>${k.mode}</td>
          <td>${k.scopes.join(', ')}</td>
          <td>${k.ip_allowlist.length ? k.ip_allowlist.join(', ') : 'any'}</td>
          <td>${k.kind === 'public' ? k.allowed_origins.join(', ') : '—'}</td>
          <td>${k.last_used_at ? when(k.last_used_at, timeZoneOf(view.workspace)) : 'never'}</td>
          <td>${when(k.expires_at, timeZoneOf(view.workspace))}</td>
          <td>
            ${
              k.revoked_at
                ? 'revoked'
                : !can(view.role, 'keys.revoke')
                  ? 'active'
                  : html`<a href="${base}/${k.id}/revoke">Revoke<span class="visually-hidden"> ${k.name}</span></a>`
            }
          </td>
        </tr>`,
    ),
  });
}

function newKeySection(services: AppServices, view: MemberView, errors: Errors, v: Form): Html | string {
  if (!can(view.role, 'keys.create')) return '';
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
function keyWanted(form: Form, type: KeyType, now: Date, zone: string): Omit<NewKey, 'tenantId'> | { errors: Errors } {
  const chosen = [form.scopes ?? []].flat();
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
  return {
    ...type,
    name,
    scopes,
    allowedOrigins: allowListEntries(form.origins),
    ipAllowlist: allowListEntries(form.ips),
    expiresAt,
  };
}

/** The create form posted: 303 to the new key's one-time page, or the form again with what is wrong by its field. */
async function createKeyAnswer(services: AppServices, view: MemberView, form: Form, reply: FastifyReply) {
  const refuse = async (errors: Errors) =>
    sendPage(reply, await keysPage(services, view, { errors, values: form }), 400);
  const type = keyType(form);
  if ('errors' in type) return refuse(type.errors);
  const operation = type.kind === 'secret' && type.mode === 'live' ? 'keys.create_live_secret' : 'keys.create';
  try {
    await allowRecent(services, view, operation, { password: form.password });
  } catch (error) {
    if (error instanceof ConsoleRefusal && error.field) return refuse({ [error.field]: error.message });
    throw error;
  }
  const wanted = keyWanted(form, type, services.now(), timeZoneOf(view.workspace));
  if ('errors' in wanted) return refuse(wanted.errors);
  let created;
  try {
    created = await createKey(services.pool, { tenantId: view.workspace.id, ...wanted });
  } catch (error) {
    if (error instanceof KeyRefusal) return refuse({ [error.about]: error.message });
    throw error;
  }
  const shown = await keepOneTimeSecret(
    services.pool,
    view.signedIn,
    {
      title: 'Your new key',
      lead: `The ${wanted.mode} ${wanted.kind} key “${wanted.name}” is ready.`,
      value: created.value,
      back: { href: `/console/w/${view.workspace.slug}/keys`, label: 'Back to the keys' },
    },
    services.now(),
  );
  return reply.redirect(shown, 303);
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
          <td>${phoneText(s.phone)}</td>
        </tr>`,
    ),
  });
}

/** A key of the workspace by the id in the path, or not found. */
async function keyOf(services: AppServices, view: MemberView, id: string): Promise<ListedKey> {
  const key = (await listKeys(services.pool, view.workspace.id)).find((k) => k.id === id);
  if (!key) throw new ConsoleRefusal(404, 'No such key in this workspace.');
  return key;
}

export function registerKeyPages(app: TypedApp, services: AppServices): void {
  app.get(
    '/w/:slug/keys',
    { schema: { params: SlugParams }, config: { console: { operation: 'keys.view' } } },
    async (request, reply) => sendPage(reply, await keysPage(services, viewOf(request))),
  );

  app.post(
    '/w/:slug/keys',
    { schema: { params: SlugParams, body: KeyForm }, config: { console: { operation: 'keys.create' } } },
    async (request, reply) => createKeyAnswer(services, viewOf(request), request.body, reply),
  );

  app.get(
    '/w/:slug/keys/:id/revoke',
    { schema: { params: KeyParams }, config: { console: { operation: 'keys.revoke' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const key = await keyOf(services, view, request.params.id);
      return sendPage(
        reply,
        page(
          view.frame('Revoke a key', 'API keys'),
          html`<p>
              Revoke the ${key.mode} ${key.kind} key <strong>${key.name}</strong> (ending ${key.last4})? Requests with
              it are refused from now on; this cannot be undone.
            </p>
            <form method="post" action="/console/w/${view.workspace.slug}/keys/${key.id}/revoke">
              ${csrfField(view.signedIn.csrf)} <button type="submit" class="danger">Revoke the key</button>
              <a href="/console/w/${view.workspace.slug}/keys">Keep it</a>
            </form>`,
        ),
      );
    },
  );

  app.post(
    '/w/:slug/keys/:id/revoke',
    { schema: { params: KeyParams, body: CsrfOnly }, config: { console: { operation: 'keys.revoke' } } },
    async (request, reply) => {
      const view = viewOf(request);
      if (!(await revokeKey(services.pool, view.workspace.id, request.params.id)))
        throw new ConsoleRefusal(404, 'No such key in this workspace.');
      return reply.redirect(`/console/w/${view.workspace.slug}/keys`, 303);
    },
  );

  app.get(
    '/w/:slug/keys/:id',
    { schema: { params: KeyParams }, config: { console: { operation: 'sandbox.view' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const key = await keyOf(services, view, request.params.id);
      if (key.mode !== 'test') throw new ConsoleRefusal(404, 'No such test key in this workspace.');
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
    },
  );
}
