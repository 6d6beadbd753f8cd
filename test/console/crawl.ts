import { DomUtils, parseDocument } from 'htmlparser2';
import type { AnyNode, Element } from 'domhandler';
import { NAMED_EVENT_KINDS } from '../../src/console/labels.js';
import { VISA_TYPES } from '../../src/shared/enums.js';
import { PASSWORD, type ConsoleClient } from './support.js';

/** One control of a form, as the page renders it. */
export interface FormField {
  name: string;
  tag: 'input' | 'select' | 'textarea' | 'button';
  type: string;
  value: string;
  /** A select's option values, the selected one first. */
  options: string[];
  checked: boolean;
}

/** A form a page renders: where it goes, how, and its named controls. */
export interface PageForm {
  page: string;
  method: 'GET' | 'POST';
  action: string;
  multipart: boolean;
  fields: FormField[];
}

/** The path and query of a same-site URL, relative to the page it is on; null when it leaves the console. */
function consolePath(href: string, page: string): string | null {
  const url = new URL(href.replaceAll('&amp;', '&'), `http://console.invalid${page}`);
  if (url.host !== 'console.invalid' || !url.pathname.startsWith('/console')) return null;
  return url.pathname + url.search;
}

const attr = (element: Element, name: string) => element.attribs[name] ?? '';

function fieldOf(element: Element): FormField | null {
  const name = attr(element, 'name');
  if (!name || 'disabled' in element.attribs) return null;
  if (element.name === 'select') {
    const options = DomUtils.getElementsByTagName('option', element).map(
      (o) => attr(o, 'value') || DomUtils.textContent(o),
    );
    const selected = DomUtils.getElementsByTagName('option', element).find((o) => 'selected' in o.attribs);
    const first = selected ? attr(selected, 'value') || DomUtils.textContent(selected) : undefined;
    const ordered = first === undefined ? options : [first, ...options.filter((o) => o !== first)];
    return { name, tag: 'select', type: 'select', value: ordered[0] ?? '', options: ordered, checked: false };
  }
  if (element.name === 'textarea')
    return {
      name,
      tag: 'textarea',
      type: 'textarea',
      value: DomUtils.textContent(element).trim(),
      options: [],
      checked: false,
    };
  const tag = element.name === 'button' ? 'button' : 'input';
  const type = (attr(element, 'type') || (tag === 'button' ? 'submit' : 'text')).toLowerCase();
  return { name, tag, type, value: attr(element, 'value'), options: [], checked: 'checked' in element.attribs };
}

