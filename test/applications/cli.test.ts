import t from 'tap';
import { runCli } from '../support/cli.js';
import type { AdminApplication } from '../../src/schemas/application.js';
import { appFixture } from './support.js';

t.test(
  'the CLI works on cases with the same commands, and prints the full history in order with who and when',
  async (t) => {
    const f = await appFixture(t);
    const cli = (...args: string[]) => runCli(f.app.services.config.databaseUrl!, args, { RUN_WORKERS: 'false' });
    const slug = f.ws.workspace.slug;
    const leadId = await f.lead();

    const converted = await cli('--json', 'application', 'convert', slug, leadId, '--as', 'vikram@northstar.example');
    t.equal(converted.code, 0, converted.stderr);
    const view = JSON.parse(converted.stdout) as AdminApplication;
    t.match(view, { case_ref: 'APP-1', lead_id: leadId, stage: { key: 'profile' } });

    const updated = await cli(
      '--json',
      'application',
      'module-state',
      slug,
      view.id,
      'profile_review',
      'updated',
      '--as',
      'vikram@northstar.example',
    );
    t.equal(updated.code, 0, updated.stderr);
    t.match(JSON.parse(updated.stdout), { stage: { key: 'documents' }, progress: 25 });
    const added = await cli(
      '--json',
      'application',
      'module-add',
      slug,
      view.id,
      'Medical exam',
      '--before',
      'documents',
      '--stages',
      'documents',
      '--as',
      'vikram@northstar.example',
    );
    t.match(JSON.parse(added.stdout), { current_module: { key: 'custom_medical_exam' } });
    // Another staff member, through the admin interface.
    t.equal(
      (
        await f.admin(`/applications/${view.id}/outcome`, {
          method: 'POST',
          json: { outcome: 'granted' },
          user: 'meera@northstar.example',
        })
      ).status,
      200,
    );

    const shown = await cli('application', 'show', slug, view.id);
    t.match(shown.stdout, /^APP-1 {2}\(/);
    t.match(
      shown.stdout,
      /custom_medical_exam +Medical exam +on +pending +custom/,
      'the roadmap table lists every module',
    );
    t.match(shown.stdout, /sop +Statement of purpose +off +pending +optional/);

    const refused = await cli(
      'application',
      'module-state',
      slug,
      view.id,
      'sop',
      'updated',
      '--as',
      'vikram@northstar.example',
    );
    t.equal(refused.code, 2);
    t.match(refused.stderr, /module_not_selected/);
    const stranger = await cli('application', 'status', slug, view.id, 'closed', '--as', 'nobody@example.org');
    t.equal(stranger.code, 2, 'only active users of the workspace can act');

    const history = await cli('--json', 'history', 'application', view.id);
    t.equal(history.code, 0, history.stderr);
    const entries = JSON.parse(history.stdout) as {
      revision: number;
      type: string;
      at: string;
      actor: { email?: string };
      summary: string;
    }[];
    t.same(
      entries.map((e) => e.revision),
      entries.map((_, i) => i),
      'every event, in order',
    );
    t.same(
      entries.map((e) => [e.type, e.actor.email]),
      [
        ['application.opened', 'vikram@northstar.example'],
        ['application.stage_changed', 'vikram@northstar.example'],
        ['application.module_updated', 'vikram@northstar.example'],
        ['application.stage_changed', 'vikram@northstar.example'],
        ['application.module_updated', 'vikram@northstar.example'],
        ['application.outcome', 'meera@northstar.example'],
      ],
    );
    t.ok(
      entries.every((e) => /^\d{4}-\d\d-\d\dT/.test(e.at)),
      'each with its time',
    );
    t.match(
      entries[3]!.summary,
      /Stage Profile → Documents \(forward, after module updates\)/,
      'stages by their names',
    );

    const text = await cli('history', 'application', view.id);
    const lines = text.stdout.split('\n');
    t.match(lines[0], new RegExp(`History of application ${view.id}`));
    t.match(
      text.stdout,
      /application\.opened {2}by Vikram Singh <vikram@northstar\.example>\n {4}Opened APP-1 from its lead,/,
    );
    t.match(
      text.stdout,
      /application\.outcome {2}by Meera Iyer <meera@northstar\.example>\n {4}Outcome recorded: granted/,
    );
    t.ok(text.stdout.indexOf('application.opened') < text.stdout.indexOf('application.outcome'), 'oldest first');

    const leadHistory = await cli('--json', 'history', 'lead', leadId);
    t.equal(leadHistory.code, 0, leadHistory.stderr);
    const leadEntries = JSON.parse(leadHistory.stdout) as { type: string; actor: { type: string; email?: string } }[];
    t.equal(leadEntries[0]!.actor.type, 'key', 'the lead was created by an API key');
    t.match(leadEntries[leadEntries.length - 1], {
      type: 'lead.converted',
      actor: { type: 'user', email: 'vikram@northstar.example' },
    });
    const leadText = await cli('history', 'lead', leadId);
    t.match(leadText.stdout, /lead\.converted {2}by Vikram Singh/);

    const missing = await cli('history', 'application', '00000000-0000-4000-8000-000000000000');
    t.equal(missing.code, 2);
    t.match(missing.stderr, /No application/);
  },
);
