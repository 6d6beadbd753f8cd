import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { applicationStream } from '../../domain/applications/index.js';
import { defineJobKind, type JobKind } from '../../jobs/kinds.js';
import { handleApplicationCommandIn } from '../applications/application-commands.js';
import { runCommand } from '../run-command.js';
import { allowedNow, jobContext } from './lead-actions.js';
import { refusalReason } from './refusal-reason.js';

/*
 * The bulk action on applications the permission table allows (applications.change): move each case to a stage,
 * through the same command step as the case's own stage form, one case per transaction, its item settled with it.
 */

export const APPLICATION_BULK_KINDS = { move: 'applications.move' } as const;

export const ApplicationMoveParams = Type.Object({ stage_key: Type.String() }, { additionalProperties: false });
const ApplicationItem = Type.Object(
  { application_id: Type.String({ format: 'uuid' }) },
  { additionalProperties: false },
);

export function applicationBulkKinds(
  services: Pick<AppServices, 'pool' | 'store' | 'now'>,
): JobKind<unknown, unknown>[] {
  const move = defineJobKind({
    kind: APPLICATION_BULK_KINDS.move,
    params: ApplicationMoveParams,
    input: ApplicationItem,
    run: async (job, item) => {
      await allowedNow(services, job, 'applications.change');
      const id = item.input.application_id;
      const context = jobContext(job, services.now());
      await runCommand(services.store, context, [applicationStream(id)], async (tx) => {
        if (!(await item.claim(tx.sql))) return;
        const handled = await handleApplicationCommandIn(tx, id, () => ({
          type: 'move_to_stage',
          stage: job.params.stage_key,
        }));
        await item.settle(
          tx.sql,
          handled.events.length > 0
            ? { outcome: 'done' }
            : { outcome: 'skipped', reason: 'Nothing was different, so nothing was changed.' },
        );
      });
    },
    refusalReason,
  });
  return [move] as JobKind<unknown, unknown>[];
}
