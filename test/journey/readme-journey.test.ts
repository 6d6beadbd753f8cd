import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import t, { type Test } from 'tap';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { makeTestPki } from '../webhooks/support/tls.js';
import { TestReceiver, type ReceivedRequest } from '../webhooks/support/receiver.js';
import {
  demoPrinted,
  freePort,
  httpReceiver,
  inlineCommands,
  journeyFolder,
  README,
  readmeSection,
  ROOT,
  runShell,
  shellCommands,
  startShell,
  substitute,
  userEnv,
  waitFor,
  type DemoPrinted,
  type Received,
  type ShellProcess,
} from './support.js';

// What a new user does, from the README alone, through the files `npm start` runs (bin/visa-crm.js runs the CLI that
// scripts/bundle-cli.mjs linked into dist/cli/): the in-process app of the other suites once hid a 500 there.

const DEMO = JSON.parse(readFileSync(path.join(ROOT, 'definitions', 'demo-workspace.json'), 'utf8')) as {
  slug: string;
  name: string;
};
const PASSWORD = 'copper lantern orbits a quiet meadow';
const STEP_MS = 60_000;

interface Lead {
  id: string;
  full_name: string;
}

/** The README's two curl lines of "Start it": the one that creates a lead and the one that lists them. */
function startItCurls(): { create: string; list: string } {
  const curls = shellCommands(readmeSection('Start it')).filter((c) => c.startsWith('curl '));
  const create = curls.find((c) => c.includes('-X POST'));
  const list = curls.find((c) => !c.includes('-X '));
  if (!create || !list)
    throw new Error(`the README's "Start it" shows no POST and GET curl lines: ${curls.join('\n')}`);
  return { create, list };
}

