import type { Command } from 'commander';
import { announceAuthChange } from '../../keys/key-cache.js';
import { findAccountByEmail } from '../../identity/accounts.js';
import { resetPasskeysOf } from '../../identity/passkey-requirement.js';
import { withTransaction } from '../../storage/postgres.js';
import { withServices } from '../context.js';
import { CliError, output } from '../output.js';

/**
 * The operator's actions on a staff account as a whole, across its workspaces. A workspace resets passkeys only of
 * accounts that are its alone (src/identity/passkey-requirement.ts); one that belongs to several is reset here, by
 * the operator, after making sure the person asking is the account's.
 */
export function registerAccountVerbs(program: Command, json: () => boolean): void {
  const account = program.command('account').description('staff accounts as a whole (the operator’s actions)');

  account
    .command('reset-passkeys <email>')
    .description('remove every passkey of the account and end its sessions (it then registers a new one)')
    .action(async (email: string) => {
      const removed = await withServices(async (s) => {
        const found = await findAccountByEmail(s.pool, email);
        if (!found) throw new CliError(`No staff account has the email ${email}`);
        const count = await withTransaction(s.pool, (sql) => resetPasskeysOf(sql, found.email));
        await announceAuthChange(s.pool);
        return { email: found.email, count };
      });
      output(
        json(),
        { email: removed.email, passkeys_removed: removed.count },
        () =>
          `Removed ${removed.count} passkey(s) of ${removed.email} and ended its sessions: it signs in with its password and registers a new passkey.`,
      );
    });
}
