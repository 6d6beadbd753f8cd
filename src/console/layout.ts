import { html, type Html } from './html.js';

export interface PageFrame {
  title: string;
  /** The signed-in member's name and the workspace in view, for the header and its navigation. */
  who?: { name: string; csrf: string };
  workspace?: { slug: string; name: string; role: string };
  /** Which navigation entry is the current page. */
  current?: string;
}

function nav(frame: PageFrame): Html | string {
  if (!frame.who) return '';
  const ws = frame.workspace;
  const link = (href: string, label: string) =>
    html`<li><a href="${href}" ${frame.current === label ? html`aria-current="page"` : ''}>${label}</a></li>`;
  return html`<nav aria-label="Console">
    <ul>
      ${link('/console', 'Workspaces')}
      ${
        ws
          ? [
              link(`/console/w/${ws.slug}/leads`, 'Leads'),
              link(`/console/w/${ws.slug}/applications`, 'Applications'),
              link(`/console/w/${ws.slug}/tasks`, 'Tasks'),
              link(`/console/w/${ws.slug}/invoices`, 'Invoices'),
              link(`/console/w/${ws.slug}/keys`, 'API keys'),
              link(`/console/w/${ws.slug}/webhooks`, 'Webhooks'),
              link(`/console/w/${ws.slug}/members`, 'Members'),
              link(`/console/w/${ws.slug}/audit`, 'Audit'),
            ]
          : ''
      }
      ${link('/console/account', 'Account')}
    </ul>
    <form method="post" action="/console/sign-out">
      <input type="hidden" name="_csrf" value="${frame.who.csrf}" />
      <button type="submit">Sign out</button>
    </form>
  </nav>`;
}

/** Every console page: landmarks, a skip link, the title first in the main region. */
export function page(frame: PageFrame, body: Html): string {
  const title = frame.workspace ? `${frame.title} · ${frame.workspace.name}` : frame.title;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · visa-crm console</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
      </head>
      <body>
        <a class="skip" href="#main">Skip to the content</a>
        <header>
          <p class="brand">
            visa-crm
            console${frame.workspace ? html` · <strong>${frame.workspace.name}</strong> <span class="role">(${frame.workspace.role})</span>` : ''}${frame.who ? html` · ${frame.who.name}` : ''}
          </p>
          ${nav(frame)}
        </header>
        <main id="main" tabindex="-1">
          <h1>${frame.title}</h1>
          ${body}
        </main>
        <footer><p>visa-crm-api</p></footer>
        <script src="/console/assets/passkeys.js" defer></script>
      </body>
    </html>`.text;
}

/** A form field with its label and, when refused, the refusal in words right under it (tied by aria-describedby). */
export function field(o: {
  name: string;
  label: string;
  type?: string;
  value?: string;
  error?: string;
  hint?: string;
  required?: boolean;
  autocomplete?: string;
}): Html {
  const id = `f-${o.name}`;
  const described = [o.hint ? `${id}-hint` : '', o.error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field${o.error ? ' invalid' : ''}">
    <label for="${id}">${o.label}</label>
    ${o.hint ? html`<p class="hint" id="${id}-hint">${o.hint}</p>` : ''}
    <input
      id="${id}"
      name="${o.name}"
      type="${o.type ?? 'text'}"
      value="${o.value ?? ''}"
      ${o.required ? html`required` : ''}
      ${o.autocomplete ? html`autocomplete="${o.autocomplete}"` : ''}
      ${described ? html`aria-describedby="${described}"` : ''}
      ${o.error ? html`aria-invalid="true"` : ''}
    />
    ${o.error ? html`<p class="error" id="${id}-error">${o.error}</p>` : ''}
  </div>`;
}

