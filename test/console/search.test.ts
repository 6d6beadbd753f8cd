import fc from 'fast-check';
import t from 'tap';
import { searchGroupsFor } from '../../src/console/pages/search.js';
import { searchLeads, searchTerms } from '../../src/console/queries/search.js';
import { can, ROLES } from '../../src/identity/permissions.js';
import { everyRole, memberOf } from '../identity/support.js';
import { seedWorkspace } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { consoleFixture } from './support.js';

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

async function capture(f: Fixture, key: string, lead: Record<string, unknown>): Promise<string> {
  const response = await f.app.request('/v1/leads', { method: 'POST', key, json: { consent: true, ...lead } });
  t.equal(response.status, 201, `captured ${String(lead.full_name)}`);
  return ((await response.json()) as { id: string }).id;
}

/** The links of one group of the results page, by its heading. */
function groupLinks(text: string, heading: string): string[] {
  const section = new RegExp(`<h2 id="found-${heading.toLowerCase()}">[\\s\\S]*?</section>`).exec(text)?.[0] ?? '';
  return [...section.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!);
}

t.test('one search box: each kind, prefix-free phones, any word order, accents, tenant isolation', async (t) => {
  const f = await consoleFixture(t);
  const slug = f.ws.workspace.slug;
  const w = `/console/w/${slug}`;
  const gurpreet = await capture(f, f.ws.live, {
    full_name: 'Gurpreet Sandhu',
    phone: '+91 98765 43210',
    email: 'gurpreet.sandhu@example.com',
  });
  const zoe = await capture(f, f.ws.live, { full_name: 'Zoë Ångström', phone: '+91 99887 76655' });
  const other = await seedWorkspace(f.app, everyRole());
  const stranger = await capture(f, other.live, {
    full_name: 'Gurpreet Sandhu',
    phone: '+91 98765 43210',
    email: 'gurpreet.sandhu@example.com',
  });

  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const converted = await owner.post(`${w}/leads/${zoe}/convert`, { confirm: 'yes' });
  const application = /applications\/([0-9a-f-]{36})/.exec(converted.headers.get('location')!)![1]!;
  const caseRef = /<h1>Application ([^<]+)<\/h1>/.exec((await owner.get(`${w}/applications/${application}`)).text)![1]!;
  const issued = await owner.post(`${w}/invoices`, {
    lead_id: gurpreet,
    currency: 'INR',
    description: 'Counselling fee',
    quantity: '1',
    unit_amount: '100',
    due_date: '2099-01-01',
  });
  const invoicePath = new URL(issued.headers.get('location')!, f.app.baseUrl).pathname;
  const invoiceNumber = /<h1>Invoice ([^<]+)<\/h1>/.exec((await owner.get(invoicePath)).text)?.[1] ?? '';
  t.ok(invoiceNumber, `the invoice has a number (${invoiceNumber})`);
  const task = await owner.post(`${w}/tasks`, {
    lead_id: gurpreet,
    title: 'Collect the passport scan',
    due_at: '2099-01-01T09:00',
  });
  t.equal(task.status, 303, 'a task was made');

  const search = async (q: string) => {
    const answer = await owner.get(`${w}/search?q=${encodeURIComponent(q)}`);
    t.equal(answer.status, 200, `${q}: answered`);
    return answer.text;
  };
  const leadLink = (id: string) => `${w}/leads/${id}`;
  for (const q of ['Sandhu Gurpreet', 'gurpreet sandhu', 'GURPREET', 'gurpreet.sandhu@example', 'sandhu gur']) {
    const links = groupLinks(await search(q), 'Leads');
    t.ok(links.includes(leadLink(gurpreet)), `${q} finds Gurpreet`);
    t.notOk(links.includes(leadLink(stranger)), `${q}: never the other workspace’s lead`);
    t.notOk(
      links.some((l) => l.includes(stranger)),
      `${q}: no link of the other workspace`,
    );
  }
  for (const q of ['09876543210', '+91 98765 43210', '98765 43210', '(0)98765-43210', '919876543210', '98765']) {
    t.ok(groupLinks(await search(q), 'Leads').includes(leadLink(gurpreet)), `the phone typed as ${q}`);
  }
  for (const q of ['zoe angstrom', 'ANGSTRÖM zoë', 'Angstrom']) {
    t.ok(groupLinks(await search(q), 'Leads').includes(leadLink(zoe)), `${q} finds Zoë Ångström`);
  }
  t.ok(groupLinks(await search(caseRef), 'Applications').includes(`${w}/applications/${application}`), 'by case');
  t.ok(groupLinks(await search(invoiceNumber), 'Invoices').includes(invoicePath), 'the invoice by its number');
  t.ok(
    groupLinks(await search('passport collect'), 'Tasks').some((l) => l.startsWith(`${w}/tasks/`)),
    'a task by words of its title',
  );
  const manager = f.ws.workspace.settings.users.find((u) => u.role === 'manager')!;
  t.ok(groupLinks(await search(manager.name), 'Members').includes(`${w}/members`), 'a member by name');
  const nothing = await search('Nobody-Here-Xyz');
  t.match(nothing, 'Nothing matches.');
  const short = await owner.get(`${w}/search?q=ab`);
  t.equal(short.status, 400, 'two letters are too few');
  t.match(short.text, 'at least three letters');

  // The search box is on every page of the workspace, holding what was searched on the results page.
  for (const path of [w, `${w}/leads`, `${w}/applications/${application}`, `${w}/leads/${gurpreet}`]) {
    t.match((await owner.get(path)).text, `action="${w}/search"`, `${path} has the search box`);
  }
  t.match(await search('Sandhu'), 'value="Sandhu"', 'the box keeps the query');

  // The other workspace's members find only their own.
  const outsider = f.client();
  await outsider.signIn(memberOf('owner'));
  const theirs = await outsider.get(`/console/w/${other.workspace.slug}/search?q=Gurpreet`);
  const links = groupLinks(theirs.text, 'Leads');
  t.ok(links.includes(`/console/w/${other.workspace.slug}/leads/${stranger}`), 'the other workspace finds its own');
  t.notOk(
    links.some((l) => l.includes(gurpreet)),
    'and not this one’s',
  );
});

