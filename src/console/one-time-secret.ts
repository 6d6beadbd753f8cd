import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import type { AppServices } from '../bootstrap.js';
import type { TypedApp } from '../http/typed-app.js';
import { secretHash } from '../identity/secrets.js';
import type { Queryable } from '../storage/postgres.js';
import { frameOf, sendPage, signedInOf, type SignedIn } from './context.js';
import { html, type Html } from './html.js';
import { notice, page } from './layout.js';

/*
 * A secret shown once (an API key, a webhook signing secret, a personal access token). The POST that makes it keeps it
 * sealed for the member's session and answers 303 to a page that shows it and forgets it: a reload neither shows it
 * again nor re-posts the form. Only the session's cookie opens it (its hash is all the table holds).
 */

/** What the page says about the secret, and where it leads back to. */
export interface OneTimeSecret {
  title: string;
  /** What the secret is, in a sentence before it. */
  lead: string;
  value: string;
  back: { href: string; label: string };
}

/** How long a kept secret waits for its page: the redirect is followed at once, so minutes are plenty. */
export const ONE_TIME_SECRET_TTL_MS = 10 * 60_000;

const INFO = 'visa-crm/console-one-time-secret/v1';
const keyFor = (sessionId: string, id: string) => Buffer.from(hkdfSync('sha256', sessionId, id, INFO, 32));

function seal(sessionId: string, id: string, secret: OneTimeSecret): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(sessionId, id), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(secret), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

function open(sessionId: string, id: string, sealed: string): OneTimeSecret {
  const bytes = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', keyFor(sessionId, id), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  const text = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
  return JSON.parse(text) as OneTimeSecret;
}

/** Keeps the secret for this session's next visit of the returned path (where the POST redirects, 303). */
export async function keepOneTimeSecret(
  sql: Queryable,
  signedIn: Pick<SignedIn, 'sessionId'>,
  secret: OneTimeSecret,
  now: Date,
): Promise<string> {
  const id = randomUUID();
  await sql.query('DELETE FROM console_one_time_secrets WHERE expires_at < $1', [now]);
  await sql.query(
    'INSERT INTO console_one_time_secrets (id, session_hash, sealed, expires_at) VALUES ($1, $2, $3, $4)',
    [
      id,
      secretHash(signedIn.sessionId),
      seal(signedIn.sessionId, id, secret),
      new Date(now.getTime() + ONE_TIME_SECRET_TTL_MS),
    ],
  );
  return `/console/once/${id}`;
}

/** The kept secret, removed as it is read; undefined when shown already, expired, or another session's. */
export async function takeOneTimeSecret(
  sql: Queryable,
  signedIn: Pick<SignedIn, 'sessionId'>,
  id: string,
  now: Date,
): Promise<OneTimeSecret | undefined> {
  const result = await sql.query<{ sealed: string }>(
    `DELETE FROM console_one_time_secrets WHERE id = $1 AND session_hash = $2 AND expires_at >= $3 RETURNING sealed`,
    [id, secretHash(signedIn.sessionId), now],
  );
  const row = result.rows[0];
  return row ? open(signedIn.sessionId, id, row.sealed) : undefined;
}

/** The secret at the top of its page, with a copy button; the script moves focus to it. */
export function oneTimeSecret(secret: OneTimeSecret): Html {
  return html`<section class="one-time" aria-labelledby="one-time-lead">
    <p id="one-time-lead">${secret.lead} It is shown this once: copy it now.</p>
    <p><code class="secret" id="one-time-value" tabindex="-1">${secret.value}</code></p>
    <p>
      <button type="button" data-copy="one-time-value" hidden>Copy</button>
      <span id="one-time-value-copied" role="status"></span>
    </p>
  </section>`;
}

/** The component's script (CSP script-src 'self'): focus on the secret, and the copy button. */
export const ONE_TIME_SECRET_SCRIPT = `'use strict';
(function () {
  var value = document.getElementById('one-time-value');
  if (!value) return;
  value.focus();
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    button.hidden = false;
    button.addEventListener('click', function () {
      var said = document.getElementById(button.getAttribute('data-copy') + '-copied');
      navigator.clipboard.writeText(value.textContent.trim()).then(
        function () { said.textContent = 'Copied.'; },
        function () { said.textContent = 'Could not copy: select the text and copy it.'; }
      );
    });
  });
})();
`;

const OnceParams = Type.Object({ id: Type.String({ format: 'uuid' }) });

/** The page that shows a kept secret once, and its script. */
export function registerOneTimeSecretPages(app: TypedApp, services: AppServices): void {
  app.get('/assets/one-time-secret.js', { config: { console: 'open' } }, async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .send(ONE_TIME_SECRET_SCRIPT),
  );

  app.get('/once/:id', { schema: { params: OnceParams }, config: { console: 'account' } }, async (request, reply) => {
    const secret = await takeOneTimeSecret(services.pool, signedInOf(request), request.params.id, services.now());
    if (!secret)
      return sendPage(
        reply,
        page(
          frameOf(request, 'Shown once already'),
          html`${notice('This secret was shown once and is no longer available here. If it was not copied, make a new one.', 'alert')}`,
        ),
        410,
      );
    return sendPage(
      reply,
      page(
        frameOf(request, secret.title),
        html`${oneTimeSecret(secret)}
          <p><a href="${secret.back.href}">${secret.back.label}</a></p>
          <script src="/console/assets/one-time-secret.js" defer></script>`,
      ),
    );
  });
}
