import t from 'tap';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';
import { checkProposed, fixture, importEnded, proposedMapping, startJobWorker, uploadCsv } from './import-support.js';

type Lead = { full_name: string; phone: string | null; email: string | null; source: { key: string } };

async function leadsOf(pool: import('pg').Pool, tenantId: string): Promise<Lead[]> {
  const rows = await pool.query<{ body: Lead }>(
    'SELECT body FROM leads WHERE tenant_id = $1 AND NOT sandbox ORDER BY created_at',
    [tenantId],
  );
  return rows.rows.map((r) => r.body);
}

t.test(
  'a Pipedrive people export: mapped by its headers, previewed with errors and duplicates, imported once',
  async (t) => {
    const f = await consoleFixture(t);
    const slug = f.ws.workspace.slug;
    // Zoya already has a lead (same phone as row 4 of the file, written another way).
    const existing = await f.app.request('/v1/leads', {
      method: 'POST',
      key: f.ws.live,
      json: { full_name: 'Zoya Mirza', phone: '+919811199900', consent: true },
    });
    const zoya = ((await existing.json()) as { id: string }).id;
    const c = f.client();
    await c.signIn(memberOf('manager'));

    const uploaded = await uploadCsv(c, slug, fixture('pipedrive-people.csv'), 'people-export.csv');
    t.equal(uploaded.status, 303, uploaded.text);
    const importPath = uploaded.location!;
    t.match(importPath, new RegExp(`^/console/w/${slug}/leads/import/[0-9a-f-]{36}$`));
    const page = await c.get(importPath);
    t.match(page.text, 'Recognised as a Pipedrive export (people or leads)');
    const mapping = proposedMapping(page.text);
    t.same(
      Object.entries(mapping).filter(([, field]) => field),
      [
        ['col_1', 'full_name'],
        ['col_6', 'email'],
        ['col_7', 'email'],
        ['col_8', 'phone'],
        ['col_9', 'phone'],
        ['col_11', 'city'],
        ['col_12', 'state'],
      ],
      'Person - Name, both emails, both phones, city and state; Person - ID, Organization, Owner and the rest left out',
    );

    const noConsent = await c.post(`${importPath}/mapping`, { ...mapping });
    t.equal(noConsent.status, 400);
    t.match(noConsent.text, /id="f-consent-error">Confirm that the people in this file agreed/);

    const checked = await checkProposed(c, importPath);
    t.equal(checked.status, 303);
    const preview = (await c.get(checked.headers.get('location')!)).text;
    t.match(preview, '7 rows read');
    t.match(preview, '5 rows pass the API');
    t.match(preview, '2 rows with problems');
    t.match(preview, /2 rows of people who already have a lead/);
    t.match(
      preview,
      /2 rows have a cell that starts like a spreadsheet formula[^<]*kept as plain text and never evaluated/,
    );
    // The API's spam rule refuses a link in a name, as POST /v1/leads would.
    t.match(preview, /3 <span class="muted">\(line 4\)[\s\S]*?Will not be imported[\s\S]*?looks like spam/);
    t.match(
      preview,
      /5 <span class="muted">\(line 6\)[\s\S]*?Will not be imported[\s\S]*?<strong>Email<\/strong> is not a valid email/,
    );
    t.match(
      preview,
      new RegExp(
        `4 <span class="muted">\\(line 5\\)[\\s\\S]*?Duplicate[\\s\\S]*?href="/console/w/${slug}/leads/${zoya}"`,
      ),
    );
    t.match(preview, /6 <span class="muted">\(line 7\)[\s\S]*?same person as row 1/);
    t.match(
      preview,
      /=HYPERLINK\(&quot;http:\/\/evil.example\/&quot;,&quot;Click&quot;\)[\s\S]*?Starts like a formula/,
    );
    t.match(preview, '>Import 5 rows</button>');

    startJobWorker(t, f.app);
    const started = await c.post(`${importPath}/start`, {});
    t.equal(started.status, 303);
    t.equal(started.headers.get('location'), `${importPath}/progress`);
    const twice = await c.post(`${importPath}/start`, {});
    t.equal(twice.status, 303, 'a second press changes nothing and shows the progress');
    const progress = await importEnded(c, importPath);
    t.match(progress, '<h2 id="state">Finished</h2>');
    t.match(progress, '5 imported');
    t.match(progress, '2 rows with problems were left out');

    const leads = await leadsOf(f.app.pool, f.ws.workspace.id);
    t.same(
      leads.map((l) => [l.full_name, l.phone, l.email, l.source.key]),
      [
        ['Zoya Mirza', '+919811199900', null, 'api'],
        ['Harpreet Kaur', '+919814011101', 'harpreet.kaur@example.com', 'import'],
        ['Rahul Mehta', '+919814011102', 'rahul.mehta@example.com', 'import'],
        ['Priya Sharma', '+919814011107', 'priya@example.com', 'import'],
      ],
      'three new leads; Zoya and row 6 became enquiries',
    );
    const priya = await f.app.pool.query<{ city: string }>(
      `SELECT body->>'city' AS city FROM leads WHERE tenant_id = $1 AND email = 'priya@example.com'`,
      [f.ws.workspace.id],
    );
    t.equal(priya.rows[0]!.city, "=cmd|' /C calc'!A0", 'the formula-looking city kept as the text it was');
    const enquiries = await f.app.pool.query<{ stream_id: string; actor: { email: string } }>(
      `SELECT stream_id, metadata->'actor' AS actor FROM events WHERE tenant_id = $1 AND type = 'lead.enquiry_received'`,
      [f.ws.workspace.id],
    );
    t.equal(enquiries.rows.length, 2, 'an enquiry on Zoya’s lead and one on Harpreet’s');
    t.ok(enquiries.rows.some((r) => r.stream_id === `lead-${zoya}`));
    const actors = await f.app.pool.query<{ actor: { type: string; email: string } }>(
      `SELECT DISTINCT metadata->'actor' AS actor FROM events WHERE tenant_id = $1 AND type = 'lead.created'
       AND data->'payload'->'source'->>'key' = 'import'`,
      [f.ws.workspace.id],
    );
    t.same(
      actors.rows.map((r) => [r.actor.type, r.actor.email]),
      [['user', memberOf('manager')]],
      'the member is the actor',
    );

    // The same file again: every row was imported before, so nothing is created or added.
    const events = await f.app.pool.query('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [
      f.ws.workspace.id,
    ]);
    const again = await uploadCsv(c, slug, fixture('pipedrive-people.csv'), 'people-export.csv');
    const againPath = again.location!;
    await checkProposed(c, againPath);
    const againPreview = (await c.get(againPath)).text;
    t.match(againPreview, '5 rows were imported before from this same file');
    t.match(againPreview, 'Imported before');
    t.match(againPreview, 'No row can be imported as the file stands.');
    const forced = await c.post(`${againPath}/start`, {});
    t.equal(forced.status, 303);
    const againProgress = await importEnded(c, againPath);
    t.match(againProgress, '5 skipped: imported before from this same file');
    t.match(againProgress, '0 imported');
    const after = await f.app.pool.query('SELECT count(*)::int AS n FROM events WHERE tenant_id = $1', [
      f.ws.workspace.id,
    ]);
    t.equal(after.rows[0].n, events.rows[0].n, 'not one event more');
  },
);

