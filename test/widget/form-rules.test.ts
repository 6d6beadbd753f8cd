import t from 'tap';
import { LeadCreate } from '../../src/schemas/lead.js';
import { customValueProblem } from '../../src/domain/leads/custom-fields.js';
import { normaliseEmail } from '../../src/domain/leads/email.js';
import { spamReason } from '../../src/intake/spam.js';
import { CUSTOM_TEXT_MAX_LENGTH, EMAIL_PATTERN, LINK_PATTERN, clientRules } from '../../src/widget/rules.js';

t.test("the form's rules are the server's", async (t) => {
  await t.test('limits are read from the LeadCreate schema', async (t) => {
    const rules = clientRules(LeadCreate);
    t.same(rules.fields.full_name, { minLength: 1, maxLength: 120 });
    t.same(rules.fields.phone, { maxLength: 32 });
    t.same(rules.fields.course, { maxLength: 200 });
    t.same(rules.fields.score_percent, { minimum: 0, maximum: 100 });
    t.same(rules.fields.previous_refusals, { minimum: 0, maximum: 20, integer: true });
    t.equal(rules.fields.intake!.pattern, '^[0-9]{4}-(0[1-9]|1[0-2])$');
    t.equal(rules.utmMaxLength, 200);
  });

  await t.test('the email pattern accepts exactly what the server accepts', async (t) => {
    const pattern = new RegExp(EMAIL_PATTERN);
    const samples = [
      'riya@example.org',
      'Riya.Sharma+visa@mail.example.co.in',
      "o'brien@example.ie",
      'a@b.co',
      'x_y-z@sub-domain.example.com',
      'riya@example',
      'riya@@example.org',
      '.riya@example.org',
      'riya.@example.org',
      'ri..ya@example.org',
      'riya@example.c',
      'riya@-example.org',
      'riya@example-.org',
      'riya example@x.org',
      'riya@exa_mple.org',
      `${'a'.repeat(65)}@example.org`,
      `a@${'b'.repeat(250)}.org`,
      'riya@example.org1',
      'riya@xn--80ak6aa92e.com',
      '"quoted"@example.org',
      'riya@[127.0.0.1]',
    ];
    for (const sample of samples) t.equal(pattern.test(sample), normaliseEmail(sample) !== undefined, sample);
  });

  await t.test('text custom fields have the same maximum length', async (t) => {
    const field = { key: 'note', label: 'Note', type: 'text' as const };
    t.equal(customValueProblem(field, 'x'.repeat(CUSTOM_TEXT_MAX_LENGTH)), undefined);
    t.type(customValueProblem(field, 'x'.repeat(CUSTOM_TEXT_MAX_LENGTH + 1)), 'string');
  });

  await t.test('the spam rules a person can trip are the same', async (t) => {
    const { maxMessageLinks } = clientRules(LeadCreate);
    const clientSays = (fullName: string, message: string) =>
      new RegExp(LINK_PATTERN, 'i').test(fullName)
        ? 'link_in_name'
        : (message.match(new RegExp(LINK_PATTERN, 'gi'))?.length ?? 0) > maxMessageLinks
          ? 'links_in_message'
          : undefined;
    const cases: Array<[string, string]> = [
      ['Riya Sharma', 'Hello'],
      ['Riya www.cheap.example', ''],
      ['Riya HTTPS://x.example', ''],
      ['Riya Sharma', 'see http://a.example http://b.example https://c.example'],
      ['Riya Sharma', 'see http://a.example http://b.example https://c.example WWW.d.example'],
      ['Wwwendy', 'http:/not-a-link'],
    ];
    for (const [full_name, message] of cases)
      t.equal(
        clientSays(full_name, message),
        spamReason({ full_name, message, website: '' }),
        `${full_name} / ${message}`,
      );
  });
});
