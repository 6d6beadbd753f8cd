import t from 'tap';
import { DefinitionError, validateDefinition } from '../../src/workspaces/definition.js';
import { demoDefinition } from '../support/app.js';

t.test('the demo definition is valid', async (t) => {
  t.ok(validateDefinition(demoDefinition()));
});

t.test('every problem of a definition is named in one error', async (t) => {
  const def = demoDefinition() as unknown as Record<string, unknown>;
  const broken = {
    ...def,
    plan: 'platinum',
    extra: true,
    branches: [
      { code: 'DEL', name: 'Delhi' },
      { code: 'DEL', name: 'Again' },
    ],
  };
  const error = t.throws(() => validateDefinition(broken)) as unknown as DefinitionError;
  t.type(error, DefinitionError);
  t.match(error.problems.join('\n'), /plan/, 'names the bad plan');
  t.match(error.problems.join('\n'), /extra/, 'names the unknown property');
});

t.test('cross-references are checked', async (t) => {
  const base = demoDefinition();
  const error = t.throws(() =>
    validateDefinition({
      ...base,
      users: [{ name: 'X', email: 'x@example.com', role: 'counsellor', branch: 'NOPE' }],
      pipeline: {
        stages: [
          { key: 'new', name: 'New' },
          { key: 'converted', name: 'Converted' },
        ],
      },
      widget: { ...base.widget, captcha: { provider: 'turnstile', site_key: null } },
    }),
  ) as unknown as DefinitionError;
  const text = error.problems.join('\n');
  t.match(text, /users\.0\.branch: no branch has the code NOPE/);
  t.match(text, /at least one active owner/);
  t.match(text, /the key converted is reserved/);
  t.match(text, /exactly one stage must be marked lost/);
  t.match(text, /turnstile provider needs a site key/);
});
