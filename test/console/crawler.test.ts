import t from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { ROLES } from '../../src/identity/permissions.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { everyRole, memberOf } from '../identity/support.js';
import { crawl, rawCodesIn } from './crawl.js';
import { ConsoleClient, PASSWORD } from './support.js';

/**
 * Whether a 403 met by the crawl fails the suite. Off until the pages derive what they render from the permission
 * table (the navigation, Members, Webhooks, API keys): until then, every offence is listed as a todo.
 */
const CRAWLER_ENFORCED = true;

t.test('signed in as each role, no page links to or offers a form that answers 403', async (t) => {
  const app = await startApp(t, { config: { adminToken: 'operator-token-for-crawler-tests-0123456789' } });
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
    const settings = ws.workspace.settings;
    const cellCodes = [...settings.countries, ...settings.branches.map((b) => b.code)];
    const found = await crawl(client, ws.workspace.slug, { cellCodes });
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