/** A select of (value, label) pairs with an empty first choice. */
export function choice(o: {
  name: string;
  label: string;
  options: readonly (readonly [string, string])[];
  value?: string;
  empty?: string;
  error?: string;
}): Html {
  const id = `f-${o.name}`;
  return html`<div class="field${o.error ? ' invalid' : ''}">
    <label for="${id}">${o.label}</label>
    <select id="${id}" name="${o.name}" ${o.error ? html`aria-invalid="true" aria-describedby="${id}-error"` : ''}>
      ${o.empty !== undefined ? html`<option value="">${o.empty}</option>` : ''}
      ${o.options.map(([v, l]) => html`<option value="${v}" ${v === o.value ? html`selected` : ''}>${l}</option>`)}
    </select>
    ${o.error ? html`<p class="error" id="${id}-error">${o.error}</p>` : ''}
  </div>`;
}

/** A select whose values are their own labels (an empty value reads "any"). */
export function select(o: {
  name: string;
  label: string;
  options: readonly string[];
  value?: string;
  error?: string;
}): Html {
  return choice({ ...o, options: o.options.map((v) => [v, v || 'any'] as const) });
}

export const csrfField = (csrf: string) => html`<input type="hidden" name="_csrf" value="${csrf}" />`;

/** A message for the whole page (an outcome or a refusal not about one field). */
export function notice(text: string | undefined, kind: 'status' | 'alert' = 'status'): Html | string {
  return text ? html`<p class="notice ${kind}" role="${kind}">${text}</p>` : '';
}

export const CONSOLE_CSS = `
:root { color-scheme: light; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; color: #1a1a1a; background: #fff; }
header, main, footer { padding: 0.75rem 1rem; max-width: 60rem; margin: 0 auto; }
header { border-bottom: 1px solid #767676; }
nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: 0.75rem; padding: 0; margin: 0.25rem 0; }
nav form { display: inline; }
a { color: #0b4fa8; }
a[aria-current="page"] { font-weight: bold; }
.skip, .visually-hidden { position: absolute; left: -9999px; width: 1px; height: 1px; overflow: hidden; }
.skip:focus { left: 1rem; top: 0.5rem; background: #fff; padding: 0.25rem; }
:focus-visible { outline: 3px solid #b35c00; outline-offset: 2px; }
.field { margin: 0.75rem 0; }
label { display: block; font-weight: 600; }
input, select, button, textarea { font: inherit; padding: 0.4rem; min-height: 2.25rem; max-width: 100%; }
input[type="checkbox"] { min-height: auto; }
button { background: #0b4fa8; color: #fff; border: 1px solid #0b4fa8; border-radius: 4px; cursor: pointer; }
button.danger { background: #a50e0e; border-color: #a50e0e; }
.error { color: #a50e0e; margin: 0.25rem 0; }
.invalid input, .invalid select { border: 2px solid #a50e0e; }
.hint, .role { color: #4a4a4a; }
.notice { padding: 0.5rem; border-left: 4px solid #0b4fa8; background: #eef4fc; }
.notice.alert { border-color: #a50e0e; background: #fdeeee; }
.secret { font-family: monospace; word-break: break-all; padding: 0.5rem; background: #f3f3f3; }
table { border-collapse: collapse; width: 100%; display: block; overflow-x: auto; }
th, td { text-align: left; padding: 0.3rem 0.5rem; border-bottom: 1px solid #c4c4c4; vertical-align: top; }
pre { white-space: pre-wrap; word-break: break-all; background: #f3f3f3; padding: 0.5rem; }
fieldset { border: 1px solid #767676; margin: 0.75rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
ol.timeline li { margin-bottom: 0.5rem; }
ol.timeline p { margin: 0; }
label.inline { display: inline; font-weight: normal; }
form.inline { display: inline-block; margin: 0 0.25rem 0.25rem 0; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
ol.stages li[aria-current] { font-weight: bold; }
`;

/**
 * What an operation asking for a recent sign-in adds to its form when the password was not entered lately: the
 * password field, and a button that confirms with one of the member's passkeys instead.
 */
export function signInAgain(csrf: string, error?: string): Html {
  return html`<fieldset>
    <legend>Confirm it is you</legend>
    ${field({ name: 'password', label: 'Your password', type: 'password', autocomplete: 'current-password', error })}
    <button type="button" id="passkey-confirm" data-csrf="${csrf}">Or confirm with a passkey</button>
    <p id="passkey-confirm-status" role="status"></p>
  </fieldset>`;
}
