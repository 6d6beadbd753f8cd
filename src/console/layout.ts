import { can, ROLES, type Operation, type Role } from '../identity/permissions.js';
import { html, type Html } from './html.js';

export interface PageFrame {
  title: string;
  /** The signed-in member's name and the workspace in view, for the header and its navigation. */
  who?: { name: string; csrf: string };
  workspace?: { slug: string; name: string; role: string };
  /** The member's other workspaces, for the switcher (when the page knows them). */
  workspaces?: readonly { slug: string; name: string }[];
  /** Which navigation entry is the current page. */
  current?: string;
  /** What the header's search box holds (the search page shows the query it answered). */
  query?: string;
}

/** The workspace's pages in the navigation, each shown only to roles the permission table allows its operation. */
export const NAVIGATION: readonly { label: string; path: string; operation: Operation }[] = [
  { label: 'Today', path: '', operation: 'workspace.view' },
  { label: 'Leads', path: '/leads', operation: 'leads.view' },
  { label: 'Applications', path: '/applications', operation: 'applications.view' },
  { label: 'Tasks', path: '/tasks', operation: 'tasks.view' },
  { label: 'Invoices', path: '/invoices', operation: 'invoices.view' },
  { label: 'API keys', path: '/keys', operation: 'keys.view' },
  { label: 'Webhooks', path: '/webhooks', operation: 'webhooks.view' },
  { label: 'Members', path: '/members', operation: 'members.view' },
  { label: 'Audit', path: '/audit', operation: 'audit.verify' },
  { label: 'Settings', path: '/settings', operation: 'workspace.settings' },
];

/** The navigation entries a role sees. */
export function navigationFor(role: Role): typeof NAVIGATION {
  return NAVIGATION.filter((entry) => can(role, entry.operation));
}

const isRole = (value: string): value is Role => (ROLES as readonly string[]).includes(value);

function nav(frame: PageFrame): Html | string {
  const ws = frame.workspace;
  if (!frame.who || !ws || !isRole(ws.role)) return '';
  return html`<nav class="primary" aria-label="Workspace">
    <ul>
      ${navigationFor(ws.role).map(
        (entry) =>
          html`<li>
            <a
              href="/console/w/${ws.slug}${entry.path}"
              ${frame.current === entry.label ? html`aria-current="page"` : ''}
              >${entry.label}</a
            >
          </li>`,
      )}
    </ul>
  </nav>`;
}

/** The workspace in view and a way to the member's others (a disclosure: no script needed). */
function switcher(frame: PageFrame): Html | string {
  const ws = frame.workspace;
  if (!frame.who) return '';
  const others = (frame.workspaces ?? []).filter((w) => w.slug !== ws?.slug);
  return html`<details class="menu switcher">
    <summary>
      ${ws ? html`<span class="visually-hidden">Workspace: </span>${ws.name} ${badge(ws.role, 'info')}` : 'Workspaces'}
    </summary>
    <ul>
      ${others.map((w) => html`<li><a href="/console/w/${w.slug}">${w.name}</a></li>`)}
      <li>
        <a href="/console" ${frame.current === 'Workspaces' ? html`aria-current="page"` : ''}>All your workspaces</a>
      </li>
    </ul>
  </details>`;
}

/** The one search box, on every page of a workspace: leads, cases, invoices, tasks and members (src/console/pages/search.ts). */
function searchBox(frame: PageFrame): Html | string {
  const ws = frame.workspace;
  if (!frame.who || !ws) return '';
  return html`<form
    class="site-search"
    method="get"
    action="/console/w/${ws.slug}/search"
    role="search"
    aria-label="Search this workspace"
  >
    <label for="site-search-q" class="visually-hidden">Search leads, cases, invoices, tasks and members</label>
    <input
      id="site-search-q"
      name="q"
      type="search"
      placeholder="Name, phone, email, case or invoice number"
      value="${frame.query ?? ''}"
    />
    <button type="submit">Search</button>
  </form>`;
}

/** The member's menu: their account and signing out. */
function memberMenu(frame: PageFrame): Html | string {
  if (!frame.who) return '';
  return html`<details class="menu member">
    <summary><span class="visually-hidden">Signed in as </span>${frame.who.name}</summary>
    <ul>
      <li><a href="/console/account" ${frame.current === 'Account' ? html`aria-current="page"` : ''}>Account</a></li>
      <li>
        <form method="post" action="/console/sign-out">
          <input type="hidden" name="_csrf" value="${frame.who.csrf}" />
          <button type="submit" class="link">Sign out</button>
        </form>
      </li>
    </ul>
  </details>`;
}

/** Every console page: landmarks, a skip link, one header (switcher, member's menu, navigation), the title first. */
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
        <header class="top">
          <div class="bar">
            <a class="brand" href="/console">visa-crm</a>
            ${searchBox(frame)} ${switcher(frame)} ${memberMenu(frame)}
          </div>
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

