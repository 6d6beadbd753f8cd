import { escape, html, raw, type Html } from '../../console/html.js';
import {
  CHANGELOG,
  CURRENT_PAYLOAD_VERSION,
  FIRST_PAYLOAD_VERSION,
  VERSION_HEADER,
} from '../../webhooks/versions/index.js';
import type { TypedApp } from '../typed-app.js';

/** A changelog sentence: `code` spans become <code>, everything else is escaped. */
const sentence = (text: string): Html =>
  raw(
    text
      .split('`')
      .map((part, i) => (i % 2 === 1 ? `<code>${escape(part)}</code>` : escape(part)))
      .join(''),
  );

/** The changelog page: every payload version, newest first, with what it changed. Plain HTML, no script or style. */
export function payloadVersionsPage(): string {
  return `<!doctype html>${
    html`<html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>Webhook payload versions</title>
      </head>
      <body>
        <main>
          <h1>Webhook payload versions</h1>
          <p>
            Events are stored once; each payload version is a shape they are rendered in. An endpoint keeps the version
            it was created on (its <code>payload_version</code>; new endpoints get ${CURRENT_PAYLOAD_VERSION}) until its
            owner changes it with <code>PATCH /v1/webhooks/{id}</code> or in the console; only the deliveries made after
            the change are in the new version, and a resend keeps the version of the delivery it resends. GET /v1/events
            and GET /v1/events/{id} answer in the version the <code>${VERSION_HEADER}</code> request header names, else
            the workspace's default (workspaces made before versions existed: ${FIRST_PAYLOAD_VERSION}), and say which
            in the same answer header.
          </p>
          ${CHANGELOG.map(
            (entry) =>
              html`<section aria-labelledby="v-${entry.version}">
                <h2 id="v-${entry.version}">
                  ${entry.version}${entry.version === CURRENT_PAYLOAD_VERSION ? ' (current)' : ''}
                </h2>
                <p>${sentence(entry.summary)}</p>
                <ul>
                  ${entry.changes.map((change) => html`<li>${sentence(change)}</li>`)}
                </ul>
              </section>`,
          )}
        </main>
      </body>
    </html>`.text
  }`;
}

const CSP = "default-src 'none'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/** GET /docs/payload-versions: the changelog of payload versions, served beside the API's reference. */
export function registerPayloadVersionRoutes(app: TypedApp): void {
  const page = payloadVersionsPage();
  app.get('/docs/payload-versions', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('x-frame-options', 'DENY')
      .type('text/html; charset=utf-8')
      .send(page),
  );
}
