import t from 'tap';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

t.test('a personal access token: shown once at the top after a redirect, with its copy button', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('manager'));
  const posted = await c.post('/console/account/tokens', {
    workspace: f.ws.workspace.slug,
    name: 'Reports',
    days: '7',
  });
  t.equal(posted.status, 303, 'the POST answers with a redirect: a reload re-posts nothing');
  const at = posted.headers.get('location')!;
  const shown = await c.get(at);
  t.equal(shown.status, 200);
  const main = shown.text.slice(shown.text.indexOf('<main'));
  t.match(main, /^<main[^>]*>\s*<h1>Your new token<\/h1>\s*<section class="one-time"/, 'at the top of the page');
  const token = /id="one-time-value" tabindex="-1">([^<]+)</.exec(shown.text)?.[1];
  t.ok(token, 'the token is shown');
  t.match(shown.text, /<button type="button" data-copy="one-time-value" hidden>Copy<\/button>/);
  const api = await f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/webhooks`, {
    headers: { authorization: `Bearer ${token}` },
  });
  t.equal(api.status, 200, 'the token works on the admin interface');
  t.equal((await c.get(at)).status, 410, 'a reload shows it no more');

  const script = await c.get('/console/assets/one-time-secret.js');
  t.equal(script.status, 200);
  t.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
  t.match(script.text, /value\.focus\(\)/, 'the script moves focus to the secret');
  t.match(shown.headers.get('content-security-policy') ?? '', /script-src 'self'/);
});