/** How a status reads at a glance; its words always say it too (colour is never the only signal). */
export type BadgeTone = 'ok' | 'warn' | 'bad' | 'info' | 'neutral';

/** A status as a labelled badge: the word itself, in a tone's colour and border. */
export function badge(label: string, tone: BadgeTone = 'neutral'): Html {
  return html`<span class="badge badge-${tone}">${label}</span>`;
}

/**
 * A list's filters as one GET form in a compact row: the always-visible fields (a search box) first, the others in a
 * disclosure that is open only while one of them is set, and a link that clears them all. The values stay in the URL.
 */
export function filters(o: {
  action: string;
  label: string;
  /** Fields shown at all times (a search box), if any. */
  main?: Html;
  /** The other fields, each a `field`, `choice` or `select`. */
  more: Html;
  /** How many of the other fields are set (opens the disclosure when not 0). */
  active: number;
}): Html {
  return html`<form method="get" action="${o.action}" class="filters" role="search" aria-label="${o.label}">
    <div class="filter-row">
      ${o.main ?? ''}
      <details class="more-filters" ${o.active > 0 ? html`open` : ''}>
        <summary>More filters${o.active > 0 ? ` (${o.active} set)` : ''}</summary>
        <div class="filter-row">${o.more}</div>
      </details>
      <div class="filter-actions">
        <button type="submit">Apply</button>
        <a href="${o.action}">Clear</a>
      </div>
    </div>
  </form>`;
}

/** A list's result count, said as a status ("3 leads", "50 leads shown; more on the next page"). */
export function resultCount(shown: number, noun: { one: string; many: string }, more = false): Html {
  const what = `${shown} ${shown === 1 ? noun.one : noun.many}`;
  return html`<p class="count" role="status">${more ? `${what} shown; more on the next page` : what}</p>`;
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
/* The console's own stylesheet: plain CSS, no build step. Colours pass WCAG AA on white. */
:root {
  color-scheme: light; font-family: system-ui, sans-serif; line-height: 1.45; font-size: 15px;
  --ink: #1a1a1a; --muted: #4a4a4a; --line: #c4c4c4; --link: #0b4fa8; --bad: #a50e0e; --ok: #1d6b2f; --warn: #8a4b00;
  --panel: #f5f6f8;
}
*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; }
main, footer { padding: 0.75rem 1rem; max-width: 100rem; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: 0.25rem 0 0.75rem; }
h2 { font-size: 1.2rem; margin: 1.25rem 0 0.5rem; }
footer { color: var(--muted); font-size: 0.85rem; }
a { color: var(--link); }
a[aria-current="page"] { font-weight: bold; }