/** The README's command run with `sh -c` in `folder`, its placeholders filled in; stdout parsed as JSON. */
async function runReadmeJson<T>(command: string, values: Record<string, string>, folder: string): Promise<T> {
  const result = await runShell(substitute(command, values), { cwd: folder, env: userEnv({}) });
  if (result.code !== 0) throw new Error(`${command} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** `node bin/visa-crm.js demo` started as a user starts it; resolves once it printed its keys. */
async function startDemo(owner: Test, env: NodeJS.ProcessEnv, folder: string) {
  const demo = startShell(owner, substitute('visa-crm demo', {}), { cwd: folder, env });
  await demo.line(/Stop with Ctrl-C\./, 90_000);
  await demo.line(/demo key/);
  return { process: demo, printed: demoPrinted(demo.output().stdout) };
}

/** Values for the README's placeholders while the demo runs. */
function placeholders(printed: DemoPrinted, key = printed.secretLive): Record<string, string> {
  return { '<secret live key>': key, 'http://127.0.0.1:3000': printed.url };
}

/** The delivery of `kind` whose data is the resource `id`, once it arrived. */
function deliveryOf(requests: readonly ReceivedRequest[], kind: string, id: string): ReceivedRequest | undefined {
  return requests.find(
    (r) => r.headers['x-service-event'] === kind && (JSON.parse(r.body) as { data: { id: string } }).data.id === id,
  );
}

/** Verifies a request's Standard Webhooks signature with the library receivers use; returns the envelope. */
function verified(secret: string, request: Received): { event: string; data: { id: string } } {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  }) as { event: string; data: { id: string } };
}

async function mainText(page: Page): Promise<string> {
  return (await page.textContent('main')) ?? '';
}

/** The one-time page's secret, after the form that made it was posted. */
async function oneTimeValue(page: Page): Promise<string> {
  await page.waitForSelector('#one-time-value');
  return ((await page.textContent('#one-time-value')) ?? '').trim();
}

async function signInWithPassword(page: Page, base: string, email: string): Promise<void> {
  await page.goto(`${base}/console/sign-in`);
  await page.fill('#f-email', email);
  await page.fill('#f-password', PASSWORD);
  await page.click('main button:has-text("Sign in")');
  // A member of one workspace lands on its Today page.
  await page.waitForURL(`${base}/console/w/${DEMO.slug}`);
}

t.test('the README, followed through the built tool: npm start to a restart', { skip: chromiumSkip() }, async (t) => {
  // A process the subtests start for the rest of the journey is stopped at its end, not theirs.
  const journey = t;
  t.setTimeout(170_000);
  const folder = journeyFolder(t);
  const dataDir = path.join(folder, 'data');
  // The command-line tool finds the running service's embedded PostgreSQL through its data folder.
  const cliEnv = userEnv({ DATA_DIR: dataDir });
  const port = await freePort();
  const pki = makeTestPki();
  t.teardown(() => pki.cleanup());
  const hooks = await TestReceiver.start(pki);
  t.teardown(() => hooks.close());
  // Loopback receivers are refused unless the test switch is on; the receiver's CA is trusted as the README says.
  const env = userEnv({
    DATA_DIR: dataDir,
    PORT: String(port),
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    NODE_EXTRA_CA_CERTS: pki.caFile,
  });
  const { create, list } = startItCurls();

  let demo: { process: ShellProcess; printed: DemoPrinted } = await startDemo(t, env, folder);
  const base = demo.printed.url;
  t.equal(base, `http://127.0.0.1:${port}`, 'the demo listens where PORT says');
  t.equal(demo.printed.owner, 'asha@northstar.example');
  t.ok(demo.printed.ownerLink, "it prints the owner's link to choose a password");

  const context = await launchChromium(t, { width: 1000 });
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_MS / 2);
  let consoleKey = '';
  let hookSecret = '';
  let lead: Lead = { id: '', full_name: '' };

  await t.test("the owner's link: choose a password, land on the console", async (t) => {
    const opened = await page.goto(demo.printed.ownerLink!);
    t.equal(opened?.status(), 200);
    t.match(await mainText(page), `Choose the password of your new account (${demo.printed.owner})`);
    await page.fill('#f-password', PASSWORD);
    await page.fill('#f-confirm', PASSWORD);
    await page.click('button:has-text("Set my password and join")');
    await page.waitForURL(`${base}/console?joined=${DEMO.slug}`);
    t.match(await mainText(page), `You joined ${DEMO.name} as owner.`);
  });

  await t.test('a secret live key made on the API keys page', async (t) => {
    await page.goto(`${base}/console/w/${DEMO.slug}/keys`);
    await page.fill('#f-name', 'Journey server');
    await page.selectOption('#f-type', 'secret');
    await page.selectOption('#f-mode', 'live');
    await page.click('button:has-text("Create key")');
    consoleKey = await oneTimeValue(page);
    t.match(consoleKey, /^key_live_[A-Za-z0-9]+$/);
  });

  await t.test('a webhook endpoint for lead.created at an HTTPS receiver, made on the Webhooks page', async (t) => {
    await page.goto(`${base}/console/w/${DEMO.slug}/webhooks/new`);
    await page.fill('#f-url', hooks.url());
    await page.check('#mode-live');
    await page.check('input[name="events"][value="lead.created"]');
    await page.click('button:has-text("Add the endpoint")');
    hookSecret = await oneTimeValue(page);
    t.match(hookSecret, /^whsec_/);
  });

  await t.test("the README's curl lines create a lead and list it; the console lists it too", async (t) => {
    const created = await runReadmeJson<{ id: string; duplicate: boolean; test_mode?: boolean }>(
      create,
      placeholders(demo.printed),
      folder,
    );
    t.same({ duplicate: created.duplicate, test_mode: created.test_mode }, { duplicate: false, test_mode: false });
    const listed = await runReadmeJson<{ data: Lead[] }>(list, placeholders(demo.printed), folder);
    lead = listed.data.find((l) => l.id === created.id)!;
    t.ok(lead, 'the list holds the new lead');
    await page.goto(`${base}/console/w/${DEMO.slug}/leads`);
    await page.click(`main a:has-text("${lead.full_name}")`);
    await page.waitForURL(`${base}/console/w/${DEMO.slug}/leads/${lead.id}`);
    t.match(await mainText(page), 'Timeline, newest first', "the lead's page opens from the list");
  });

  await t.test('the lead.created delivery arrives and verifies with standardwebhooks', async (t) => {
    const delivery = await waitFor(
      () => deliveryOf(hooks.requests, 'lead.created', lead.id),
      () => false,
      STEP_MS,
      () => `no lead.created delivery for ${lead.id}; received ${hooks.requests.length} request(s)`,
    );
    const envelope = verified(hookSecret, delivery);
    t.same([envelope.event, envelope.data.id], ['lead.created', lead.id]);
  });

  await t.test("visa-crm listen, as the README shows it, forwards a test key's lead", async (t) => {
    const receiver = await httpReceiver(t, 'localhost');
    const command = shellCommands(readmeSection('Receiving webhooks without losing an event')).find((c) =>
      c.includes('visa-crm listen'),
    )!;
    const listen = startShell(
      t,
      substitute(command, {
        'key_test_…': demo.printed.secretTest,
        'http://127.0.0.1:3000': base,
        'localhost:4000': `localhost:${receiver.port}`,
      }),
      // Its signing secret is kept in the folder's configuration, not the home of whoever runs the suite.
      { cwd: folder, env: userEnv({ VISA_CRM_CONFIG_DIR: path.join(folder, 'config') }) },
    );
    const secret = (await listen.line(/Signing secret for \S+: (whsec_\S+) /))[1]!;
    // The README: a test key does what the live one does, in the sandbox.
    const sandbox = await runReadmeJson<{ id: string; test_mode?: boolean }>(
      create,
      placeholders(demo.printed, demo.printed.secretTest),
      folder,
    );
    t.equal(sandbox.test_mode, true, 'the test key writes to the sandbox');
    const forwarded = await waitFor(
      () => receiver.received.find((r) => verified(secret, r).data.id === sandbox.id),
      () => listen.child.exitCode !== null,
      STEP_MS,
      () => `nothing forwarded for ${sandbox.id}: ${JSON.stringify(listen.output())}`,
    );
    t.equal(verified(secret, forwarded).event, 'lead.created');
    await listen.line(/ {2}lead\.created {2}\S+ {2}--> \S+ \[200\] /);
    t.equal(await listen.interrupt(), 0, 'Ctrl-C stops it cleanly');
    t.match(listen.output().stdout, /Stopped after forwarding \d+ events?; none pending\.\n$/);
  });

  await t.test('visa-crm export and audit verify, as the README shows them, agree on the head', async (t) => {
    const values = { acme: DEMO.slug };
    const run = (prefix: string, more: Record<string, string> = {}) =>
      runShell(substitute(inlineCommands(README, prefix)[0]!, { ...values, ...more }), { cwd: folder, env: cliEnv });
    const exported = await run('visa-crm export acme --gzip --out');
    t.equal(exported.code, 0, exported.stderr);
    const audit = await run('visa-crm audit verify acme');
    t.equal(audit.code, 0, audit.stderr);
    t.match(audit.stdout, /every chain verifies/);
    const head = (text: string) => /^ *head (\S+)$/m.exec(text)?.[1];
    t.ok(head(exported.stdout), `export prints a head: ${exported.stdout}`);
    t.equal(head(audit.stdout), head(exported.stdout), 'the head export prints is the head audit verify prints');
    const lines = gunzipSync(readFileSync(path.join(folder, `${DEMO.slug}.ndjson.gz`)))
      .toString()
      .trimEnd();
    t.match(lines, lead.id, "the export holds the lead's events");
    const anchored = await run('visa-crm audit verify acme --anchor', { "<that line's value>": head(audit.stdout)! });
    t.equal(anchored.code, 0, `nothing up to the head changed: ${anchored.stdout}${anchored.stderr}`);
  });

  await t.test('Ctrl-C, then a second start on the same folder: the lead, the keys and the password', async (t) => {
    t.equal(await demo.process.interrupt(), 0, 'the first start exits 0 on Ctrl-C');
    const before = demo.printed;
    demo = await startDemo(journey, env, folder);
    t.equal(demo.printed.ownerLink, undefined, 'no new link for an owner who has a password');
    t.match(demo.process.output().stdout, /Revoked the 4 demo key\(s\) of earlier starts/);
    const listed = await runReadmeJson<{ data: Lead[] }>(list, placeholders(demo.printed), folder);
    t.ok(
      listed.data.some((l) => l.id === lead.id),
      'the new live key lists the lead',
    );
    const revoked = await runReadmeJson<{ error?: string }>(list, placeholders(before), folder);
    t.equal(revoked.error, 'invalid_api_key', 'the earlier demo key is refused');
    const kept = await runReadmeJson<{ data: Lead[] }>(list, placeholders(demo.printed, consoleKey), folder);
    t.ok(
      kept.data.some((l) => l.id === lead.id),
      'the key made in the console outlives the restart',
    );

    await page.goto(`${base}/console/w/${DEMO.slug}/leads`);
    t.match(await mainText(page), lead.full_name, 'the console session and the lead outlive the restart');
    await page.click('details.member summary');
    await page.click('details.member button:has-text("Sign out")');
    await page.waitForURL(`${base}/console/sign-in`);
    await signInWithPassword(page, base, demo.printed.owner);
    await page.goto(`${base}/console/w/${DEMO.slug}/leads`);
    t.match(await mainText(page), lead.full_name, 'signed in again with the password chosen on the first start');
  });

  t.equal(await demo.process.interrupt(), 0, 'the second start exits 0 on Ctrl-C');
});
