import t from 'tap';
import { DefinitionError, validateDefinition } from '../../src/workspaces/definition.js';
import { applyDefinition, findWorkspace, setWorkspaceTimeZone } from '../../src/workspaces/repository.js';
import { demoDefinition, startApp } from '../support/app.js';

t.test("a definition's time zone: an IANA name Intl knows, else refused by name", async (t) => {
  t.equal(validateDefinition({ ...demoDefinition(), time_zone: 'Asia/Kolkata' }).time_zone, 'Asia/Kolkata');
  t.equal(validateDefinition(demoDefinition()).time_zone, undefined, 'optional');
  for (const zone of ['Mars/Olympus', 'IST', '']) {
    const error = (() => {
      try {
        validateDefinition({ ...demoDefinition(), time_zone: zone });
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    t.ok(error instanceof DefinitionError, `${JSON.stringify(zone)} refused`);
    t.match((error as DefinitionError).problems.join('\n'), /^time_zone: /m, 'the problem names the field');
  }
});

t.test('a file without a time zone keeps the one set in the console; a file with one sets it', async (t) => {
  const app = await startApp(t);
  const def = demoDefinition();
  const { workspace } = await applyDefinition(app.pool, def, app.services.secretBox);
  t.equal(workspace.settings.time_zone, undefined, 'UTC until set (none stored)');
  const revision = (await setWorkspaceTimeZone(app.pool, workspace.id, 'Europe/London'))!.revision;
  t.ok(revision > workspace.revision, 'the revision moves, so cached settings are read again');
  await applyDefinition(app.pool, { ...def, name: 'Renamed' }, app.services.secretBox);
  t.equal((await findWorkspace(app.pool, workspace.id))!.settings.time_zone, 'Europe/London', 'kept');
  await applyDefinition(app.pool, { ...def, time_zone: 'Asia/Dubai' }, app.services.secretBox);
  t.equal((await findWorkspace(app.pool, workspace.id))!.settings.time_zone, 'Asia/Dubai', 'set by the file');
});