t.test(
  'HubSpot contacts and a spreadsheet: recognised by their headers; the API’s own words for a bad row',
  async (t) => {
    const f = await consoleFixture(t);
    const slug = f.ws.workspace.slug;
    const c = f.client();
    await c.signIn(memberOf('admin'));

    const hubspot = await uploadCsv(c, slug, fixture('hubspot-contacts.csv'));
    const hubspotPage = (await c.get(hubspot.location!)).text;
    t.match(hubspotPage, 'Recognised as a HubSpot contacts export');
    t.same(
      Object.entries(proposedMapping(hubspotPage)).filter(([, field]) => field),
      [
        ['col_1', 'first_name'],
        ['col_2', 'last_name'],
        ['col_3', 'email'],
        ['col_4', 'phone'],
        ['col_5', 'phone'],
        ['col_6', 'city'],
        ['col_7', 'state'],
      ],
    );
    await checkProposed(c, hubspot.location!);
    const hubspotPreview = (await c.get(hubspot.location!)).text;
    t.match(hubspotPreview, '2 rows pass the API');
    t.match(
      hubspotPreview,
      /3 <span class="muted">\(line 4\)[\s\S]*?<strong>Phone<\/strong> a phone or an email is required/,
    );

    const sheet = await uploadCsv(c, slug, fixture('spreadsheet.csv'));
    const sheetPage = (await c.get(sheet.location!)).text;
    t.match(sheetPage, 'Recognised as a spreadsheet');
    t.same(Object.values(proposedMapping(sheetPage)), [
      'full_name',
      'phone',
      'email',
      'city',
      'country_interest',
      'visa_type',
      'intake',
      'message',
    ]);
    await checkProposed(c, sheet.location!);
    const sheetPreview = (await c.get(sheet.location!)).text;
    t.match(sheetPreview, '2 rows pass the API', 'the BOM, CRLF, a quoted newline and doubled quotes read');
    t.match(sheetPreview, /Wants a diploma, then PR;\r?\nasked about fees/);
    t.match(sheetPreview, /said &quot;call after 6&quot;/);
    t.match(sheetPreview, /3 <span class="muted">\(line 5\)[\s\S]*?<strong>Country of interest[^<]*<\/strong>/);

    // The member may change the mapping: the city column left out, then no row carries a city.
    const mapping = proposedMapping(sheetPage);
    const remapped = await c.post(`${sheet.location!}/mapping`, { ...mapping, col_3: '', consent: 'yes' });
    t.equal(remapped.status, 303);
    const rows = await f.app.pool.query<{ body: Record<string, unknown> }>(
      `SELECT r.body FROM lead_import_rows r JOIN lead_imports i ON i.id = r.import_id
     WHERE i.tenant_id = $1 AND i.id = $2 ORDER BY r.row_no`,
      [f.ws.workspace.id, sheet.location!.split('/').at(-1)],
    );
    t.same(rows.rows[0]!.body, {
      full_name: 'Gurpreet Sandhu',
      phone: '09876543210',
      email: 'gurpreet@example.com',
      country_interest: 'CA',
      intake: '2027-01',
      visa_type: 'student',
      message: 'Wants a diploma, then PR;\r\nasked about fees',
      consent: true,
    });
    const twoNames = await c.post(`${sheet.location!}/mapping`, { ...mapping, col_3: 'full_name', consent: 'yes' });
    t.equal(twoNames.status, 400);
    t.match(twoNames.text, /id="f-col-3-error">Column 1 gives this field already/);
    const noName = await c.post(`${sheet.location!}/mapping`, { ...mapping, col_0: '', consent: 'yes' });
    t.equal(noName.status, 400);
    t.match(noName.text, 'it needs a column for the name (Full name, or First name and Last name)');
  },
);