/** Every form of a page, and every console link on it (paths with their queries). */
export function readPage(html: string, page: string): { forms: PageForm[]; links: string[] } {
  const document = parseDocument(html);
  const forms = DomUtils.getElementsByTagName('form', document).map((form): PageForm => {
    const controls = DomUtils.findAll((e) => ['input', 'select', 'textarea', 'button'].includes(e.name), form.children);
    return {
      page,
      method: attr(form, 'method').toUpperCase() === 'POST' ? 'POST' : 'GET',
      action: consolePath(attr(form, 'action') || page, page) ?? page,
      multipart: attr(form, 'enctype') === 'multipart/form-data',
      fields: controls.map(fieldOf).filter((f): f is FormField => f !== null),
    };
  });
  const links = DomUtils.getElementsByTagName('a', document)
    .map((a) => attr(a, 'href'))
    .filter((href) => href !== '' && !href.startsWith('#'))
    .map((href) => consolePath(href, page))
    .filter((p): p is string => p !== null);
  return { forms, links };
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Codes no page may show as words: event kinds and the visa types whose codes are not words. */
const TEXT_CODES = [...NAMED_EVENT_KINDS, ...VISA_TYPES.filter((v) => v.includes('_'))].map(
  (code) => [code, new RegExp(`(?<![\\w.@/-])${escaped(code)}(?![\\w@/-])`)] as const,
);

/**
 * The raw codes a page shows to people: an event kind or a visa type's code anywhere in its text, a cell or fact that
 * is nothing but a country or branch code (`cellCodes`), or a stage that says converted twice. Text inside <code> is
 * a code shown on purpose (the kinds an integration subscribes to) and is left out.
 */
export function rawCodesIn(html: string, cellCodes: readonly string[]): string[] {
  const document = parseDocument(html);
  const shown = (node: AnyNode): string => {
    if (DomUtils.isText(node)) return node.data;
    if (!DomUtils.isTag(node)) return '';
    // Codes in code, and in pre (a webhook's body as it was sent, the data itself), are shown on purpose.
    if (['script', 'style', 'code', 'pre', 'textarea'].includes(node.name)) return ' ';
    // Elements apart by a space, as a page shows its blocks (else "US" + "lead.created" would read as one word).
    return node.children.map(shown).join(' ');
  };
  const main = DomUtils.getElementsByTagName('main', document)[0];
  if (!main) return [];
  const text = shown(main);
  const found = TEXT_CODES.filter(([, pattern]) => pattern.test(text)).map(([code]) => code);
  if (/converted \(converted\)/i.test(text)) found.push('Converted (converted)');
  for (const cell of DomUtils.findAll((e) => ['td', 'dd', 'li'].includes(e.name), main.children)) {
    const value = shown(cell).trim();
    if (cellCodes.includes(value)) found.push(value);
  }
  return found;
}

let counter = 0;

/** A valid value for a control, from its type, options and default (what a member would leave or type). */
export function validValue(field: FormField): string | undefined {
  counter += 1;
  if (field.tag === 'select') return field.value;
  if (field.tag === 'button') return field.value || undefined;
  if (field.type === 'checkbox' || field.type === 'radio') return field.checked ? field.value || 'on' : undefined;
  if (field.type === 'hidden' || field.type === 'submit') return field.value;
  if (field.value !== '') return field.value;
  switch (field.type) {
    case 'email':
      return `crawler.${counter}.${Date.now()}@northstar.example`;
    case 'password':
      return PASSWORD;
    case 'datetime-local':
      return '2026-12-01T10:00';
    case 'date':
      return '2026-12-01';
    case 'number':
      return '1';
    case 'url':
      return 'https://receiver.example/hooks';
    case 'file':
      return undefined;
    default:
      break;
  }
  if (/amount/.test(field.name)) return '100';
  if (field.name === 'currency') return 'INR';
  if (field.name === 'anchor') return '';
  return field.tag === 'textarea' ? 'A note written by the crawler.' : `Crawler ${counter}`;
}

/** A form's body with the given value per control (a list sends the name once per value); undefined leaves it out. */
export function formBody(form: PageForm, valueOf: (field: FormField) => string | string[] | undefined) {
  const pairs: [string, string][] = [];
  for (const field of form.fields) {
    if (field.tag === 'button' || field.type === 'submit') continue;
    const value = valueOf(field);
    for (const one of [value ?? []].flat()) pairs.push([field.name, one]);
  }
  return pairs;
}

/** A PDF the type sniffing accepts, for upload forms. */
export const SMALL_PDF = Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n');
/** A CSV file of two people, for the lead import's upload form. */
export const SMALL_CSV = Buffer.from(
  'Name,Phone,Email\r\nCrawler One,+91 98000 70001,one@crawler.example\r\nCrawler Two,,two@crawler.example\r\n',
);
/** The file an upload form takes: a CSV for the lead import, a PDF for a document. */
export const uploadFile = (action: string) =>
  /\/leads\/import/.test(action)
    ? { bytes: SMALL_CSV, type: 'text/csv', name: 'crawler.csv' }
    : { bytes: SMALL_PDF, type: 'application/pdf', name: 'crawler.pdf' };

/** Sends a form as the browser would (its method, action and encoding), with these pairs; any answer, no redirect. */
export async function submit(
  client: ConsoleClient,
  form: PageForm,
  pairs: [string, string][],
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; location: string | null }> {
  const base = client.app.baseUrl;
  const cookie: Record<string, string> = client.cookie ? { cookie: client.cookie } : {};
  let response: Response;
  if (form.method === 'GET') {
    const url = new URL(form.action, base);
    url.search = new URLSearchParams(pairs).toString();
    response = await fetch(url, { redirect: 'manual', headers: { ...cookie, ...headers } });
  } else if (form.multipart) {
    const body = new FormData();
    for (const [name, value] of pairs) body.append(name, value);
    const file = uploadFile(form.action);
    for (const field of form.fields.filter((f) => f.type === 'file'))
      body.set(field.name, new Blob([file.bytes], { type: file.type }), file.name);
    response = await fetch(base + form.action, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: base, ...cookie, ...headers },
      body,
    });
  } else {
    response = await fetch(base + form.action, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded', ...cookie, ...headers },
      body: new URLSearchParams(pairs),
    });
  }
  return { status: response.status, text: await response.text(), location: response.headers.get('location') };
}

