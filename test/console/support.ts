import type { Test } from 'tap';
import type { Config } from '../../src/config.js';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { seedWorkspace, startApp, type SeededWorkspace, type TestApp, type TestClock } from '../support/app.js';
import { everyRole } from '../identity/support.js';

export const PASSWORD = 'correct horse battery staple';

/** A browser-like client: keeps the session cookie, sends the console's own Origin, follows no redirect. */
export class ConsoleClient {
  cookie: string | undefined;
  readonly app: TestApp;
  constructor(app: TestApp) {
    this.app = app;
  }

  async get(path: string): Promise<{ status: number; text: string; headers: Headers }> {
    const response = await fetch(this.app.baseUrl + path, {
      redirect: 'manual',
      headers: this.cookie ? { cookie: this.cookie } : {},
    });
    this.keep(response);
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  async post(
    path: string,
    form: Record<string, string | string[]>,
    o: { origin?: string | null; csrf?: boolean } = {},
  ): Promise<{ status: number; text: string; headers: Headers }> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) body.append(k, one);
    if (o.csrf !== false && this.cookie && !('_csrf' in form)) body.set('_csrf', await this.csrf());
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (this.cookie) headers.cookie = this.cookie;
    if (o.origin !== null) headers.origin = o.origin ?? this.app.baseUrl;
    const response = await fetch(this.app.baseUrl + path, { method: 'POST', redirect: 'manual', headers, body });
    this.keep(response);
    return { status: response.status, text: await response.text(), headers: response.headers };
  }

  /** The CSRF token of the current session, as the account page's forms carry it. */
  async csrf(): Promise<string> {
    const page = await this.get('/console/account');
    if (page.status === 303 && page.headers.get('location') === '/console/passkeys/required') {
      // A session that owes a passkey reaches only that page, whose buttons carry the token.
      const step = await this.get('/console/passkeys/required');
      return /data-csrf="([^"]+)"|name="_csrf" value="([^"]+)"/.exec(step.text)?.slice(1).find(Boolean) ?? '';
    }
    return /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] ?? '';
  }

  async signIn(email: string, password = PASSWORD) {
    return this.post('/console/sign-in', { email, password }, { csrf: false });
  }

  private keep(response: Response): void {
    const set = response.headers.get('set-cookie');
    if (!set) return;
    const [pair] = set.split(';');
    this.cookie = pair!.endsWith('=') ? undefined : pair;
  }
}

/** An app with a workspace of every role, each member with PASSWORD. */
export async function consoleFixture(
  t: Test,
  options: { config?: Partial<Config>; clock?: TestClock } = {},
): Promise<{ app: TestApp; ws: SeededWorkspace; client: () => ConsoleClient }> {
  const config = { adminToken: 'operator-token-for-console-tests-0123456789', ...options.config };
  const app = await startApp(t, { config, now: options.clock?.now });
  const ws = await seedWorkspace(app, everyRole());
  for (const user of ws.workspace.settings.users) {
    const account = await ensureAccount(app.pool, user, app.services.now());
    await setPassword(app.pool, account.id, PASSWORD, app.services.now());
  }
  return { app, ws, client: () => new ConsoleClient(app) };
}

/** The secret a one-time page shows, after the POST that made it answered 303 to that page (src/console/one-time-secret.ts). */
export async function shownOnce(
  client: ConsoleClient,
  made: { status: number; headers: Headers },
): Promise<string | undefined> {
  const location = made.headers.get('location');
  if (made.status !== 303 || !location) return undefined;
  const shown = await client.get(location);
  return /id="one-time-value" tabindex="-1">([^<]+)</.exec(shown.text)?.[1];
}