t.test('files refused in words: truncated, wrong encoding, too large, too many rows, not a CSV', async (t) => {
  const f = await consoleFixture(t, { config: { csvImportLimits: { maxBytes: 4096, maxRows: 5 } } });
  const slug = f.ws.workspace.slug;
  const c = f.client();
  await c.signIn(memberOf('owner'));
  const refused = async (bytes: Uint8Array, status: number, words: RegExp) => {
    const answer = await uploadCsv(c, slug, bytes);
    t.equal(answer.status, status, String(words));
    t.match(answer.text, /id="f-file-error" role="alert">Nothing was imported\./);
    t.match(answer.text, words);
  };
  await refused(
    Buffer.from('Name,Phone\nAsha,+919800000001\n"Ravi,+919800000002\nMeena,+919800000003\n'),
    400,
    /The file ends inside a quoted cell opened on line 3: it looks cut short/,
  );
  await refused(
    Buffer.from('Name,Phone\nJos\xe9 Pe\xf1a,+919800000001\n', 'latin1'),
    400,
    /not UTF-8 text: on line 2 it looks like Windows-1252[^<]*byte 0xE9 is &quot;é&quot;/,
  );
  await refused(Buffer.from('\ufeffName,Phone\nAsha,+919800000001\n', 'utf16le'), 400, /is in UTF-16/);
  await refused(
    Buffer.from('Name,Phone\n' + 'Asha,+919800000001\n'.repeat(6)),
    413,
    /more than 5 rows \(row 6 is on line 7\): an import takes at most 5/,
  );
  await refused(
    Buffer.from('Name,Phone\n' + `"${'x'.repeat(5000)}",1\n`),
    413,
    /larger than 4,096 bytes: an import takes at most 4,096 bytes and 5 rows/,
  );
  await refused(Buffer.from('Name,Phone\n'), 400, /a header row but no rows under it/);
  await refused(Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 1]), 400, /a workbook \(\.xlsx, a ZIP archive\)/);
  const kept = await f.app.pool.query('SELECT count(*)::int AS n FROM lead_imports WHERE tenant_id = $1', [
    f.ws.workspace.id,
  ]);
  t.equal(kept.rows[0].n, 0, 'nothing of a refused file is kept');
  // A UTF-8 BOM is fine.
  const bom = await uploadCsv(c, slug, Buffer.from('\ufeffName,Phone\r\nAsha,+919800000001\r\n'));
  t.equal(bom.status, 303);
});

t.test('who may import, and only in their own workspace', async (t) => {
  const f = await consoleFixture(t);
  const slug = f.ws.workspace.slug;
  for (const role of ['counsellor', 'viewer'] as const) {
    const c = f.client();
    await c.signIn(memberOf(role));
    const leads = await c.get(`/console/w/${slug}/leads`);
    t.notMatch(leads.text, 'Import leads from a CSV file', `no import link for a ${role}`);
    const page = await c.get(`/console/w/${slug}/leads/import`);
    t.equal(page.status, 403, `a ${role} may not import`);
  }
  const manager = f.client();
  await manager.signIn(memberOf('manager'));
  t.match((await manager.get(`/console/w/${slug}/leads`)).text, 'Import leads from a CSV file');
  const uploaded = await uploadCsv(manager, slug, fixture('spreadsheet.csv'));
  const id = uploaded.location!.split('/').at(-1)!;

  // The same accounts are members of a second workspace: its pages never show the first one's upload.
  const { seedWorkspace } = await import('../support/app.js');
  const { everyRole } = await import('../identity/support.js');
  const other = await seedWorkspace(f.app, everyRole());
  const foreign = await manager.get(`/console/w/${other.workspace.slug}/leads/import/${id}`);
  t.equal(foreign.status, 404, 'another workspace has no such upload');
  const foreignCheck = await manager.post(`/console/w/${other.workspace.slug}/leads/import/${id}/mapping`, {
    col_0: 'full_name',
    col_1: 'phone',
    consent: 'yes',
  });
  t.equal(foreignCheck.status, 404);
  const foreignStart = await manager.post(`/console/w/${other.workspace.slug}/leads/import/${id}/start`, {});
  t.equal(foreignStart.status, 404);
  t.notMatch((await manager.get(`/console/w/${other.workspace.slug}/leads/import`)).text, id);
});