t.test('each role sees the kinds the permission table lets it see, and no other', async (t) => {
  const f = await consoleFixture(t);
  const id = await capture(f, f.ws.live, { full_name: 'Role Probe Person', phone: '+91 91234 56789' });
  for (const role of ROLES) {
    const c = f.client();
    await c.signIn(memberOf(role));
    const answer = await c.get(`/console/w/${f.ws.workspace.slug}/search?q=probe`);
    t.equal(answer.status, 200, `${role}: answered`);
    const kinds = searchGroupsFor(role).map((g) => g.heading);
    t.equal(kinds.includes('Leads'), can(role, 'leads.view'), `${role}: leads as the table says`);
    t.equal(kinds.includes('Tasks'), can(role, 'tasks.view'), `${role}: tasks as the table says`);
    t.equal(kinds.includes('Invoices'), can(role, 'invoices.view'), `${role}: invoices as the table says`);
    t.equal(kinds.includes('Applications'), can(role, 'applications.view'), `${role}: applications`);
    t.equal(kinds.includes('Members'), can(role, 'members.view'), `${role}: members`);
    t.equal(answer.text.includes(`/leads/${id}"`), can(role, 'leads.view'), `${role}: the lead shown or not`);
  }
});

/** Letters and the accented forms people may type or store instead. */
const ACCENTS: Record<string, string[]> = {
  a: ['á', 'å', 'ä'],
  e: ['é', 'ë', 'è'],
  i: ['í', 'ï'],
  o: ['ö', 'ó', 'ø'],
  u: ['ü', 'ú'],
  c: ['ç'],
  n: ['ñ'],
};

const PEOPLE = [
  { name: 'Gurpreet Kaur Sandhu', national: '9876543210' },
  { name: 'Ananya Iyer', national: '9988776655' },
  { name: 'Jose Nunez', national: '9123456789' },
  { name: 'Chloe Muller', national: '9765432109' },
  { name: 'Anita Desai', national: '9811122233' },
  { name: 'Irene Ocana', national: '9900011122' },
];

/** A name as someone may type it: each letter as itself or one of its accented forms, upper or lower case. */
const spelling = (name: string) =>
  fc
    .tuple(
      fc.array(fc.nat(), { minLength: name.length, maxLength: name.length }),
      fc.array(fc.boolean(), { minLength: name.length, maxLength: name.length }),
    )
    .map(([accent, upper]) =>
      [...name]
        .map((ch, i) => {
          const forms = ACCENTS[ch.toLowerCase()];
          const picked = forms && accent[i]! % 3 === 0 ? forms[accent[i]! % forms.length]! : ch;
          return upper[i] ? picked.toUpperCase() : picked.toLowerCase();
        })
        .join(''),
    );

/** A number as people write it: with or without the country code or the national prefix, grouped or not. */
const phoneSpelling = (national: string) =>
  fc.constantFrom(
    `+91${national}`,
    `+91 ${national.slice(0, 5)} ${national.slice(5)}`,
    `0${national}`,
    `0${national.slice(0, 5)} ${national.slice(5)}`,
    `${national.slice(0, 5)}-${national.slice(5)}`,
    `0091 ${national}`,
    `(0) ${national}`,
    national.slice(2, 8),
  );

t.test('property: any word order, accents and case of a name, any spelling of a phone, find the person', async (t) => {
  const f = await consoleFixture(t);
  const other = await seedWorkspace(f.app, everyRole());
  const ids: string[] = [];
  // Half the people are stored with accents, half without: the search must meet them either way.
  for (const [i, p] of PEOPLE.entries()) {
    const stored = i % 2 === 0 ? p.name : p.name.replace('e', 'é').replace('o', 'ö').replace('u', 'ü');
    ids.push(await capture(f, f.ws.live, { full_name: stored, phone: `+91${p.national}` }));
    await capture(f, other.live, { full_name: stored, phone: `+91${p.national}` });
  }
  const country = f.ws.workspace.settings.default_phone_country;
  const person = fc.nat({ max: PEOPLE.length - 1 });
  const byName = person.chain((i) =>
    fc.tuple(
      fc.constant(i),
      fc
        .shuffledSubarray(PEOPLE[i]!.name.split(' '), { minLength: 1 })
        .chain((words) => fc.tuple(...words.map((word) => spelling(word)))),
    ),
  );
  await checkProperty(
    t,
    'names in any order, accents and case',
    fc.asyncProperty(byName, async ([i, words]) => {
      const found = await searchLeads(f.app.pool, f.ws.workspace.id, searchTerms(words.join(' '), country));
      return found.some((l) => l.id === ids[i]) && found.every((l) => ids.includes(l.id));
    }),
    60,
  );
  await checkProperty(
    t,
    'phones with or without country code and national prefix',
    fc.asyncProperty(
      person.chain((i) => fc.tuple(fc.constant(i), phoneSpelling(PEOPLE[i]!.national))),
      async ([i, phone]) => {
        const found = await searchLeads(f.app.pool, f.ws.workspace.id, searchTerms(phone, country));
        return found.some((l) => l.id === ids[i]) && found.every((l) => ids.includes(l.id));
      },
    ),
    60,
  );
});