/** A path with its ids and queries' values blurred: pages of one kind share it (the crawl visits few of each). */
export const pageKind = (path: string) =>
  path.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, ':id').replace(/=[^&]*/g, '=');

/** Forms the crawl never sends: they end its own session or change its password. */
export const NEVER_SENT = /\/sign-out|\/account\/password|\/passkeys\//;
/** Forms sent last: they take something away (a record, a member, a key, password-only access, passkeys) that later pages may have offered. */
export const SENT_LAST = /deactivate|erase|revoke|remove|reject|delete|rotate|role|passkeys/;

/** What a crawl found: every form it saw (one or two of each kind), and each request that answered 403. */
export interface Crawl {
  forms: PageForm[];
  pages: string[];
  forbidden: string[];
  failed: string[];
  /** Raw codes shown as text, each with its page (`rawCodesIn`). */
  rawCodes: string[];
}

const MAX_PAGES = 60;
const PER_KIND = 2;

/**
 * Visits the console as a member would, bounded: from the workspace list, its account, the workspace's leads and its two boards, every
 * console link of each page within the account and this workspace (two pages of a kind at most, sixty in all); each
 * form a page renders is sent with valid values (those that take something away last, or with `takeAway: false`
 * never; those that end the session never), and a redirect's target is visited too. Every 403 and 5xx is noted with its page and form.
 */
export async function crawl(
  client: ConsoleClient,
  slug: string,
  o: { takeAway?: boolean; cellCodes?: readonly string[]; start?: readonly string[] } = {},
): Promise<Crawl> {
  const result: Crawl = { forms: [], pages: [], forbidden: [], failed: [], rawCodes: [] };
  const inScope = (path: string) =>
    (path === '/console' ||
      path === '/console/' ||
      path.startsWith('/console/account') ||
      path.startsWith(`/console/w/${slug}/`)) &&
    !/\/content(\?|$)|\/assets\//.test(path);
  const queue = [
    // Pages the crawl might not reach within its bound (a record several links deep), visited first.
    ...(o.start ?? []),
    '/console',
    '/console/account',
    `/console/w/${slug}/leads`,
    `/console/w/${slug}/notifications`,
    `/console/w/${slug}/leads/board`,
    `/console/w/${slug}/applications/board`,
    `/console/w/${slug}/jobs`,
  ];
  const seenKinds = new Map<string, number>();
  const visited = new Set<string>();
  const sentKinds = new Map<string, number>();
  const last: PageForm[] = [];

  const note = (status: number, what: string) => {
    if (status === 403) result.forbidden.push(what);
    if (status >= 500) result.failed.push(`${status} ${what}`);
  };
  const send = async (form: PageForm) => {
    const kind = `${form.method} ${pageKind(form.action)}`;
    if ((sentKinds.get(kind) ?? 0) >= PER_KIND) return;
    sentKinds.set(kind, (sentKinds.get(kind) ?? 0) + 1);
    const answer = await submit(client, form, formBody(form, validValue));
    note(answer.status, `form ${form.method} ${form.action} on ${form.page}`);
    if (answer.location?.startsWith('/console')) queue.unshift(answer.location);
  };

  while (queue.length > 0 && visited.size < MAX_PAGES) {
    const path = queue.shift()!;
    const kind = pageKind(path);
    if (visited.has(path) || !inScope(path) || (seenKinds.get(kind) ?? 0) >= PER_KIND) continue;
    visited.add(path);
    seenKinds.set(kind, (seenKinds.get(kind) ?? 0) + 1);
    const answer = await client.get(path);
    note(answer.status, `page ${path}`);
    if (answer.status !== 200 || !answer.headers.get('content-type')?.startsWith('text/html')) continue;
    result.pages.push(path);
    for (const code of rawCodesIn(answer.text, o.cellCodes ?? [])) result.rawCodes.push(`${code} on ${path}`);
    const { forms, links } = readPage(answer.text, path);
    queue.push(...links);
    for (const form of forms) {
      if (!inScope(form.action) && form.action !== '/console') continue;
      result.forms.push(form);
      if (NEVER_SENT.test(form.action)) continue;
      if (SENT_LAST.test(form.action)) last.push(form);
      else await send(form);
    }
  }
  if (o.takeAway ?? true) for (const form of last) await send(form);
  return result;
}
