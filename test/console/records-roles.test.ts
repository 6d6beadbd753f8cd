import t from 'tap';
import { ROLES } from '../../src/identity/permissions.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

/** The main region of a page: the navigation's links belong to the layout, not to the records pages. */
const mainOf = (text: string) => /<main[\s\S]*?<\/main>/.exec(text)?.[0] ?? '';

/** Where the page's post forms send, and where its links and GET forms lead (within the workspace). */
function controlsOf(text: string, workspace: string) {
  const main = mainOf(text).replaceAll('&amp;', '&');
  const posts = [...main.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) => m[1]!);
  const links = [...main.matchAll(/<a href="([^"#]+)"/g)].map((m) => m[1]!).filter((h) => h.startsWith(workspace));
  const gets = [...main.matchAll(/<form method="get" action="([^"]+)"/g)].map((m) => m[1]!);
  return { posts, links, gets };
}

t.test('the records pages render only the forms and links each role may use: none answers 403', async (t) => {
  const f = await consoleFixture(t);
  const w = `/console/w/${f.ws.workspace.slug}`;
  const captured = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Rhea Kapoor', phone: '+919811100099', consent: true },
  });
  const leadId = ((await captured.json()) as { id: string }).id;
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const other = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Aman Gill', phone: '+919811100098', consent: true },
  });
  const convertedLead = ((await other.json()) as { id: string }).id;
  const converted = await owner.post(`${w}/leads/${convertedLead}/convert`, { confirm: 'yes' });
  const applicationPath = new URL(converted.headers.get('location')!, f.app.baseUrl).pathname;
  await owner.post(`${w}/tasks`, { lead_id: leadId, title: 'Call Rhea', due_at: '2026-12-01T09:00' });
  const issued = await owner.post(`${w}/invoices`, {
    lead_id: leadId,
    currency: 'INR',
    description: 'Fee',
    quantity: '1',
    unit_amount: '100',
    tax_percent: '0',
    due_date: '2026-12-31',
  });
  const invoicePath = new URL(issued.headers.get('location')!, f.app.baseUrl).pathname;
  await owner.post(`${invoicePath}/payments`, { amount: '100', method: 'cash' });
  const taskPath = /href="([^"]+\/tasks\/[0-9a-f-]{36})"/.exec(
    (await owner.get(`${w}/tasks?lead=${leadId}`)).text,
  )![1]!;

  const pages = [
    `${w}/leads`,
    `${w}/leads/${leadId}`,
    `${w}/leads/${convertedLead}`,
    applicationPath,
    `${w}/applications`,
    `${w}/tasks?lead=${leadId}`,
    `${w}/tasks?show=all`,
    taskPath,
    `${w}/invoices?lead=${leadId}`,
    invoicePath,
    `${w}/documents?lead=${leadId}`,
  ];
  for (const role of ROLES) {
    const c = f.client();
    await c.signIn(memberOf(role));
    const offered = new Set<string>();
    for (const path of pages) {
      const page = await c.get(path);
      t.equal(page.status, 200, `${role} opens ${path}`);
      const { posts, links, gets } = controlsOf(page.text, w);
      for (const link of links) {
        if (offered.has(`GET ${link}`) || link.endsWith('/content')) continue;
        offered.add(`GET ${link}`);
        const answer = await c.get(link);
        t.not(answer.status, 403, `${role}: the link ${link} on ${path}`);
      }
      for (const action of gets) offered.add(`GET-FORM ${action}`);
      // A form posted bare: refused for want of a value or a confirmation, perhaps, but never for the role.
      for (const action of posts) {
        if (offered.has(`POST ${action}`)) continue;
        offered.add(`POST ${action}`);
        const answer = await c.post(action, {});
        t.not(answer.status, 403, `${role}: the form posting to ${action} on ${path}`);
      }
    }
    const posted = [...offered].filter((o) => o.startsWith('POST ')).length;
    t.comment(`${role}: ${posted} form(s), ${offered.size - posted} link(s) and GET form(s) offered`);
    if (role === 'viewer') t.equal(posted, 0, 'a viewer is offered no form that changes a record');
    if (role === 'counsellor')
      t.notOk(
        [...offered].some((o) => o.includes('/erase') || o.includes('/refunds')),
        'nor a counsellor erasure or refunds',
      );
  }
});