/* One header: the brand, the workspace switcher and the member's menu on one bar, the navigation in one line under it. */
header.top { border-bottom: 1px solid #767676; background: var(--panel); }
.bar { display: flex; align-items: center; gap: 0.75rem; padding: 0.4rem 1rem; max-width: 100rem; margin: 0 auto; }
.brand { font-weight: bold; text-decoration: none; color: var(--ink); margin-right: auto; }
.site-search { display: flex; gap: 0.25rem; margin: 0; flex: 0 1 24rem; }
.site-search input { flex: 1 1 auto; min-width: 0; }
ul.found { list-style: none; padding: 0; margin: 0; }
ul.found li { padding: 0.3rem 0; border-bottom: 1px solid var(--line); }
.menu { position: relative; }
.menu > summary { cursor: pointer; padding: 0.3rem 0.5rem; border: 1px solid var(--line); border-radius: 4px; background: #fff; list-style: none; }
.menu > summary::-webkit-details-marker { display: none; }
.menu > summary::after { content: " ▾"; }
.menu ul { position: absolute; right: 0; z-index: 2; min-width: 14rem; margin: 0.25rem 0 0; padding: 0.25rem 0; list-style: none; background: #fff; border: 1px solid #767676; border-radius: 4px; box-shadow: 0 2px 6px rgb(0 0 0 / 15%); }
.menu li { padding: 0.3rem 0.75rem; }
.menu form { margin: 0; }
button.link { background: none; border: 0; color: var(--link); text-decoration: underline; padding: 0; min-height: auto; }
nav.primary { max-width: 100rem; margin: 0 auto; padding: 0 1rem; overflow-x: auto; }
nav.primary ul { list-style: none; display: flex; flex-wrap: nowrap; gap: 0.25rem 1rem; padding: 0; margin: 0; white-space: nowrap; }
nav.primary a { display: inline-block; padding: 0.35rem 0; text-decoration: none; border-bottom: 3px solid transparent; }
nav.primary a[aria-current="page"] { border-bottom-color: var(--link); }
nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: 0.75rem; padding: 0; margin: 0.25rem 0; }

.skip { position: absolute; left: -9999px; }
.skip:focus { left: 1rem; top: 0.5rem; background: #fff; padding: 0.25rem; z-index: 3; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
:focus-visible { outline: 3px solid #b35c00; outline-offset: 2px; }

/* Forms */
.field { margin: 0.6rem 0; }
label { display: block; font-weight: 600; }
input, select, button, textarea { font: inherit; padding: 0.35rem; min-height: 2.25rem; max-width: 100%; }
input[type="checkbox"] { min-height: auto; }
button { background: var(--link); color: #fff; border: 1px solid var(--link); border-radius: 4px; cursor: pointer; }
button.danger { background: var(--bad); border-color: var(--bad); }
.error { color: var(--bad); margin: 0.25rem 0; }
.invalid input, .invalid select { border: 2px solid var(--bad); }
.hint, .role { color: var(--muted); }
.notice { padding: 0.5rem; border-left: 4px solid var(--link); background: #eef4fc; }
.notice.alert { border-color: var(--bad); background: #fdeeee; }
.secret { font-family: monospace; word-break: break-all; padding: 0.5rem; background: #f3f3f3; }
fieldset { border: 1px solid #767676; margin: 0.75rem 0; }
label.inline { display: inline; font-weight: normal; }
form.inline { display: inline-block; margin: 0 0.25rem 0.25rem 0; }

/* Lists: filters in one compact row (the rest collapsed until one is set), the result count, tables the page wide */
form.filters { margin: 0 0 0.5rem; }
.filter-row { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 0.25rem 0.75rem; }
.filter-row .field { margin: 0; }
.filter-row label { font-size: 0.85rem; }
.filter-row .hint { font-size: 0.8rem; margin: 0; max-width: 20rem; }
.more-filters { align-self: flex-end; }
.more-filters > summary { cursor: pointer; padding: 0.4rem 0; color: var(--link); }
.more-filters[open] { flex-basis: 100%; order: 3; }
.filter-actions { display: flex; gap: 0.75rem; align-items: center; }
.count { margin: 0.25rem 0; color: var(--muted); }
th a { color: inherit; }
fieldset.selection { display: flex; flex-wrap: wrap; align-items: center; gap: 0.25rem 0.75rem; margin: 0.25rem 0 0.5rem; }
fieldset.selection p, fieldset.selection .field { margin: 0; }
button.secondary { background: #fff; color: var(--link); }
.list-foot { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: center; gap: 0.5rem 1rem; margin: 0.5rem 0; }
nav.pager { display: flex; gap: 1rem; }
form.page-size { display: flex; gap: 0.4rem; align-items: center; }
.table-wrap { overflow-x: auto; max-width: 100%; position: relative; } /* holds its absolutely placed hidden labels */
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; font-weight: 600; padding: 0.25rem 0; }
th, td { text-align: left; padding: 0.3rem 0.5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { background: var(--panel); font-size: 0.9rem; }
tbody tr:hover { background: #fafbfc; }
td { overflow-wrap: break-word; }
pre { white-space: pre-wrap; word-break: break-all; background: #f3f3f3; padding: 0.5rem; }

/* Statuses: the word in a badge; the colour and border only repeat it */
.badge { display: inline-block; padding: 0 0.45rem; border: 1px solid currentcolor; border-radius: 999px; font-size: 0.85rem; line-height: 1.5; white-space: nowrap; }
.badge-ok { color: var(--ok); background: #ebf6ee; }
.badge-warn { color: var(--warn); background: #fff4e5; }
.badge-bad { color: var(--bad); background: #fdeeee; }
.badge-info { color: var(--link); background: #eef4fc; }
.badge-neutral { color: var(--muted); background: #f3f3f3; }

dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
ol.timeline li { margin-bottom: 0.5rem; }
ol.timeline p { margin: 0; }
ol.stages li[aria-current] { font-weight: bold; }
time[title] { text-decoration: underline dotted var(--line); }

/* Today: the member's lists, side by side where there is room */
.today { display: grid; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); gap: 0 1.5rem; }
.today section { min-width: 0; }
.today ul.lines { list-style: none; padding: 0; margin: 0; }
.today ul.lines li { padding: 0.35rem 0; border-bottom: 1px solid var(--line); }

/* A phone: no horizontal scroll of the page; wide tables scroll in their own box */
@media (max-width: 40rem) {
  .bar { flex-wrap: wrap; padding: 0.4rem 0.75rem; }
  .site-search { order: 3; flex-basis: 100%; }
  main { padding: 0.5rem 0.75rem; }
  .menu ul { position: static; box-shadow: none; }
  .today { grid-template-columns: 1fr; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: 0.4rem; }
  input:not([type="checkbox"], [type="radio"]), select, textarea { width: 100%; }
  .filter-row > .field, .filter-row .more-filters { flex-basis: 100%; }
}
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
