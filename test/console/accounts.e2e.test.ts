import t from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { memberOf } from '../identity/support.js';
import { seedWorkspace } from '../support/app.js';
import { accessible } from '../support/accessibility.js';
import { chromiumSkip, launchChromium } from '../support/chromium.js';
import { consoleFixture } from './support.js';

const BOB = 'bob@bobs-visas.example';
const BOB_PASSWORD = 'bob keeps his own password';

t.test(
  'staff accounts in headless Chromium: joining a second workspace, and passkeys required',
  { skip: chromiumSkip() },
  async (t) => {
    t.setTimeout(240_000);
    const f = await consoleFixture(t);
    await seedWorkspace(f.app, {
      slug: 'bobs-visas',
      name: 'Bob’s Visas',
      users: [{ name: 'Bob', email: BOB, role: 'owner', branch: 'DEL' }],
    });
    const bob = await ensureAccount(f.app.pool, { email: BOB, name: 'Bob' }, f.app.services.now());
    await setPassword(f.app.pool, bob.id, BOB_PASSWORD, f.app.services.now());
    const members = `/console/w/${f.ws.workspace.slug}/members`;
    const admin = f.client();
    await admin.signIn(memberOf('admin'));
    t.equal((await admin.post(`${members}/invite`, { name: 'Bob', email: BOB, role: 'viewer' })).status, 303);

    // A passkey belongs to a host name, never to an IP address.
    const base = f.app.baseUrl.replace('127.0.0.1', 'localhost');
    const context = await launchChromium(t, { width: 1000 });
    const page = await context.newPage();
    const signInWithPassword = async () => {
      await page.goto(`${base}/console/sign-in`);
      await page.fill('#f-email', BOB);
      await page.fill('#f-password', BOB_PASSWORD);
      await page.click('button:has-text("Sign in")');
    };

    await t.test('Bob signs in as himself and accepts the invitation to a second workspace', async (t) => {
      await signInWithPassword();
      await page.waitForURL(`${base}/console`);
      t.match(await page.textContent('main'), `Join ${f.ws.workspace.name} as viewer?`);
      await accessible(t, page, 'workspaces with an invitation');
      await page.click('button:has-text("Accept")');
      await page.waitForURL(/\/console\?joined=/);
      const main = (await page.textContent('main'))!;
      t.match(main, `You joined ${f.ws.workspace.name} as viewer.`);
      t.match(main, 'Bob’s Visas', 'his own workspace as before');
      await accessible(t, page, 'workspaces after joining');
      await page.goto(`${base}${members}`);
      t.match(await page.textContent('main'), `Members of ${f.ws.workspace.name}`);
      t.notOk(await page.isVisible('text=Change role'), 'a viewer is offered no change');
      await accessible(t, page, 'members as a viewer');
    });

    await t.test('the workspace requires passkeys: Bob registers one, then signs in with it', async (t) => {
      const owner = f.client();
      await owner.signIn(memberOf('owner'));
      t.equal((await owner.post(`${members}/passkeys-required`, { passkeys_required: 'everyone' })).status, 303);

      await page.goto(`${base}${members}`);
      await page.waitForURL(`${base}/console/passkeys/required`);
      t.match(await page.textContent('main'), 'Register one now to go on');
      await accessible(t, page, 'passkey required');
      const cdp = await context.newCDPSession(page);
      await cdp.send('WebAuthn.enable');
      await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
        },
      });
      await page.click('#add-passkey');
      await page.waitForURL(`${base}/console`);
      await page.goto(`${base}${members}`);
      t.match(await page.textContent('main'), `Members of ${f.ws.workspace.name}`, 'the workspace opens');

      // A password alone is not enough now: the next sign-in confirms with the passkey.
      await page.click('details.member summary'); // sign out sits in the member's menu in the header
      await page.click('details.member button:has-text("Sign out")');
      await page.waitForURL(`${base}/console/sign-in`);
      await signInWithPassword();
      await page.waitForURL(`${base}/console/passkeys/required`);
      t.match(await page.textContent('main'), 'Use one of your passkeys to go on');
      t.notOk(await page.isVisible('#add-passkey'), 'no new passkey from a password session');
      await accessible(t, page, 'passkey confirmation required');
      await page.click('#passkey-confirm');
      await page.waitForURL(`${base}/console`);

      await page.click('details.member summary'); // sign out sits in the member's menu in the header
      await page.click('details.member button:has-text("Sign out")');
      await page.waitForURL(`${base}/console/sign-in`);
      await page.click('#passkey-sign-in');
      await page.waitForURL(`${base}/console`);
      await page.goto(`${base}${members}`);
      t.match(
        await page.textContent('main'),
        `Members of ${f.ws.workspace.name}`,
        'a passkey sign-in goes straight in',
      );
    });
  },
);
