import t from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { can, ROLES } from '../../src/identity/permissions.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { everyRole, memberOf } from '../identity/support.js';
import { crawl, formBody, rawCodesIn, submit, validValue } from './crawl.js';
import { leadBulkForms } from './bulk-forms.js';
import { leadBulkActions } from '../../src/console/bulk/lead-bulk.js';
import { ConsoleClient, PASSWORD } from './support.js';
import { endpointWithDeliveries } from './lists/support.js';

/**
 * Whether a 403 met by the crawl fails the suite. Off until the pages derive what they render from the permission
 * table (the navigation, Members, Webhooks, API keys): until then, every offence is listed as a todo.
 */
const CRAWLER_ENFORCED = true;

t.test('signed in as each role, no page links to or offers a form that answers 403', async (t) => {
  const app = await startApp(t, {
    config: { adminToken: 'operator-token-for-crawler-tests-0123456789', webhookAllowLoopback: true },
  });
  for (const role of ROLES) {
    // A workspace of its own per role, so what one role's crawl sent changes nothing another sees.
    const ws = await seedWorkspace(app, everyRole());
    for (const user of ws.workspace.settings.users) {
      const account = await ensureAccount(app.pool, user, app.services.now());
      await setPassword(app.pool, account.id, PASSWORD, app.services.now());
    }
    // Leads holding every kind of code the console names: a visa type, a country, a branch (by assignment).
    for (const [full_name, phone] of [
      ['Zoya Mirza', '+919811199900'],
      ['Arjun Rao', '+919811199911'],
    ])
      await app.request('/v1/leads', {
        method: 'POST',
        key: ws.live,
        json: { full_name, phone, visa_type: 'spouse_dependent', country_interest: 'US', consent: true },
      });
    const client = new ConsoleClient(app);
    t.equal((await client.signIn(memberOf(role))).status, 303, `the ${role} signs in`);
    // First (the crawl may end the session), the lead list's bulk forms (selection and each action's confirmation)
    // for the actions the role is offered, sent with valid values: none may answer 403; one not offered answers 403.
    const leadIds = (
      await app.pool.query<{ id: string }>('SELECT id FROM leads WHERE tenant_id = $1', [ws.workspace.id])
    ).rows.map((r) => r.id);
    const bulkForms = await leadBulkForms(client, ws.workspace.slug, leadIds);
    const offered = leadBulkActions({ role });
    t.equal(bulkForms.length - 1, offered.length, `the ${role} is offered ${offered.join(', ') || 'no bulk action'}`);
    const bulkAnswers: { action: string; status: number }[] = [];
    for (const form of bulkForms.slice(1)) {
      const csrf = await client.csrf();
      const pairs = formBody(form, (f) => (f.name === '_csrf' ? csrf : validValue(f)));
      bulkAnswers.push({ action: form.action, status: (await submit(client, form, pairs)).status });
    }
    for (const action of ['assign', 'move', 'task'] as const)
      if (!offered.includes(action))
        t.equal(
          (await client.post(`/console/w/${ws.workspace.slug}/leads/bulk`, { ids: leadIds, action })).status,
          403,
          `the ${role} is refused ${action}`,
        );
    const settings = ws.workspace.settings;
    const cellCodes = [...settings.countries, ...settings.branches.map((b) => b.code)];
    // An endpoint with deliveries: its page holds the delivery log, a list with its own CSV routes.
    const endpoint = await endpointWithDeliveries(app, ws);
    const log = `/console/w/${ws.workspace.slug}/webhooks/${endpoint}`;
    // A resend's confirmation is a link inside a row's details: started from, for the roles the row offers it to.
    const [delivery] = (
      await app.pool.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 LIMIT 1', [
        endpoint,
      ])
    ).rows;
    const resend = `${log}/deliveries/${delivery!.id}/resend`;
    // Only a role that may see the log starts there (another meets it only by a link, which the crawl follows).
    const start = can(role, 'webhooks.resend') ? [log, resend] : can(role, 'webhooks.view') ? [log] : [];
    const found = await crawl(client, ws.workspace.slug, { cellCodes, start });
    for (const answer of bulkAnswers)
      if (answer.status === 403 || answer.status >= 500)
        found[answer.status === 403 ? 'forbidden' : 'failed'].push(`${answer.action} (bulk) answered ${answer.status}`);
    t.ok(
      found.pages.length >= 5,
      `the ${role} visited ${found.pages.length} pages and saw ${found.forms.length} forms`,
    );
    t.same(found.failed, [], `the ${role} met no failure`);
    const w = `/console/w/${ws.workspace.slug}`;
    t.ok(
      found.pages.includes(`${w}/leads/board`) && found.pages.includes(`${w}/applications/board`),
      `the ${role} saw both boards`,
    );
    t.equal(found.pages.includes(log), can(role, 'webhooks.view'), `the ${role} saw the delivery log if allowed`);
    t.equal(
      found.forms.some((f) => f.method === 'POST' && f.action === `${log}/export`),
      can(role, 'webhooks.view') && can(role, 'lists.export'),
      `the ${role} is offered the log's CSV selection only if the role may export`,
    );
    t.equal(
      found.forms.some((f) => f.method === 'POST' && f.action === resend),
      can(role, 'webhooks.resend'),
      `the ${role} was asked to confirm a resend only if the role may resend`,
    );
    const moves = found.forms.filter(
      (f) => f.method === 'POST' && /\/(leads|applications)\/board\/move$/.test(f.action),
    );
    t.equal(moves.length > 0, role !== 'viewer', `the ${role} is offered a card's move form only if the role may move`);
    t.same(found.rawCodes, [], `the ${role} was shown no raw code (visa type, country, branch, event kind)`);
    for (const offence of found.forbidden) t.comment(`${role}: 403 from ${offence}`);
    t.same(found.forbidden, [], `nothing offered to the ${role} answers 403 (listed above)`, {
      todo: CRAWLER_ENFORCED ? false : 'the pages derive what they offer from the permission table once converted',
    });
  }
});

t.test('the raw-code check finds each kind of code shown as text, and leaves codes shown on purpose', async (t) => {
  const shown = rawCodesIn(
    '<main><dl><dd>US</dd></dl><p>lead.note_added · by Asha</p><table><tr><td>DEL</td></tr></table><p>Visa: spouse_dependent</p><p>Converted (converted)</p></main>',
    ['US', 'DEL'],
  );
  t.same(shown.sort(), ['Converted (converted)', 'DEL', 'US', 'lead.note_added', 'spouse_dependent'].sort());
  t.same(
    rawCodesIn(
      '<main><label>Lead created <code>lead.created</code></label><p>United States · Delhi · Note added</p><input value="spouse_dependent"></main>',
      ['US', 'DEL'],
    ),
    [],
    'names, codes in <code> and form values pass',
  );
});
